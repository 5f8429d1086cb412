package e2e

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/run"
	"github.com/lockctl/lockctl/runjobs"
)

// runJobsOf reads the account of run jobs of target's lock, and whether
// its holder keeps it.
func runJobsOf(t *testing.T, c *cli, target string) (bool, *runjobs.Account) {
	t.Helper()
	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	rj, err := runjobs.Decode(rec.Ledger)
	require.NoError(t, err)
	return rec.Holder.LedgerKept, rj
}

// plantLeftBehind writes the record of a job left behind by a run that
// held the lock of another target, which is gone: any run that looks in
// the job namespace aborts it, and one that does not leaves it as it is.
func plantLeftBehind(t *testing.T, c *cli, name string) {
	t.Helper()
	raw, err := os.ReadFile(testenv.WriteJob(t, name, ""))
	require.NoError(t, err)
	j, err := job.Parse(raw, name)
	require.NoError(t, err)
	j.Annotations = map[string]string{run.AnnotationHoldRef: run.HoldRef{LockNamespace: c.namespace, Target: "elsewhere", ClaimID: "dead"}.String()}
	_, err = job.NewStore(testenv.Get(t).Kube.CoreV1(), c.namespace, job.StoreOptions{}).Create(t.Context(), j)
	require.NoError(t, err)
}

// TestIntegrationRunLooksOnlyWhenNotVouched: once a run ended cleanly, the
// lock's record vouches that it left nothing behind in its job namespace,
// and the next run does not list the jobs there (a job left behind under
// another lock is not seen); a hold by lockctl acquire in between makes
// the next run look again (and find it).
func TestIntegrationRunLooksOnlyWhenNotVouched(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"run", "--lock", "dev", "-f", testenv.WriteJob(t, "deploy-first", "0")}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	kept, rj := runJobsOf(t, c, "dev")
	assert.True(t, kept, "the run's hold kept the account")
	assert.Equal(t, &runjobs.Account{Swept: []string{c.namespace}}, rj, "its job ended and nothing was left: the namespace is swept")

	plantLeftBehind(t, c, "planted")
	o = c.run(t, append(append([]string{"run", "--lock", "dev"}, id("api", 1)...), "--", "true")...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stderr, "left behind", "vouched for: no look")
	assert.Equal(t, job.Triggered, getJob(t, c, "planted").Status.State, "not looked at")

	o = c.run(t, append([]string{"acquire", "dev"}, id("ops", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	o = c.run(t, append([]string{"release", "dev"}, id("ops", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	kept, _ = runJobsOf(t, c, "dev")
	assert.False(t, kept, "a hold by acquire did not keep the account")

	o = c.run(t, append(append([]string{"run", "--lock", "dev"}, id("api", 2)...), "--", "true")...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `job "planted" was left behind by a lockctl run that ended`, "the run after acquire looks")
	assert.Equal(t, job.Aborted, getJob(t, c, "planted").Status.State)
	kept, rj = runJobsOf(t, c, "dev")
	assert.True(t, kept)
	assert.Equal(t, &runjobs.Account{Swept: []string{c.namespace}}, rj, "vouched for again")
}

// TestIntegrationRunKilledAfterVouchedRuns: a lock whose record vouches
// for its job namespace, then a run killed with its job running: its mark
// stays, so the next run looks, finds the job and aborts it.
func TestIntegrationRunKilledAfterVouchedRuns(t *testing.T) {
	t.Parallel()
	const ttl = 4 * time.Second
	c := newCLI(t)
	o := c.run(t, append(append([]string{"run", "--lock", "dev"}, id("web", 1)...), "--", "true")...)
	require.Equal(t, 0, o.code, o.stderr)
	_, rj := runJobsOf(t, c, "dev")
	require.Equal(t, &runjobs.Account{Swept: []string{c.namespace}}, rj, "vouched for")

	p := startRun(t, c, append([]string{"run", "--lock", "dev", "--ttl", ttl.String(), "-f", testenv.WriteJob(t, "deploy-orphan", "")}, id("web", 2)...)...)
	p.waitFor(t, `container "main" is running`)
	_, rj = runJobsOf(t, c, "dev")
	require.NotNil(t, rj)
	require.Len(t, rj.Pending, 1, "the running job's namespace is marked")
	assert.Equal(t, c.namespace, rj.Pending[0].Namespace)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t)

	o = c.run(t, append(append([]string{"run", "--lock", "dev"}, id("api", 1)...), "--", "true")...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `job "deploy-orphan" was left behind by a lockctl run that ended (it no longer holds lock "dev"): aborted, pod "deploy-orphan" deleted`)
	assert.Equal(t, job.Aborted, getJob(t, c, "deploy-orphan").Status.State)
	_, err := testenv.Get(t).Client.CoreV1().Pods(c.namespace).Get(t.Context(), "deploy-orphan", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "orphaned pod deleted, got %v", err)
	_, rj = runJobsOf(t, c, "dev")
	assert.Equal(t, &runjobs.Account{Swept: []string{c.namespace}}, rj, "the look covered the killed run's mark")
}
