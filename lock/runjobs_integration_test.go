package lock_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/runjobs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/lock/record"
)

// runRequest is the request of a lockctl run of repo#build whose jobs live
// in namespace jobs; its release says its job ended and nothing was left
// behind (runjobs.Keeper.Done).
func runRequest(repo string, build int, jobs string, submits bool) lock.Request {
	return lock.Request{
		Target: "staging", Identity: clitest.Identity(repo, build), TTL: time.Minute, Cancelable: true,
		Ledger: &runjobs.Keeper{Namespace: jobs, SubmitsJob: submits, Done: true},
	}
}

// runJobsOf reads the lock's account of run jobs and whether its holder
// keeps it.
func runJobsOf(t *testing.T, c kubernetes.Interface, ns string) (bool, *runjobs.Account) {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	rj, err := runjobs.Decode(rec.Ledger)
	require.NoError(t, err)
	return rec.Holder.LedgerKept, rj
}

// cleanRun takes the lock as a run of repo#build would, and releases it
// saying its job ended and nothing was left behind (runRequest).
func cleanRun(t *testing.T, l *lock.Client, repo string, build int, jobs string) {
	t.Helper()
	h := mustAcquire(t, l, runRequest(repo, build, jobs, true))
	_, err := l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
	require.NoError(t, err)
}

// olderTakes plays a lockctl before record version 1.7 taking the lock:
// it keeps the fields it does not know (runJobs) and writes a holder of
// its own, which has no runJobsKept, with a compare-and-swap.
func olderTakes(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	require.Contains(t, rec, "runJobs", "the account is there to be kept")
	now := time.Now().UTC()
	rec["holder"] = map[string]any{
		"owner": "acme", "repo": "old", "branch": "main", "build": "1", "session": "older",
		"since":   now.Format("2006-01-02T15:04:05.000000Z07:00"),
		"expires": now.Add(-time.Second).Format("2006-01-02T15:04:05.000000Z07:00"), "ttl": "30s",
		"cancelable": true,
	}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[record.RecordAnnotation] = string(raw)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err, "the older writer's compare-and-swap")
}

// TestIntegrationRunJobsAccount: the account of run jobs (record 1.7) on
// the real API server. A run's take marks its job namespace and its clean
// release removes the mark, after which the next run is vouched for and
// takes and releases a kept lock in one read (beside the freeze windows')
// and two writes; re-entered holds, lockctl acquire, an older lockctl and
// a deleted lock each make the next run look.
func TestIntegrationRunJobsAccount(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)

	t.Run("mark added and removed; the next run is vouched for", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		l := newClient(t, env.Kube, ns)
		h := mustAcquire(t, l, runRequest("web", 1, "ci", true))
		assert.False(t, h.Vouched, "a new lock vouches for nothing")
		kept, rj := runJobsOf(t, env.Client, ns)
		assert.True(t, kept, "a run's hold keeps the account")
		require.NotNil(t, rj)
		assert.Equal(t, []runjobs.Mark{{Namespace: "ci", ClaimID: h.ClaimID}}, rj.Pending, "the take marked the job namespace")

		_, err := l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
		require.NoError(t, err)
		kept, rj = runJobsOf(t, env.Client, ns)
		assert.True(t, kept, "the free lock keeps the account")
		require.NotNil(t, rj)
		assert.Empty(t, rj.Pending, "the release removed the mark")
		assert.Equal(t, []string{"ci"}, rj.Swept)

		// A new process: its client has not loaded the freeze windows.
		cfg := rest.CopyConfig(env.RESTConfig)
		counted := testenv.RecordRequests(cfg)
		cs, err := kube.NewForConfig(cfg)
		require.NoError(t, err)
		next := newClient(t, cs, ns)
		looked := 0
		req := runRequest("api", 1, "ci", false)
		req.Callbacks.OnTaking = func() { looked++ }
		h2 := mustAcquire(t, next, req)
		assert.True(t, h2.Vouched, "the record vouches: nothing left behind in ci")
		assert.Zero(t, looked, "OnTaking is not called: no look")
		_, err = next.ReleaseHeld(t.Context(), h2, lock.ReleaseOptions{})
		require.NoError(t, err)
		reqs := counted.Take()
		require.Len(t, reqs, 4, "the lock and the windows read, the take, the release: %v", reqs)
		assert.ElementsMatch(t, []string{"GET", "GET"}, testenv.Verbs(reqs[:2]), "%v", reqs)
		assert.Equal(t, []string{"PUT", "PUT"}, testenv.Verbs(reqs[2:]), "%v", reqs)

		h3 := mustAcquire(t, l, runRequest("api", 2, "dev", false))
		assert.False(t, h3.Vouched, "another job namespace is not vouched for")
	})

	t.Run("a re-entered hold's job keeps its namespace marked", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		l := newClient(t, env.Kube, ns)
		cleanRun(t, l, "web", 1, "ci")
		holder := mustAcquire(t, l, runRequest("web", 2, "ci", false))
		assert.True(t, holder.Vouched, "vouched for")

		again := mustAcquire(t, l, runRequest("web", 2, "ci", true))
		require.True(t, again.Reentered, "the same build re-enters the hold")
		assert.True(t, again.Vouched, "vouched for")
		kept, rj := runJobsOf(t, env.Client, ns)
		assert.True(t, kept)
		require.NotNil(t, rj)
		require.Len(t, rj.Pending, 1, "the re-entered run's job marked with a write of its own")
		assert.NotEqual(t, holder.ClaimID, rj.Pending[0].ClaimID, "under the re-entered run's own claim")

		// The re-entered run dies with its job running; the holder ends
		// cleanly.
		_, err := l.ReleaseHeld(t.Context(), holder, lock.ReleaseOptions{})
		require.NoError(t, err)
		_, rj = runJobsOf(t, env.Client, ns)
		require.NotNil(t, rj)
		assert.Len(t, rj.Pending, 1, "the re-entered run's mark stays")
		assert.NotContains(t, rj.Swept, "ci", "ci is not swept while a mark is pending there")
		h := mustAcquire(t, l, runRequest("api", 1, "ci", false))
		assert.False(t, h.Vouched, "the next run looks")
		_, err = l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
		require.NoError(t, err)
		_, rj = runJobsOf(t, env.Client, ns)
		assert.Equal(t, &runjobs.Account{Swept: []string{"ci"}}, rj, "its look covered the dead run's mark")
	})

	t.Run("a hold by lockctl acquire makes the next run look", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		l := newClient(t, env.Kube, ns)
		cleanRun(t, l, "web", 1, "ci")
		mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 1), TTL: time.Minute})
		kept, rj := runJobsOf(t, env.Client, ns)
		assert.False(t, kept, "acquire does not keep the account")
		assert.Nil(t, rj, "and drops what it cannot vouch for")
		_, err := l.Release(t.Context(), "staging", clitest.Identity("api", 1), lock.ReleaseOptions{})
		require.NoError(t, err)

		h := mustAcquire(t, l, runRequest("web", 2, "ci", false))
		assert.False(t, h.Vouched, "no trust across a hold that did not keep the account")
		_, err = l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
		require.NoError(t, err)
		h = mustAcquire(t, l, runRequest("web", 3, "ci", false))
		assert.True(t, h.Vouched, "the look after it vouches again")
	})

	t.Run("a hold by an older lockctl makes the next run look", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		l := newClient(t, env.Kube, ns)
		cleanRun(t, l, "web", 1, "ci")
		olderTakes(t, env.Client, ns)
		kept, rj := runJobsOf(t, env.Client, ns)
		assert.False(t, kept, "the older holder does not keep the account")
		assert.Equal(t, &runjobs.Account{Swept: []string{"ci"}}, rj, "though the field is kept as it was")

		h := mustAcquire(t, l, runRequest("web", 2, "ci", false))
		assert.False(t, h.Vouched, "the account is void once an older lockctl held the lock")
		kept, rj = runJobsOf(t, env.Client, ns)
		assert.True(t, kept)
		assert.Equal(t, []runjobs.Mark{{Namespace: "ci", ClaimID: h.ClaimID}}, rj.Pending, "a new account: marked until it has looked")
		assert.Empty(t, rj.Swept, "the void account dropped")
	})

	t.Run("a deleted and re-created lock makes the next run look", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		l := newClient(t, env.Kube, ns)
		cleanRun(t, l, "web", 1, "ci")
		require.NoError(t, env.Client.CoreV1().ConfigMaps(ns).Delete(t.Context(), record.Name("staging"), metav1.DeleteOptions{}))
		h := mustAcquire(t, l, runRequest("web", 2, "ci", false))
		assert.False(t, h.Vouched, "a new lock vouches for nothing")
	})
}
