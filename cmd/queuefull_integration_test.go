package cmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationAcquireFullQueue: on the real API server, a lock whose
// queue of builds with identities of the longest length has filled its
// record up to lock.MaxQueueBytes refuses one more contender with exit 4,
// an error line that says the queue is full and a hint, writing nothing;
// then the holder and the waiters release one after the other, every
// hand-over adding a history entry, and every one of those writes is
// stored.
func TestIntegrationAcquireFullQueue(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const target = "production"
	now := time.Now()
	pad := func(prefix string, i int) string {
		s := fmt.Sprintf("%s-%d-", prefix, i)
		return s + strings.Repeat("x", record.MaxIdentityFieldLen-len(s))
	}
	claim := func(i int, expires time.Time) record.Claim {
		return record.Claim{
			Identity: record.Identity{Owner: pad("owner", i), Repo: pad("repo", i), Branch: pad("branch", i), Build: "1"},
			ClaimID:  fmt.Sprintf("claim-%d", i),
			Since:    metav1.NewMicroTime(now),
			Expires:  ptrMicro(expires),
		}
	}
	rec := record.Record{Version: record.RecordVersion, Target: target, Policy: record.PolicyFIFO, Holder: claim(0, now.Add(time.Hour)), Updated: metav1.NewMicroTime(now)}
	one, err := json.Marshal(claim(1, now))
	require.NoError(t, err)
	base, err := json.Marshal(rec)
	require.NoError(t, err)
	for i := range (record.MaxQueueBytes - 512 - len(base)) / (len(one) + 1) {
		rec.Waiters = append(rec.Waiters, claim(i+1, now.Add(time.Hour)))
	}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	require.LessOrEqual(t, len(raw), record.MaxQueueBytes)
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name(target), Namespace: ns,
		Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
		Annotations: map[string]string{record.RecordAnnotation: string(raw)},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	late := []string{"acquire", target, "--lock-namespace", ns, "--timeout", "1m", "--policy", "fifo",
		"--owner", pad("owner", 9999), "--repo", pad("repo", 9999), "--branch", pad("branch", 9999), "--build", "1"}
	_, errOut, code := lockctlIn(t, env, ns, late...)
	assert.Equal(t, cmdutil.CodeTimeout, code, "exit status; stderr:\n%s", errOut)
	assert.Contains(t, errOut, fmt.Sprintf("its queue is full: %d waiting", len(rec.Waiters)), "the error line")
	assert.Contains(t, errOut, "hint: see the queue with `lockctl status production`", "the hint")
	after, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, cm.ResourceVersion, after.ResourceVersion, "nothing written")

	// The queue drains: each release hands the lock over and writes a
	// history entry. At the longest identities the record reaches its
	// size before the history is full: the oldest holds go, never the
	// newest lock.KeptHistory, and no write is refused.
	for i := range record.MaxHistory + 2 {
		id := claim(i, now).Identity
		_, errOut, code := lockctlIn(t, env, ns, "release", target, "--lock-namespace", ns,
			"--owner", id.Owner, "--repo", id.Repo, "--branch", id.Branch, "--build", id.Build)
		require.Equal(t, cmdutil.CodeOK, code, "release %d: %s", i, errOut)
	}
	after, err = env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	require.NoError(t, err)
	got, err := record.Decode(after)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(got.History), record.KeptHistory)
	assert.LessOrEqual(t, len(got.History), record.MaxHistory)
	assert.Equal(t, claim(record.MaxHistory+2, now).ClaimID, got.Holder.ClaimID)
}
