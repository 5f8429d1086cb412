package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock/record"
)

// lockGone reports whether the lock of target has been released.
func lockGone(t *testing.T, c *cli, target string) bool {
	t.Helper()
	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		t.Fatalf("get lock: %v", err)
	}
	// NOTE: a released lock is kept, free, for its history.
	rec, err := record.Decode(cm)
	return err == nil && rec.IsFree()
}

func getJob(t *testing.T, c *cli, name string) *job.Job {
	t.Helper()
	j, err := job.NewStore(kubetest.CoreV1(testenv.Get(t).Client.CoreV1()), c.namespace, job.StoreOptions{}).Get(t.Context(), name)
	require.NoError(t, err)
	return j
}

// TestIntegrationRunJob runs a succeeding and a failing job: exit 0 and 5,
// the pod's phases in order, the lock released.
func TestIntegrationRunJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, exitCode string
		wantCode       int
		wantLines      []string
		wantState      job.State
	}{
		{
			name: "succeeds", exitCode: "0", wantCode: 0, wantState: job.Success,
			wantLines: []string{
				`lock "staging" acquired by acme/web@main#1`,
				`job "deploy-succeeds" submitted`,
				`pod "deploy-succeeds" is Pending`,
				`pod "deploy-succeeds" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 0`,
				`pod "deploy-succeeds" is Succeeded`,
				`job "deploy-succeeds" (build ID 1 of job deploy-web) succeeded after`,
				`lock "staging" released`,
			},
		},
		{
			name: "fails", exitCode: "3", wantCode: 5, wantState: job.Failure,
			wantLines: []string{
				`lock "staging" acquired by acme/web@main#1`,
				`job "deploy-fails" submitted`,
				`pod "deploy-fails" is Running`,
				`container "main" terminated with exit code 3`,
				`pod "deploy-fails" is Failed`,
				`job "deploy-fails" (build ID 1 of job deploy-web) failed after `,
				`: container "main" exited with code 3`,
				`lock "staging" released`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			name := "deploy-" + tt.name
			o := c.run(t, append([]string{"run", "--lock", "staging", "-f", testenv.WriteJob(t, name, tt.exitCode)}, id("web", 1)...)...)
			assert.Equal(t, tt.wantCode, o.code, "exit status; stderr:\n%s", o.stderr)
			assertInOrder(t, o.stderr, tt.wantLines)
			assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d `, o.stderr, "plain timestamped lines without a terminal")
			// NOTE: kwok serves the same log for every container.
			assert.Equal(t, strings.Join(testenv.DefaultContainerLog, "\n")+"\n", o.stdout, "the pod's log, in order, on stdout")
			assert.NotContains(t, o.stderr, "WARNING", "nothing went wrong on the way")
			assert.NotContains(t, o.stderr, "cannot stream logs")
			assert.Equal(t, tt.wantState, getJob(t, c, name).Status.State)
			assert.True(t, lockGone(t, c, "staging"), "lock released")
		})
	}
}

// TestIntegrationRunCommand: the command's exit status is lockctl's, its
// output passes through, the lock is released.
func TestIntegrationRunCommand(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append(append([]string{"run", "--lock", "qa"}, id("web", 1)...), "--", "sh", "-c", "echo out; echo err >&2; exit 7")...)
	assert.Equal(t, 7, o.code, o.stderr)
	assert.Equal(t, "out\n", o.stdout)
	assertInOrder(t, o.stderr, []string{`lock "qa" acquired`, `running sh -c 'echo out; echo err >&2; exit 7'`, "err", "command exited with status 7", `lock "qa" released`})
	assert.True(t, lockGone(t, c, "qa"), "lock released")

	o = c.run(t, "run", "--lock", "qa", "--", "no-such-command-lockctl")
	assert.Equal(t, 127, o.code, o.stderr)
	assert.Contains(t, o.stderr, `error: run "no-such-command-lockctl": exec: "no-such-command-lockctl": executable file not found in $PATH`)
}

// TestIntegrationRunGivesItsCommandTheToken: the command of run finds the
// fencing token of its hold in $LOCKCTL_FENCING_TOKEN, the one run prints,
// so a deploy under run can stamp its manifests (lockctl stamp) without
// being told the token.
func TestIntegrationRunGivesItsCommandTheToken(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append(append([]string{"run", "--lock", "qa"}, id("web", 1)...), "--", "sh", "-c", `echo "$LOCKCTL_FENCING_TOKEN"`)...)
	require.Equal(t, 0, o.code, o.stderr)
	m := regexp.MustCompile(`lock "qa" acquired by .*fencing token (\d+)`).FindStringSubmatch(o.stderr)
	require.NotNil(t, m, "run prints the token: %s", o.stderr)
	assert.Equal(t, m[1]+"\n", o.stdout, "the command's $LOCKCTL_FENCING_TOKEN")
}

// TestIntegrationRunSerialises starts two runs on one namespace at once:
// the second command starts only after the first has ended.
func TestIntegrationRunSerialises(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	trace := filepath.Join(t.TempDir(), "trace")
	var wg sync.WaitGroup
	outcomes := make([]outcome, 2)
	for i, repo := range []string{"web", "api"} {
		wg.Go(func() {
			script := fmt.Sprintf("echo start %[1]s >> %[2]s; sleep 1; echo end %[1]s >> %[2]s", repo, trace)
			outcomes[i] = c.run(t, append(append([]string{"run", "--lock", "prod"}, id(repo, 1)...), "--", "sh", "-c", script)...)
		})
	}
	wg.Wait()
	for i, o := range outcomes {
		require.Equal(t, 0, o.code, "run %d: %s", i, o.stderr)
	}
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	lines := strings.Fields(strings.ReplaceAll(string(data), "\n", " "))
	require.Len(t, lines, 8, "trace: %s", data)
	assert.Equal(t, "start", lines[0])
	assert.Equal(t, "end", lines[2], "the first command ends before the second starts: %s", data)
	assert.Equal(t, lines[1], lines[3], "one command at a time: %s", data)
	assert.Contains(t, outcomes[0].stderr+outcomes[1].stderr, `waiting for lock "prod": held by acme/`, "one waited, and said for whom")
	assert.True(t, lockGone(t, c, "prod"))
}

// assertPodDeleted checks that the pod name is gone, or deleted and
// waiting only for its node to confirm: lockctl deletes a pod with its
// grace period, as a real cluster's kubelet then ends it, and no lockctl
// finalizer holds it.
func assertPodDeleted(t *testing.T, c *cli, name string) {
	t.Helper()
	pod, err := testenv.Get(t).Client.CoreV1().Pods(c.namespace).Get(t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err)
	assert.NotNil(t, pod.DeletionTimestamp, "pod %q deleted", name)
	assert.NotContains(t, pod.Finalizers, job.Finalizer, "pod %q released by lockctl", name)
}

// TestIntegrationRunJobInterrupted sends SIGINT while the job's pod runs:
// the job is aborted, its pod deleted, the lock released, exit 130.
func TestIntegrationRunJobInterrupted(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	p := startRun(t, c, append([]string{"run", "--lock", "staging", "-f", testenv.WriteJob(t, "deploy-forever", "")}, id("web", 1)...)...)
	p.waitFor(t, `container "main" is running`)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	code, stderr := p.wait(t)

	assert.Equal(t, 130, code, stderr)
	assertInOrder(t, stderr, []string{
		`interrupted: aborting job "deploy-forever" (its pod is deleted) and releasing lock "staging"; interrupt again to exit at once`,
		`job "deploy-forever" aborted, pod "deploy-forever" deleted`,
		`lock "staging" released`,
	})
	j := getJob(t, c, "deploy-forever")
	assert.Equal(t, job.Aborted, j.Status.State)
	assert.True(t, j.IsTerminal(), "the abort is complete")
	assertPodDeleted(t, c, "deploy-forever")
	assert.True(t, lockGone(t, c, "staging"), "lock released")
}

// TestIntegrationRunKilled kills run with SIGKILL: the lock frees itself
// within the TTL, and a job's pod left behind is deleted by a running
// reconcile loop once the run's hold expires, or else by the next run.
func TestIntegrationRunKilled(t *testing.T) {
	t.Parallel()
	const ttl = 4 * time.Second
	t.Run("command", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		p := startRun(t, c, append(append([]string{"run", "--lock", "dev", "--ttl", ttl.String()}, id("web", 1)...), "--", "sleep", "600")...)
		p.waitFor(t, "running sleep 600")
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		code, _ := p.wait(t)
		require.Equal(t, -1, code, "killed")

		o := c.run(t, append([]string{"acquire", "dev", "--timeout", "30s"}, id("api", 1)...)...)
		require.Equal(t, 0, o.code, o.stderr)
		assert.Less(t, time.Since(killed), ttl+3*time.Second, "the lock was free within the TTL")
	})
	t.Run("job", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		p := startRun(t, c, append([]string{"run", "--lock", "dev", "--ttl", ttl.String(), "-f", testenv.WriteJob(t, "deploy-orphan", "")}, id("web", 1)...)...)
		p.waitFor(t, `container "main" is running`)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		p.wait(t)

		o := c.run(t, append(append([]string{"run", "--lock", "dev"}, id("api", 1)...), "--", "true")...)
		require.Equal(t, 0, o.code, o.stderr)
		assert.Less(t, time.Since(killed), ttl+5*time.Second, "the lock was free within the TTL")
		assert.Contains(t, o.stderr, `job "deploy-orphan" was left behind by a lockctl run that ended (it no longer holds lock "dev"): aborted, pod "deploy-orphan" deleted`)
		j := getJob(t, c, "deploy-orphan")
		assert.Equal(t, job.Aborted, j.Status.State)
		assert.Equal(t, job.ReasonSessionEnded, j.Status.Reason)
		_, err := testenv.Get(t).Client.CoreV1().Pods(c.namespace).Get(t.Context(), "deploy-orphan", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "orphaned pod deleted, got %v", err)
	})
	t.Run("job with a reconcile loop running", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		loop := startRun(t, c, "reconcile")
		loop.waitFor(t, "reconciling jobs")
		p := startRun(t, c, append([]string{"run", "--lock", "dev", "--ttl", ttl.String(), "-f", testenv.WriteJob(t, "deploy-orphan", "")}, id("web", 1)...)...)
		p.waitFor(t, `container "main" is running`)
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
		killed := time.Now()
		p.wait(t)

		pods := testenv.Get(t).Client.CoreV1().Pods(c.namespace)
		require.Eventually(t, func() bool {
			_, err := pods.Get(t.Context(), "deploy-orphan", metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, 50*time.Millisecond, "the loop deletes the orphaned pod")
		// NOTE: the hold expires at most ttl after the kill; the loop looks
		// a second after the expiry it last read.
		assert.Less(t, time.Since(killed), ttl+5*time.Second, "the pod went within the TTL")
		j := getJob(t, c, "deploy-orphan")
		assert.Equal(t, job.Aborted, j.Status.State)
		assert.Equal(t, job.ReasonSessionEnded, j.Status.Reason)
		assert.Equal(t, `the lockctl run that started it ended without cleaning up: its hold on lock "dev" expired`, j.Status.Description)
	})
}

// TestIntegrationRunDryRun prints the pod and writes nothing.
func TestIntegrationRunDryRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, "run", "--dry-run", "-f", testenv.WriteJob(t, "deploy-dry", "0"))
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, "kind: Pod\n")
	assert.Contains(t, o.stdout, "name: deploy-dry\n")
	_, err := job.NewStore(kubetest.CoreV1(testenv.Get(t).Client.CoreV1()), c.namespace, job.StoreOptions{}).Get(t.Context(), "deploy-dry")
	assert.ErrorIs(t, err, job.ErrNotFound, "no job submitted")
}

// running is a lockctl process whose stderr is read as it comes.
type running struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	done   chan struct{}
}

func startRun(t *testing.T, c *cli, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	p := &running{cmd: c.command(ctx, args...), lines: make(chan string, 100), done: make(chan struct{})}
	pipe, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		s := bufio.NewScanner(pipe)
		for s.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(s.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- s.Text():
			default:
			}
		}
	}()
	return p
}

// waitFor waits until stderr shows text.
func (p *running) waitFor(t *testing.T, text string) {
	t.Helper()
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Contains(p.stderr.String(), text)
	}, time.Minute, 20*time.Millisecond, "waiting for %q", text)
}

// wait waits for the process and returns its exit code (-1 when a signal
// ended it) and its stderr.
func (p *running) wait(t *testing.T) (int, string) {
	t.Helper()
	<-p.done
	err := p.cmd.Wait()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("wait for lockctl: %v", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.ProcessState.ExitCode(), p.stderr.String()
}

// assertInOrder checks that each of want appears in text, in that order.
func assertInOrder(t *testing.T, text string, want []string) {
	t.Helper()
	rest := text
	for _, w := range want {
		i := strings.Index(rest, w)
		if !assert.GreaterOrEqual(t, i, 0, "%q missing, or out of order, in:\n%s", w, text) {
			return
		}
		rest = rest[i+len(w):]
	}
}
