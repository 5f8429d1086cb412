package dashboard_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// regularHolds gives target's lock a history of n holds of hold each,
// ending before now, and a holder that took it heldFor ago: a client
// whose clock is a fake one stamps the record, so no test waits for the
// holds to pass. The holder is acme/web@main#<n+1>.
func regularHolds(t *testing.T, core kube.CoreV1Interface, ns, target string, n int, hold, heldFor time.Duration) {
	t.Helper()
	ctx := t.Context()
	now := time.Now()
	clk := testingclock.NewFakeClock(now.Add(-time.Duration(n+1) * (hold + time.Minute)))
	l := lock.New(core, core, ns, clk, lock.Options{})
	req := func(build int) lock.Request {
		return lock.Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: fmt.Sprint(build)},
			ClaimID: fmt.Sprintf("%s-%d", target, build), TTL: 2 * time.Hour}
	}
	for i := 1; i <= n; i++ {
		_, p, err := l.TryAcquire(ctx, req(i))
		require.NoError(t, err)
		require.Nil(t, p, "hold %d of %s's history is taken at once", i, target)
		clk.Step(hold)
		_, err = l.Release(ctx, target, req(i).Identity, lock.ReleaseOptions{})
		require.NoError(t, err)
		clk.Step(time.Minute)
	}
	clk.SetTime(now.Add(-heldFor))
	_, p, err := l.TryAcquire(ctx, req(n+1))
	require.NoError(t, err)
	require.Nil(t, p, "the holder of %s takes it at once", target)
}
