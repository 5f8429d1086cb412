package e2e

import (
	"context"
	"encoding/json"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// The environments of CI jobs, as docs/ci-identity.md describes them.
var (
	// githubDeploy88 is job "deploy" of run 88 of deploy.yml, attempt 1, on
	// runner "GitHub Actions 3".
	githubDeploy88 = map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main",
		"GITHUB_RUN_NUMBER": "88", "GITHUB_RUN_ID": "12345678901", "GITHUB_WORKFLOW": "Deploy",
		"GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/deploy.yml@refs/heads/main",
		"GITHUB_JOB":          "deploy", "RUNNER_NAME": "GitHub Actions 3", "GITHUB_RUN_ATTEMPT": "1",
	}
	// gitlabDeploy9 is job "deploy 1/2" of pipeline 9.
	gitlabDeploy9 = map[string]string{
		"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web",
		"CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "9", "CI_PIPELINE_ID": "5501",
		"CI_JOB_NAME": "deploy 1/2", "CI_JOB_ID": "1001",
	}
)

// ciJob is env with the variables of change set over it.
func ciJob(env map[string]string, change map[string]string) map[string]string {
	out := maps.Clone(env)
	maps.Copy(out, change)
	return out
}

// inCI builds a lockctl process that runs in the CI environment env.
func (c *cli) inCI(ctx context.Context, env map[string]string, args ...string) *exec.Cmd {
	cmd := c.command(ctx, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func (c *cli) runInCI(t *testing.T, env map[string]string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return c.runCmd(t, c.inCI(ctx, env, args...))
}

// decodedLock reads the record of target's lock, decoded.
func decodedLock(t *testing.T, c *cli, target string) *record.Record {
	t.Helper()
	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	return rec
}

// TestIntegrationCLIGitHubMatrixJobs: two jobs of one matrix (one run, one
// GITHUB_JOB, two runners) never both hold the lock; a retried step of the
// holder's job re-enters with its token; the sibling gets the lock once
// the first releases.
func TestIntegrationCLIGitHubMatrixJobs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	legA := githubDeploy88
	legB := ciJob(githubDeploy88, map[string]string{"RUNNER_NAME": "GitHub Actions 4"})

	a := c.runInCI(t, legA, "acquire", "staging")
	require.Equal(t, 0, a.code, a.stderr)
	token := strings.TrimSpace(a.stdout)
	assert.Contains(t, a.stderr, `lock "staging" acquired by acme/web@main#88`)

	b := c.runInCI(t, legB, "acquire", "staging", "--no-wait")
	assert.Equal(t, 4, b.code, "the matrix sibling does not hold it too: %s", b.stderr)
	assert.NotContains(t, b.stderr, "nothing to do")
	assert.Contains(t, b.stderr, "acme/web@main#88", "it says who holds it")

	again := c.runInCI(t, legA, "acquire", "staging")
	require.Equal(t, 0, again.code, "a retried step of the holder's job: %s", again.stderr)
	assert.Equal(t, token, strings.TrimSpace(again.stdout), "the hold's own token")
	assert.Contains(t, again.stderr, "already held")

	// The sibling waits, and holds the lock once the first job releases.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waiting := c.inCI(ctx, legB, "acquire", "staging", "--timeout", "90s", "--progress", "plain")
	var sibling outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		sibling = c.runCmd(t, waiting)
	}()
	require.Eventually(t, func() bool { return len(decodedLock(t, c, "staging").Waiters) == 1 }, time.Minute, 50*time.Millisecond,
		"the sibling queues")
	rel := c.runInCI(t, legA, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
	<-done
	require.Equal(t, 0, sibling.code, sibling.stderr)
	assert.NotEqual(t, token, strings.TrimSpace(sibling.stdout), "a new hold, a new token")
	assert.Equal(t, "GitHub Actions 4", decodedLock(t, c, "staging").Holder.JobID, "the sibling holds it")
	rel = c.runInCI(t, legB, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationCLIGitHubWorkflowsAreSequences: run 3 of hotfix.yml
// arriving while run 500 of deploy.yml holds the lock is not "older": it
// waits, and deploys once run 500 releases. Run 499 of deploy.yml is older
// and gives up.
func TestIntegrationCLIGitHubWorkflowsAreSequences(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	deploy500 := ciJob(githubDeploy88, map[string]string{"GITHUB_RUN_NUMBER": "500"})
	deploy499 := ciJob(githubDeploy88, map[string]string{"GITHUB_RUN_NUMBER": "499", "RUNNER_NAME": "GitHub Actions 5"})
	hotfix3 := ciJob(githubDeploy88, map[string]string{"GITHUB_RUN_NUMBER": "3", "GITHUB_WORKFLOW": "Hotfix",
		"GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/hotfix.yml@refs/heads/main", "GITHUB_JOB": "hotfix", "RUNNER_NAME": "GitHub Actions 7"})

	a := c.runInCI(t, deploy500, "acquire", "staging")
	require.Equal(t, 0, a.code, a.stderr)

	old := c.runInCI(t, deploy499, "acquire", "staging", "--timeout", "1m")
	assert.Equal(t, 3, old.code, "an older run of the same workflow is superseded: %s", old.stderr)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var hf outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		hf = c.runCmd(t, c.inCI(ctx, hotfix3, "acquire", "staging", "--timeout", "90s", "--progress", "plain"))
	}()
	require.Eventually(t, func() bool { return len(decodedLock(t, c, "staging").Waiters) == 1 }, time.Minute, 50*time.Millisecond,
		"the hotfix queues instead of giving up")
	rel := c.runInCI(t, deploy500, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
	<-done
	require.Equal(t, 0, hf.code, "the hotfix deploys: %s", hf.stderr)
	assert.NotContains(t, hf.stderr, "superseded")
	rec := decodedLock(t, c, "staging")
	assert.Equal(t, ".github/workflows/hotfix.yml", rec.Holder.Sequence)
	assert.Equal(t, "3", rec.Holder.Build)
	rel = c.runInCI(t, hotfix3, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
}

// TestIntegrationCLIGitHubRerun: a re-run of the holder's failed job (the
// next GITHUB_RUN_ATTEMPT, another runner) takes over the hold at once,
// with a new token, instead of waiting for the hour of --ttl.
func TestIntegrationCLIGitHubRerun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	a := c.runInCI(t, githubDeploy88, "acquire", "staging")
	require.Equal(t, 0, a.code, a.stderr)

	rerun := ciJob(githubDeploy88, map[string]string{"GITHUB_RUN_ATTEMPT": "2", "RUNNER_NAME": "GitHub Actions 9"})
	r := c.runInCI(t, rerun, "acquire", "staging", "--no-wait")
	require.Equal(t, 0, r.code, "the re-run takes over: %s", r.stderr)
	assert.NotEqual(t, strings.TrimSpace(a.stdout), strings.TrimSpace(r.stdout), "a new hold, a new token")
	rec := decodedLock(t, c, "staging")
	assert.EqualValues(t, 2, rec.Holder.Attempt)
	require.NotEmpty(t, rec.History)
	assert.Equal(t, record.EndRanAgain, rec.History[len(rec.History)-1].Ended, "the failed attempt's hold is history")

	// The first attempt's release (a stale finally step) is not the
	// re-run's to lose: attempt 1 is an earlier run of the job.
	stale := c.runInCI(t, githubDeploy88, "release", "staging")
	assert.Equal(t, 1, stale.code, stale.stderr)
	rel := c.runInCI(t, rerun, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationCLIGitLabParallelJobsAndRetry: two parallel jobs of one
// pipeline never both hold; a retry of the holder's job (a new CI_JOB_ID)
// takes over its hold.
func TestIntegrationCLIGitLabParallelJobsAndRetry(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	second := ciJob(gitlabDeploy9, map[string]string{"CI_JOB_NAME": "deploy 2/2", "CI_JOB_ID": "1002"})
	retry := ciJob(gitlabDeploy9, map[string]string{"CI_JOB_ID": "1007"})

	a := c.runInCI(t, gitlabDeploy9, "acquire", "staging")
	require.Equal(t, 0, a.code, a.stderr)
	b := c.runInCI(t, second, "acquire", "staging", "--no-wait")
	assert.Equal(t, 4, b.code, "the parallel job does not hold it too: %s", b.stderr)

	r := c.runInCI(t, retry, "acquire", "staging", "--no-wait")
	require.Equal(t, 0, r.code, "the retry takes over: %s", r.stderr)
	assert.NotEqual(t, strings.TrimSpace(a.stdout), strings.TrimSpace(r.stdout), "a new hold, a new token")
	h := c.run(t, "history", "staging")
	require.Equal(t, 0, h.code, h.stderr)
	assert.Contains(t, h.stdout+h.stderr, "a new run of its job")

	rel := c.runInCI(t, retry, "release", "staging")
	require.Equal(t, 0, rel.code, rel.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationCLIReleaseFromLaterJob: a job of a later stage releases
// the hold of the job that acquired only with its token; without it, it is
// refused, says why, and changes nothing.
func TestIntegrationCLIReleaseFromLaterJob(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cleanup := ciJob(gitlabDeploy9, map[string]string{"CI_JOB_NAME": "cleanup", "CI_JOB_ID": "1010"})
	a := c.runInCI(t, gitlabDeploy9, "acquire", "staging")
	require.Equal(t, 0, a.code, a.stderr)
	token := strings.TrimSpace(a.stdout)

	no := c.runInCI(t, cleanup, "release", "staging")
	assert.Equal(t, 1, no.code, no.stderr)
	assert.Contains(t, no.stderr, "another job than the caller's job cleanup")
	assert.Contains(t, no.stderr, "--token")
	assert.Equal(t, "deploy 1/2", decodedLock(t, c, "staging").Holder.Job, "still held")

	yes := c.runInCI(t, cleanup, "release", "staging", "--token", token)
	require.Equal(t, 0, yes.code, yes.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationCLIHolderWithoutJob: a lock whose holder was written by a
// lockctl before record 1.6 (no job, no sequence) is not re-entered by a
// job of the same build, which waits; a release by identity still ends it.
func TestIntegrationCLIHolderWithoutJob(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	since := time.Now().UTC().Truncate(time.Microsecond)
	raw, err := json.Marshal(map[string]any{
		"version": "1.5", "target": "staging", "policy": "newest", "updated": since.Format(metav1.RFC3339Micro),
		"holder": map[string]any{
			"owner": "acme", "repo": "web", "branch": "main", "build": "88", "session": "older-lockctl",
			"since": since.Format(metav1.RFC3339Micro), "expires": since.Add(time.Hour).Format(metav1.RFC3339Micro), "ttl": "1h0m0s",
		},
	})
	require.NoError(t, err)
	_, err = testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name: record.Name("staging"), Namespace: c.namespace,
			Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue, record.TargetLabel: "staging"},
			Annotations: map[string]string{record.RecordAnnotation: string(raw)},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	b := c.runInCI(t, githubDeploy88, "acquire", "staging", "--no-wait")
	assert.Equal(t, 4, b.code, "a job of the build does not re-enter a hold of unknown job: %s", b.stderr)

	rel := c.runInCI(t, githubDeploy88, "release", "staging")
	require.Equal(t, 0, rel.code, "a release by identity ends the older lockctl's hold: %s", rel.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}
