package reliability

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// partitionCase is a lockctl run holding a lock through a proxy that is
// frozen.
type partitionCase struct {
	name string
	ttl  time.Duration
	// ignoreTERM makes the command ignore SIGTERM, so only SIGKILL ends it.
	ignoreTERM bool
	// thawAfter, when set, thaws the proxy this long after freezing it: a
	// partition shorter than the renew deadline.
	thawAfter time.Duration
}

// TestIntegrationPartitionedRun: a lockctl run whose connection to the API
// server goes silent (a proxy frozen: no byte passes, no connection
// closes) stops its command before the hold can expire, so the command's
// last output comes before the expiry the holder last wrote (the earliest
// the next holder may take the lock, on the API server's clock, which is
// this machine's) and before the next holder's command starts; run exits 1
// saying so. A partition shorter than the renew deadline stops nothing.
func TestIntegrationPartitionedRun(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, tc := range []partitionCase{
		{name: "TTL 6s, SIGTERM ignored", ttl: 6 * time.Second, ignoreTERM: true},
		{name: "TTL 30s", ttl: 30 * time.Second},
		// NOTE: longer than the renewal period (10s), so a renewal falls in
		// it, and shorter than the renew deadline (24s) less that period.
		{name: "TTL 30s, an 11s partition", ttl: 30 * time.Second, thawAfter: 11 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			partitionRun(t, env, tc)
		})
	}
}

func partitionRun(t *testing.T, env *testenv.Env, tc partitionCase) {
	ns := env.Namespace(t)
	dir := t.TempDir()
	proxy, via := env.ProxiedKubeconfig(t, dir)

	holderLog, nextLog := filepath.Join(dir, "holder.log"), filepath.Join(dir, "next.log")
	trap := ""
	if tc.ignoreTERM {
		trap = `trap "" TERM; `
	}
	// The command writes the time every 50ms: its last line is when it
	// last ran (this machine's clock, the checker's). A short partition's
	// command ends by itself after 25s.
	// NOTE: it also stops once "$1.stop" exists, which the test's cleanup
	// makes: a holder that did not stop it (today's main) leaves no
	// command behind.
	script := trap + `while [ ! -e "$1.stop" ]; do date +%s%N >> "$1"; sleep 0.05; done`
	if tc.thawAfter > 0 {
		script = `end=$(($(date +%s) + 25)); while [ "$(date +%s)" -lt "$end" ]; do date +%s%N >> "$1"; sleep 0.05; done`
	}
	t.Cleanup(func() { _ = os.WriteFile(holderLog+".stop", nil, 0o600) })
	ttl := tc.ttl.String()
	holder := startLockctl(t, dir, "KUBECONFIG="+via,
		"run", "--lock", "staging", "--lock-namespace", ns, "-n", ns, "--ttl", ttl, "--progress", "plain",
		"--owner", "acme", "--repo", "holder", "--branch", "main", "--build", "1",
		"--", "sh", "-c", script, "sh", holderLog)
	require.Eventually(t, func() bool { return len(readTimes(t, holderLog)) > 0 }, time.Minute, 20*time.Millisecond, "the holder's command runs")

	// The checker: every version of the lock the API server shows, from a
	// client of its own, keeping the last expiry the holder wrote and when
	// the next holder was first seen.
	direct := lockClient(t, env.RESTConfig, ns)
	var (
		mu         sync.Mutex
		lastExpiry time.Time
		seenNext   time.Time
	)
	watchCtx, stopWatch := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			st, err := direct.Get(watchCtx, "staging")
			if err == nil && st != nil && st.Status.Holder != nil {
				h := st.Status.Holder
				mu.Lock()
				switch {
				case h.Identity.Repo == "holder" && h.Expires != nil && h.Expires.After(lastExpiry):
					lastExpiry = h.Expires.Time
				case h.Identity.Repo == "next" && seenNext.IsZero():
					seenNext = time.Now()
				}
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stopWatch(); <-watched })

	next := startLockctl(t, dir, "KUBECONFIG="+env.Kubeconfig,
		"run", "--lock", "staging", "--lock-namespace", ns, "-n", ns, "--ttl", ttl, "--progress", "plain",
		"--owner", "acme", "--repo", "next", "--branch", "main", "--build", "1",
		// NOTE: the next holder keeps the lock a while after its line, so that
		// the checker's polling sees it holding on a loaded machine too (CI
		// saw a hold of a few milliseconds slip between two polls).
		"--", "sh", "-c", `date +%s%N >> "$1"; sleep 2`, "sh", nextLog)
	require.Eventually(t, func() bool {
		st, err := direct.Get(t.Context(), "staging")
		return err == nil && st != nil && len(st.Status.Waiters) == 1
	}, time.Minute, 50*time.Millisecond, "the next holder waits")

	frozenAt := time.Now()
	proxy.Freeze()
	if tc.thawAfter > 0 {
		time.Sleep(tc.thawAfter)
		proxy.Thaw()
		h := holder.wait(t, 2*time.Minute)
		n := next.wait(t, 2*time.Minute)
		assert.Equal(t, 0, h.Code, "a partition shorter than the renew deadline stops nothing:\n%s", h.Stderr)
		assert.NotContains(t, h.Stderr, "could not be renewed")
		assert.Equal(t, 0, n.Code, "the next holder ran after:\n%s", n.Stderr)
		times, nextTimes := readTimes(t, holderLog), readTimes(t, nextLog)
		require.NotEmpty(t, nextTimes)
		assert.True(t, times[len(times)-1].Before(nextTimes[0]), "one command at a time")
		t.Logf("partition of %s: the command ran its 25s (%d lines), exit 0; renewals reported failed meanwhile: %d",
			tc.thawAfter, len(times), strings.Count(h.Stderr, "cannot renew"))
		return
	}

	h := holder.wait(t, tc.ttl+2*time.Minute)
	n := next.wait(t, tc.ttl+2*time.Minute)
	stopWatch()
	<-watched
	proxy.Thaw()
	assert.Equal(t, 1, h.Code, "the holder exits 1:\n%s", h.Stderr)
	assert.Contains(t, h.Stderr, fmt.Sprintf(`lock "staging" could not be renewed for %s (TTL %s)`, tc.ttl-tc.ttl/6-time.Second, tc.ttl))
	assert.Contains(t, h.Stderr, "was stopped before the lock could expire")
	require.Equal(t, 0, n.Code, "the next holder ran:\n%s", n.Stderr)

	times, nextTimes := readTimes(t, holderLog), readTimes(t, nextLog)
	require.NotEmpty(t, nextTimes, "the next holder's command ran")
	last, nextStart := times[len(times)-1], nextTimes[0]
	mu.Lock()
	expiry, seen := lastExpiry, seenNext
	mu.Unlock()
	require.False(t, expiry.IsZero(), "the holder's expiry was seen")
	require.False(t, seen.IsZero(), "the next holder was seen")
	assert.True(t, last.Before(expiry), "the command's last output %s comes before the last expiry the holder wrote %s", last, expiry)
	assert.True(t, last.Before(seen), "the command's last output comes before the next holder is seen holding")
	assert.True(t, last.Before(nextStart), "the command's last output comes before the next command starts")
	t.Logf("TTL %s: partition at 0; command's last output %s, last expiry written %s, next holder seen %s, next command %s; "+
		"margin before the expiry %s, before the next holder %s",
		tc.ttl, ms(last.Sub(frozenAt)), ms(expiry.Sub(frozenAt)), ms(seen.Sub(frozenAt)), ms(nextStart.Sub(frozenAt)),
		ms(expiry.Sub(last)), ms(seen.Sub(last)))
}

// ms rounds d to the millisecond for logs.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// readTimes reads the UNIXNANO lines a command wrote to path; none when
// there is no file yet.
func readTimes(t *testing.T, path string) []time.Time {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var times []time.Time
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64); err == nil {
			times = append(times, time.Unix(0, n))
		}
	}
	return times
}

// lockctlProcess is a lockctl process started by startLockctl.
type lockctlProcess struct {
	cmd            *exec.Cmd
	stdout, stderr clitest.SyncBuffer
	done           chan struct{}
	code           int
}

// startLockctl starts the lockctl binary with args in a clean environment
// (PATH, HOME=home) plus env, and kills it when the test ends.
func startLockctl(t *testing.T, home string, env string, args ...string) *lockctlProcess {
	t.Helper()
	p := &lockctlProcess{cmd: exec.Command(clitest.Binary(t), args...), done: make(chan struct{})}
	p.cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, env}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	// NOTE: a command lockctl left running may hold its output open.
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits at most d for the process to exit and returns how it did.
func (p *lockctlProcess) wait(t *testing.T, d time.Duration) clitest.Outcome {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("lockctl %v still running after %s; stderr:\n%s", p.cmd.Args[1:], d, p.stderr.String())
	}
	return clitest.Outcome{Code: p.code, Stdout: p.stdout.String(), Stderr: p.stderr.String()}
}

// TestIntegrationPartitionedLeaderElection is the comparison: client-go's
// leaderelection (LeaseLock, ReleaseOnCancel, as klock runs it) whose
// leader is partitioned the same way, with klock's timings (15s lease,
// 10s renew deadline, 2s retry) and fast ones. It records when the
// leader's "command" (its OnStartedLeading context) stops and when the
// other side acquires; it asserts nothing about them: the figures go to
// docs/reliability.md.
func TestIntegrationPartitionedLeaderElection(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, tc := range []struct {
		name                   string
		lease, renew, retryPer time.Duration
	}{
		{name: "klock's defaults 15s/10s/2s", lease: 15 * time.Second, renew: 10 * time.Second, retryPer: 2 * time.Second},
		{name: "fast 6s/4s/1s", lease: 6 * time.Second, renew: 4 * time.Second, retryPer: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			proxy, via := env.ProxiedKubeconfig(t, t.TempDir())
			cfg, err := clientcmd.BuildConfigFromFlags("", via)
			require.NoError(t, err)
			leaderCS, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)

			var (
				mu                       sync.Mutex
				lastTick, stopped, taken time.Time
			)
			started, acquired, ended := make(chan struct{}), make(chan struct{}), make(chan struct{})
			elector := func(cs kubernetes.Interface, id string, onLead func(context.Context)) *leaderelection.LeaderElector {
				le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
					Lock: &resourcelock.LeaseLock{
						LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: "staging"},
						Client:     cs.CoordinationV1(),
						LockConfig: resourcelock.ResourceLockConfig{Identity: id},
					},
					LeaseDuration: tc.lease, RenewDeadline: tc.renew, RetryPeriod: tc.retryPer,
					ReleaseOnCancel: true,
					Callbacks:       leaderelection.LeaderCallbacks{OnStartedLeading: onLead, OnStoppedLeading: func() {}},
				})
				require.NoError(t, err)
				return le
			}
			leader := elector(leaderCS, "leader", func(ctx context.Context) {
				close(started)
				defer close(ended)
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					mu.Lock()
					lastTick = time.Now()
					mu.Unlock()
					select {
					case <-ctx.Done():
						mu.Lock()
						stopped = time.Now()
						mu.Unlock()
						return
					case <-tick.C:
					}
				}
			})
			other := elector(env.Client, "other", func(context.Context) {
				mu.Lock()
				taken = time.Now()
				mu.Unlock()
				close(acquired)
			})
			ctx, cancel := context.WithCancel(t.Context())
			t.Cleanup(cancel)
			go leader.Run(ctx)
			select {
			case <-started:
			case <-time.After(time.Minute):
				t.Fatal("the leader did not lead")
			}
			go other.Run(ctx)
			time.Sleep(tc.retryPer)
			frozenAt := time.Now()
			proxy.Freeze()
			deadline := time.After(tc.lease + 2*tc.renew + time.Minute)
			for _, ch := range []chan struct{}{acquired, ended} {
				select {
				case <-ch:
				case <-deadline:
					t.Fatal("the leader did not stop, or the other side did not acquire")
				}
			}
			mu.Lock()
			defer mu.Unlock()
			t.Logf("leaderelection %s: partition at 0; other side acquired %s, leader's command stopped %s (last ran %s): "+
				"ran %s after the other side acquired",
				tc.name, ms(taken.Sub(frozenAt)), ms(stopped.Sub(frozenAt)), ms(lastTick.Sub(frozenAt)), ms(lastTick.Sub(taken)))
		})
	}
}

// TestIntegrationPartitionedJobRun: a job run (run -f) whose connection
// goes silent. Its lock is held by the run's session, not by the job's pod
// (docs/adr/0006-run-session.md): at the renew deadline run stops
// following the job, cannot abort it, and exits 1; the pod runs on in the
// cluster until the hold has expired and the next run, taking the lock,
// finds the job left behind and aborts it, deleting the pod before its own
// command starts.
func TestIntegrationPartitionedJobRun(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	proxy, via := env.ProxiedKubeconfig(t, dir)
	jobFile := filepath.Join(dir, "job.yaml")
	require.NoError(t, os.WriteFile(jobFile, []byte(`apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  name: deploy-partitioned
spec:
  job: deploy-web
  type: postsubmit
  refs: {org: acme, repo: web, baseRef: main}
  podSpec:
    containers: [{name: main, image: alpine, command: [sh, -c, "./deploy.sh"]}]
    tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
`), 0o600))
	const ttl = 6 * time.Second
	holder := startLockctl(t, dir, "KUBECONFIG="+via,
		"run", "--lock", "staging", "--lock-namespace", ns, "-n", ns, "--ttl", ttl.String(), "--progress", "plain",
		"--owner", "acme", "--repo", "holder", "--branch", "main", "--build", "1", "-f", jobFile)
	pods := env.Client.CoreV1().Pods(ns)
	require.Eventually(t, func() bool {
		p, err := pods.Get(t.Context(), "deploy-partitioned", metav1.GetOptions{})
		return err == nil && p.Status.Phase == "Running"
	}, 2*time.Minute, 50*time.Millisecond, "the job's pod runs")

	var (
		mu     sync.Mutex
		goneAt time.Time
	)
	pollCtx, stopPoll := context.WithCancel(t.Context())
	polled := make(chan struct{})
	// NOTE: a watch, not polling: the next run starts its command a few
	// milliseconds after it deletes the pod, less than a poll's interval
	// (polling made the ordering below fail now and then).
	podWatch, err := pods.Watch(pollCtx, metav1.ListOptions{FieldSelector: "metadata.name=deploy-partitioned"})
	require.NoError(t, err)
	go func() {
		defer close(polled)
		defer podWatch.Stop()
		for ev := range podWatch.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if ev.Type == watch.Deleted || (ok && p.DeletionTimestamp != nil) {
				mu.Lock()
				goneAt = time.Now()
				mu.Unlock()
				return
			}
		}
	}()
	t.Cleanup(func() { stopPoll(); <-polled })

	nextLog := filepath.Join(dir, "next.log")
	direct := lockClient(t, env.RESTConfig, ns)
	next := startLockctl(t, dir, "KUBECONFIG="+env.Kubeconfig,
		"run", "--lock", "staging", "--lock-namespace", ns, "-n", ns, "--ttl", ttl.String(), "--progress", "plain",
		"--owner", "acme", "--repo", "next", "--branch", "main", "--build", "1",
		"--", "sh", "-c", `date +%s%N >> "$1"`, "sh", nextLog)
	require.Eventually(t, func() bool {
		st, err := direct.Get(t.Context(), "staging")
		return err == nil && st != nil && len(st.Status.Waiters) == 1
	}, time.Minute, 50*time.Millisecond, "the next holder waits")

	frozenAt := time.Now()
	proxy.Freeze()
	h := holder.wait(t, 2*time.Minute)
	exitedAt := time.Now()
	n := next.wait(t, 2*time.Minute)
	<-polled
	proxy.Thaw()
	assert.Equal(t, 1, h.Code, "the job's run exits 1:\n%s", h.Stderr)
	assert.Contains(t, h.Stderr, `lock "staging" could not be renewed for 4s (TTL 6s)`)
	assert.Contains(t, h.Stderr, `stopped following job "deploy-partitioned"`)
	require.Equal(t, 0, n.Code, "the next run:\n%s", n.Stderr)
	assert.Contains(t, n.Stderr, `job "deploy-partitioned" was left behind by a lockctl run that ended`)
	nextTimes := readTimes(t, nextLog)
	require.NotEmpty(t, nextTimes)
	mu.Lock()
	gone := goneAt
	mu.Unlock()
	require.False(t, gone.IsZero(), "the pod was deleted")
	assert.True(t, gone.Before(nextTimes[0]), "the left-behind pod is deleted before the next command starts")
	t.Logf("job run, TTL %s: partition at 0; run exited 1 at %s; the pod ran on until %s (deleted by the next run's sweep); next command at %s",
		ttl, ms(exitedAt.Sub(frozenAt)), ms(gone.Sub(frozenAt)), ms(nextTimes[0].Sub(frozenAt)))
}
