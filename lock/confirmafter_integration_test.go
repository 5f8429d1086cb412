package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// TestIntegrationShortHandedOverHoldIsNotConfirmed: against the real API
// server, a hold handed over and released within its confirmation delay
// (lock.DefaultConfirmAfter) writes nothing but its release, on the
// hand-over's version; a hold that runs longer is confirmed by itself once
// the delay has passed, without anyone waiting for it
// (docs/adr/0079-confirm-after-a-second.md).
func TestIntegrationShortHandedOverHoldIsNotConfirmed(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	client := func() (*lock.Client, kube.Interface) {
		cs, err := kube.NewForConfig(rest.CopyConfig(env.RESTConfig))
		require.NoError(t, err)
		return lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{}), cs
	}
	first, cs := client()
	req := func(repo string) lock.Request {
		return lock.Request{Target: "staging", Identity: lock.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: "1"}, Policy: lock.PolicyFIFO, TTL: time.Minute}
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	a, err := first.Acquire(ctx, req("a"))
	require.NoError(t, err)

	// b and c wait behind a, in that order.
	waiting := func(repo string, queued int) (*lock.Client, <-chan *lock.Held) {
		l, _ := client()
		got := make(chan *lock.Held, 1)
		go func() {
			h, err := l.Acquire(ctx, req(repo))
			assert.NoError(t, err, repo)
			got <- h
		}()
		require.Eventually(t, func() bool {
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, lock.Name("staging"), metav1.GetOptions{})
			require.NoError(t, err)
			rec, err := lock.Decode(cm)
			require.NoError(t, err)
			return len(rec.Waiters) == queued
		}, waitTimeout, 10*time.Millisecond, "%s queued", repo)
		return l, got
	}
	bClient, bHeld := waiting("b", 1)
	cClient, cHeld := waiting("c", 2)

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, lock.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cm.Name).String(),
		ResourceVersion: cm.ResourceVersion,
	})
	require.NoError(t, err)
	defer w.Stop()

	_, err = first.ReleaseHeld(ctx, a, lock.ReleaseOptions{})
	require.NoError(t, err)
	b := <-bHeld
	require.True(t, b.Holder.HandedOver, "b holds from the hand-over")
	time.Sleep(50 * time.Millisecond) // a short hold
	_, err = bClient.ReleaseHeld(ctx, b, lock.ReleaseOptions{})
	require.NoError(t, err)
	c := <-cHeld
	require.True(t, c.Holder.HandedOver, "c holds from b's hand-over")

	// What the lock went through: a's hand-over to b, b's to c, and no
	// confirmation by b between them.
	var holders []string
	for len(holders) < 2 {
		select {
		case ev := <-w.ResultChan():
			got, ok := ev.Object.(*corev1.ConfigMap)
			require.True(t, ok, "%v", ev.Object)
			rec, err := lock.Decode(got)
			require.NoError(t, err)
			holders = append(holders, rec.Holder.Repo+handedMark(rec.Holder.HandedOver))
		case <-ctx.Done():
			t.Fatalf("the watch brought %v", holders)
		}
	}
	assert.Equal(t, []string{"b (handed over)", "c (handed over)"}, holders, "b's short hold wrote only its release")

	// c holds on, nobody waiting for its confirmation: it comes by itself.
	require.Eventually(t, func() bool {
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, lock.Name("staging"), metav1.GetOptions{})
		require.NoError(t, err)
		rec, err := lock.Decode(cm)
		require.NoError(t, err)
		return rec.Holder.Repo == "c" && !rec.Holder.HandedOver
	}, waitTimeout, 50*time.Millisecond, "c confirmed once its confirmation was due")
	_, err = cClient.ReleaseHeld(ctx, c, lock.ReleaseOptions{})
	require.NoError(t, err)
}

func handedMark(handed bool) string {
	if handed {
		return " (handed over)"
	}
	return ""
}
