package cmd

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

func TestNewRunCmd(t *testing.T) {
	t.Parallel()
	job := func(mod func(*runOptions)) runOptions {
		o := runOptions{Filename: "job.yaml", ContenderFlags: cli.ContenderFlags{TTL: 30 * time.Second, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    runOptions
		wantErr string
	}{
		{name: "job, lock from its spec", args: []string{"-f", "job.yaml"}, want: job(nil)},
		{name: "job with a lock", args: []string{"--lock", "staging", "-f", "job.yaml"}, want: job(func(o *runOptions) { o.Target, o.Targets = "staging", []string{"staging"} })},
		{
			name: "command",
			args: []string{"--lock", "staging", "--", "sh", "-c", "exit 7"},
			want: runOptions{Target: "staging", Targets: []string{"staging"}, Command: []string{"sh", "-c", "exit 7"}, ContenderFlags: cli.ContenderFlags{TTL: 30 * time.Second, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}},
		},
		{
			name: "every flag",
			args: []string{"--lock", "staging", "-f", "job.yaml", "--dry-run", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42",
				"--pod", "ci/p", "--lock-namespace", "locks", "--ttl", "1m", "--timeout", "5m", "--policy", "fifo", "--priority", "low", "--progress", "plain",
				"--config", "lockctl.yaml", "--build-cluster", "gpu=gpu-ctx", "--pod-namespace", "pods"},
			want: job(func(o *runOptions) {
				o.Target, o.Targets, o.DryRun = "staging", []string{"staging"}, true
				o.LockFlags = cli.LockFlags{Owner: "acme", Repo: "web", Branch: "main", Build: "42", Pod: "ci/p", LockNamespace: "locks"}
				o.ClusterFlags = cli.ClusterFlags{ConfigFile: "lockctl.yaml", BuildClusters: []string{"gpu=gpu-ctx"}, PodNamespace: "pods"}
				o.TTL, o.Timeout, o.Policy, o.Progress = time.Minute, 5*time.Minute, record.PolicyFIFO, "plain"
				o.Priority = record.PriorityLow
			}),
		},
		{
			name: "several locks, cancel-in-progress",
			args: []string{"--lock", "staging", "--lock", "db-migrations", "--cancel-in-progress", "--", "true"},
			want: runOptions{
				Target: "staging", Targets: []string{"staging", "db-migrations"}, Command: []string{"true"}, CancelInProgress: true,
				ContenderFlags: cli.ContenderFlags{TTL: 30 * time.Second, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"},
			},
		},
		{
			name: "across clusters",
			args: []string{"--lock", "staging", "--contexts", "prod-us,prod-eu", "--", "./deploy.sh"},
			want: runOptions{
				LockFlags: cli.LockFlags{Contexts: []string{"prod-us", "prod-eu"}},
				Target:    "staging", Targets: []string{"staging"}, Command: []string{"./deploy.sh"},
				ContenderFlags: cli.ContenderFlags{TTL: 30 * time.Second, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"},
			},
		},
		{
			name: "a job across clusters", args: []string{"--lock", "staging", "--contexts", "prod-us,prod-eu", "-f", "job.yaml"},
			wantErr: "--contexts holds locks in several clusters while a command runs (-- COMMAND); a job (-f) runs in one cluster",
		},
		{
			name: "a short TTL with a kill grace",
			args: []string{"--lock", "staging", "--ttl", "6s", "--kill-grace", "2s", "--", "true"},
			want: runOptions{
				Target: "staging", Targets: []string{"staging"}, Command: []string{"true"},
				ContenderFlags: cli.ContenderFlags{TTL: 6 * time.Second, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}, KillGrace: 2 * time.Second,
			},
		},
		{
			name: "a TTL too short for the kill grace", args: []string{"--lock", "staging", "--ttl", "6s", "--kill-grace", "5s", "--", "true"},
			wantErr: "--ttl 6s is too short for a kill grace of 5s: run stops the command 5s (kill grace) + 1s (clock margin) before the lock can expire, " +
				"which leaves no time to renew it first (at a third of --ttl); give --ttl 9.1s or more, or a shorter --kill-grace",
		},
		{name: "a TTL too short for the default kill grace", args: []string{"--lock", "staging", "--ttl", "1s", "--", "true"}, wantErr: "--ttl 1s is too short for a kill grace of 160ms"},
		{name: "a negative kill grace", args: []string{"--lock", "staging", "--kill-grace", "-1s", "--", "true"}, wantErr: "--kill-grace must not be negative, got -1s"},
		{name: "a lock named twice", args: []string{"--lock", "staging", "--lock", "staging", "--", "true"}, wantErr: `"staging" is named twice`},
		{name: "nothing to run", args: []string{"--lock", "staging"}, wantErr: "nothing to run: give a job with -f FILE or a command after --"},
		{name: "job and command", args: []string{"--lock", "staging", "-f", "job.yaml", "--", "true"}, wantErr: "give either -f FILE or -- COMMAND, not both"},
		{name: "command without --", args: []string{"--lock", "staging", "deploy.sh"}, wantErr: `unexpected argument "deploy.sh": put the command after --`},
		{name: "argument before --", args: []string{"--lock", "staging", "x", "--", "true"}, wantErr: `unexpected argument "x" before --`},
		{name: "command without lock", args: []string{"--", "true"}, wantErr: "required flag --lock not set"},
		{name: "dry run of a command", args: []string{"--lock", "staging", "--dry-run", "--", "true"}, wantErr: "--dry-run needs -f FILE"},
		{name: "bad lock", args: []string{"--lock", "Staging", "--", "true"}, wantErr: `invalid namespace "Staging"`},
		{name: "bad ttl", args: []string{"--lock", "staging", "--ttl", "0s", "--", "true"}, wantErr: "--ttl must be positive, got 0s"},
		{name: "bad timeout", args: []string{"--lock", "staging", "--timeout", "-1s", "--", "true"}, wantErr: "--timeout must not be negative, got -1s"},
		{name: "bad progress", args: []string{"--lock", "staging", "--progress", "fancy", "--", "true"}, wantErr: `--progress must be auto, tty or plain, got "fancy"`},
		{name: "bad build cluster", args: []string{"-f", "job.yaml", "--build-cluster", "gpu"}, wantErr: `invalid --build-cluster "gpu": want ALIAS=CONTEXT`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"run"}, tt.args, newRunCmd)
			if tt.wantErr != "" {
				require.Error(t, err, "args %v", tt.args)
				assert.Contains(t, err.Error(), tt.wantErr, "args %v", tt.args)
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "usage errors exit 2")
				return
			}
			require.NoError(t, err, "args %v", tt.args)
			got.f, got.childErr = nil, nil
			assert.True(t, got.PerProcess, "run's local build is its process")
			got.PerProcess = false
			assert.Equal(t, tt.want, *got, "args %v", tt.args)
		})
	}
}

func TestNewRunCmdFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	te.env["LOCKCTL_LOCK"] = "staging"
	te.env["LOCKCTL_TTL"] = "10s"
	var got *runOptions
	root := newRootCmd(te.f)
	root.RemoveCommand(findCmd(root, "run"))
	root.AddCommand(newRunCmd(te.f, func(o *runOptions) error { got = o; return nil }))
	root.SetArgs([]string{"run", "--ttl", "20s", "--", "true"})
	require.NoError(t, root.Execute())
	assert.Equal(t, "staging", got.Target, "--lock from LOCKCTL_LOCK")
	assert.Equal(t, 20*time.Second, got.TTL, "the command line wins")
}

// idFlags are the identity flags of acme/web@main#42.
var idFlags = []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"}

func TestRunRun(t *testing.T) {
	t.Parallel()
	heldBy43 := lockConfigMap(t, "staging", record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "43"},
		ClaimID:  "s43", Since: metav1.NewMicroTime(testNow.Add(-time.Minute)),
		Expires: ptrMicro(testNow.Add(time.Hour)),
	})
	tests := []struct {
		name       string
		args       []string
		stdin      string
		objs       []runtime.Object
		wantCode   int
		wantErr    string
		wantOut    string
		wantErrOut string
		goldenErr  string // stderr golden instead of wantErrOut
		goldenOut  string // stdout golden instead of wantOut
		wantLock   bool   // the lock is still there afterwards
		noWrites   bool   // nothing was written to the cluster
	}{
		{
			name:      "command fails: its status, lock released",
			args:      append(append([]string{"run", "--lock", "staging"}, idFlags...), "--", "sh", "-c", "echo out; echo err >&2; exit 7"),
			wantCode:  7,
			wantOut:   "out\n",
			goldenErr: "run/command-fails.golden",
		},
		{
			name:    "command succeeds with stdin passed through",
			args:    append(append([]string{"run", "--lock", "staging", "--progress", "plain"}, idFlags...), "--", "sh", "-c", "read x; echo got $x"),
			stdin:   "abc\n",
			wantOut: "got abc\n",
			wantErrOut: "10:00:00 lock \"staging\" acquired by acme/web@main#42 after 0s (default/lockctl-lock-staging), fencing token 1\n" +
				"10:00:00 running sh -c 'read x; echo got $x'\n" +
				"10:00:00 command exited with status 0\n" +
				"10:00:00 lock \"staging\" released\n",
		},
		{
			name:       "quiet: the command's output only",
			args:       append(append([]string{"run", "-q", "--lock", "staging"}, idFlags...), "--", "sh", "-c", "echo out; echo err >&2"),
			wantOut:    "out\n",
			wantErrOut: "err\n",
		},
		{
			name:     "command not found: 127, no lock taken",
			args:     []string{"run", "--lock", "staging", "--", "no-such-command-lockctl"},
			wantCode: run.CodeCommandNotFound,
			wantErr:  `run "no-such-command-lockctl": exec: "no-such-command-lockctl": executable file not found in $PATH`,
			noWrites: true,
		},
		{
			name:     "superseded while waiting for the lock",
			args:     append(append([]string{"run", "--lock", "staging"}, idFlags...), "--", "true"),
			objs:     []runtime.Object{heldBy43},
			wantCode: cmdutil.CodeSuperseded,
			wantErr:  `superseded on lock "staging": build acme/web@main#43 holds it`,
			wantLock: true,
		},
		{
			name:      "dry run prints the pod",
			args:      []string{"run", "--dry-run", "-f", "testdata/run/valid-job.yaml"},
			goldenOut: "run/dry-run.yaml.golden",
			noWrites:  true,
		},
		{
			name:     "job lock and --lock differ",
			args:     []string{"run", "--lock", "prod", "-f", "testdata/run/valid-job.yaml"},
			wantCode: cmdutil.CodeUsage,
			wantErr:  `--lock "prod" and the job's spec.lock.namespace "staging" differ`,
			noWrites: true,
		},
		{
			name:     "job in an unknown build cluster",
			args:     []string{"run", "--lock", "staging", "-f", "-"},
			stdin:    "{apiVersion: lockctl.dev/v1alpha1, kind: Job, metadata: {name: j}, spec: {job: j, type: periodic, cluster: gpu, podSpec: {containers: [{name: c, image: i}]}}}",
			wantCode: cmdutil.CodeUsage,
			wantErr:  `job "j" runs in build cluster "gpu": name its context with --build-cluster gpu=CONTEXT`,
			noWrites: true,
		},
		{
			name:     "job without a lock",
			args:     []string{"run", "-f", "-"},
			stdin:    "{apiVersion: lockctl.dev/v1alpha1, kind: Job, metadata: {name: j}, spec: {job: j, type: periodic, podSpec: {containers: [{name: c, image: i}]}}}",
			wantCode: cmdutil.CodeUsage,
			wantErr:  "required flag --lock not set",
			noWrites: true,
		},
		{
			name:     "bad job file",
			args:     []string{"run", "--lock", "staging", "-f", "-"},
			stdin:    "{apiVersion: lockctl.dev/v1alpha1, kind: Job, metadata: {name: j}, spec: {job: j, type: sometimes}}",
			wantCode: cmdutil.CodeUsage,
			wantErr:  "spec.type",
			noWrites: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t, tt.objs...)
			te.f.IOStreams.In = strings.NewReader(tt.stdin)
			err := te.run(tt.args...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			}
			if tt.goldenOut != "" {
				golden(t, tt.goldenOut, te.out.String())
			} else {
				assert.Equal(t, tt.wantOut, te.out.String(), "stdout")
			}
			if tt.goldenErr != "" {
				golden(t, tt.goldenErr, te.errOut.String())
			} else {
				assert.Equal(t, tt.wantErrOut, te.errOut.String(), "stderr")
			}
			assert.Equal(t, tt.wantLock, lockHeld(t, te), "lock held afterwards")
			if tt.noWrites {
				assert.Empty(t, writeActions(te.cs.Actions()), "nothing written")
			}
		})
	}
}

// TestRunRunInterruptedCommand cancels run as a first SIGTERM does: the
// command (its process group) gets the signal, run waits for it and releases
// the lock.
func TestRunRunInterruptedCommand(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	out, errOut := &clitest.SyncBuffer{}, &clitest.SyncBuffer{}
	te.f.IOStreams.Out, te.f.IOStreams.ErrOut = out, errOut
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, te.f, append(append([]string{"run", "--lock", "staging"}, idFlags...),
			"--", "sh", "-c", `trap 'echo got TERM; exit 3' TERM; echo ready; sleep 30 & wait`))
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "ready") }, 10*time.Second, 10*time.Millisecond)
	cancel(&cmdutil.InterruptedError{Sig: syscall.SIGTERM})
	err := <-done

	require.Error(t, err)
	assert.ErrorIs(t, err, context.Canceled, "Main turns it into 128+15")
	assert.Equal(t, "ready\ngot TERM\n", out.String(), "the command got SIGTERM")
	assert.Contains(t, errOut.String(), "interrupted: passing SIGTERM to the command and waiting for it to exit, then releasing lock \"staging\"; "+
		"interrupt again to exit at once, leaving lock \"staging\" to expire within 30s\n")
	assert.Contains(t, errOut.String(), "command exited with status 3\n")
	assert.Contains(t, errOut.String(), "lock \"staging\" released\n")
	assertNoLock(t, te)
}

// TestRunRunLockLost takes the lock away while the command runs: the next
// renewal finds it, the command is stopped and run exits 1 without touching
// the other holder's lock.
func TestRunRunLockLost(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	out, errOut := &clitest.SyncBuffer{}, &clitest.SyncBuffer{}
	te.f.IOStreams.Out, te.f.IOStreams.ErrOut = out, errOut
	done := make(chan error, 1)
	go func() {
		done <- te.run(append(append([]string{"run", "--lock", "staging", "--ttl", "30s"}, idFlags...),
			"--", "sh", "-c", `trap 'echo got TERM; exit 3' TERM; echo ready; sleep 30 & wait`)...)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "ready") }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, te.clock.HasWaiters, 10*time.Second, 10*time.Millisecond, "the renewal waits")

	cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	var rec record.Record
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	rec.Holder.ClaimID, rec.Holder.Build = "other", "99"
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[record.RecordAnnotation] = string(raw)
	_, err = te.cs.CoreV1().ConfigMaps("default").Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	te.clock.Step(10 * time.Second)
	err = <-done

	require.Error(t, err)
	assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))
	assert.Contains(t, err.Error(), `lock "staging" was lost while sh -c`)
	assert.ErrorIs(t, err, record.ErrLost)
	assert.Equal(t, "ready\ngot TERM\n", out.String(), "the command was stopped")
	assert.Contains(t, errOut.String(), "lock lost: now held by acme/web@main#99: stopping the command with SIGTERM (SIGKILL after 5s)\n")
	assert.NotContains(t, errOut.String(), "released", "someone else's lock is left alone")
}

// fakeKubelet plays the kubelet of the fake cluster for the pod of one job:
// Pending on creation, then Running, then finished with exitCode (never
// when it is negative), each step once run has shown the previous one, so
// the output is deterministic.
func fakeKubelet(t *testing.T, te *testEnv, errOut *clitest.SyncBuffer, pod string, exitCode int32) {
	t.Helper()
	te.cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.UID, p.CreationTimestamp, p.Status.Phase = types.UID("uid-"+p.Name), metav1.NewTime(testNow), corev1.PodPending
		return false, nil, nil
	})
	go func() {
		pods := te.cs.CoreV1().Pods("default")
		step := func(after string, mod func(*corev1.Pod)) bool {
			for !strings.Contains(errOut.String(), after) {
				select {
				case <-t.Context().Done():
					return false
				case <-time.After(5 * time.Millisecond):
				}
			}
			p, err := pods.Get(t.Context(), pod, metav1.GetOptions{})
			if err != nil {
				t.Errorf("kubelet: %v", err)
				return false
			}
			mod(p)
			if _, err := pods.UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
				t.Errorf("kubelet: %v", err)
				return false
			}
			return true
		}
		started := metav1.NewTime(testNow)
		ok := step(`pod "`+pod+`" is Pending`, func(p *corev1.Pod) {
			p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &started
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}
		})
		reason, phase := "Completed", corev1.PodSucceeded
		if exitCode != 0 {
			reason, phase = "Error", corev1.PodFailed
		}
		_ = ok && exitCode >= 0 && step(`container "main" is running`, func(p *corev1.Pod) {
			p.Status.Phase = phase
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, StartedAt: started, FinishedAt: started},
			}}}
		})
	}()
}

// fakeLogs serves two log lines, timestamped as the kubelet does, once.
var fakeLogs = podwatch.LogOpenerFunc(func(_ context.Context, _, _ string, o *corev1.PodLogOptions) (io.ReadCloser, error) {
	if o.SinceTime != nil {
		return io.NopCloser(strings.NewReader("")), nil
	}
	return io.NopCloser(strings.NewReader("2026-12-02T10:00:01Z deploying web\n2026-12-02T10:00:02Z done\n")), nil
})

// TestRunRunJob drives a job on fakes: the controller in run creates the
// pod, the fake kubelet finishes it, run prints phases and logs, releases
// the lock and exits with the job's status.
func TestRunRunJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		exitCode int32
		wantCode int
		golden   string
		state    job.State
	}{
		{name: "succeeds", exitCode: 0, wantCode: cmdutil.CodeOK, golden: "run/job-succeeds.golden", state: job.Success},
		{name: "fails", exitCode: 3, wantCode: cmdutil.CodeJobFailed, golden: "run/job-fails.golden", state: job.Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			errOut, out := &clitest.SyncBuffer{}, &clitest.SyncBuffer{}
			te.f.IOStreams.ErrOut, te.f.IOStreams.Out = errOut, out
			fakeKubelet(t, te, errOut, "deploy-web-42", tt.exitCode)

			err := runWith(t, te, func(o *runOptions) { o.logs = fakeLogs },
				append([]string{"run", "-f", "testdata/run/valid-job.yaml"}, idFlags...)...)

			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			golden(t, tt.golden, errOut.String())
			assert.Equal(t, "deploying web\ndone\n", out.String(), "the pod's logs, in order")
			j, err := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), "deploy-web-42")
			require.NoError(t, err)
			assert.Equal(t, tt.state, j.Status.State)
			assert.Nil(t, j.Spec.Lock, "run holds the lock, not the pod")
			assert.Regexp(t, `^default/staging/[0-9a-f]+$`, j.Annotations[run.AnnotationHoldRef], "tied to run's lock")
			assertNoLock(t, te)
		})
	}
}

// TestRunRunJobInterrupted cancels run while the pod runs: the job is
// aborted, its pod deleted and the lock released.
func TestRunRunJobInterrupted(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	errOut := &clitest.SyncBuffer{}
	te.f.IOStreams.ErrOut = errOut
	fakeKubelet(t, te, errOut, "deploy-web-42", -1)
	ctx, cancel := context.WithCancelCause(t.Context())
	done := make(chan error, 1)
	go func() {
		root := newRootCmd(te.f)
		root.RemoveCommand(findCmd(root, "run"))
		root.AddCommand(newRunCmd(te.f, func(o *runOptions) error { o.logs = fakeLogs; return runRun(ctx, o) }))
		root.SetArgs(append([]string{"run", "-f", "testdata/run/valid-job.yaml"}, idFlags...))
		done <- root.ExecuteContext(ctx)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), `container "main" is running`) }, 10*time.Second, 5*time.Millisecond)
	cancel(&cmdutil.InterruptedError{Sig: syscall.SIGINT})
	err := <-done

	j, gerr := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), "deploy-web-42")
	require.NoError(t, gerr)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, job.Aborted, j.Status.State)
	assert.Equal(t, run.ReasonInterrupted, j.Status.Description)
	_, gerr = te.cs.CoreV1().Pods("default").Get(t.Context(), "deploy-web-42", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(gerr), "pod deleted, got %v", gerr)
	assert.Contains(t, errOut.String(), `interrupted: aborting job "deploy-web-42" (its pod is deleted) and releasing lock "staging"; `+
		`interrupt again to exit at once, leaving lock "staging" to expire within 30s and pod "deploy-web-42" to be deleted after that by lockctl reconcile or the next lockctl run`)
	assert.Contains(t, errOut.String(), `job "deploy-web-42" aborted, pod "deploy-web-42" deleted`)
	assertNoLock(t, te)
}

// TestRunRunSweepsOrphans leaves a job behind a run whose lock expired: the
// next run aborts it and deletes its pod before running its own command.
func TestRunRunSweepsOrphans(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	store := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{})
	orphan, err := job.Parse([]byte("{apiVersion: lockctl.dev/v1alpha1, kind: Job, metadata: {name: orphan}, spec: {job: o, type: periodic, podSpec: {containers: [{name: c, image: i}]}}}"), "orphan")
	require.NoError(t, err)
	orphan.Annotations = map[string]string{run.AnnotationHoldRef: "default/staging/dead"}
	orphan, err = store.Create(t.Context(), orphan)
	require.NoError(t, err)
	st := *orphan.Status.DeepCopy()
	st.State, st.PodName, st.BuildID = job.Pending, "orphan", "1"
	orphan, err = store.UpdateStatus(t.Context(), orphan, st)
	require.NoError(t, err)
	_, err = te.cs.CoreV1().Pods("default").Create(t.Context(), job.NewPod(orphan, "default", "1"), metav1.CreateOptions{})
	require.NoError(t, err)
	alive, err := store.Create(t.Context(), &job.Job{
		TypeMeta: orphan.TypeMeta, ObjectMeta: metav1.ObjectMeta{Name: "not-from-run"}, Spec: orphan.Spec,
	})
	require.NoError(t, err)

	require.NoError(t, te.run(append(append([]string{"run", "--lock", "staging"}, idFlags...), "--", "true")...))

	got, err := store.Get(t.Context(), "orphan")
	require.NoError(t, err)
	assert.Equal(t, job.Aborted, got.Status.State)
	assert.Equal(t, job.ReasonSessionEnded, got.Status.Reason)
	assert.Equal(t, `the lockctl run that started it ended without cleaning up: it no longer holds lock "staging"`, got.Status.Description)
	_, err = te.cs.CoreV1().Pods("default").Get(t.Context(), "orphan", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "orphan's pod deleted, got %v", err)
	got, err = store.Get(t.Context(), alive.Name)
	require.NoError(t, err)
	assert.Equal(t, job.Triggered, got.Status.State, "a job not started by run is left alone")
	assert.Contains(t, te.errOut.String(), `10:00:00 job "orphan" was left behind by a lockctl run that ended (it no longer holds lock "staging"): aborted, pod "orphan" deleted`)
}

// runWith runs lockctl with args, letting mod set what flags cannot.
func runWith(t *testing.T, te *testEnv, mod func(*runOptions), args ...string) error {
	t.Helper()
	root := newRootCmd(te.f)
	root.RemoveCommand(findCmd(root, "run"))
	root.AddCommand(newRunCmd(te.f, func(o *runOptions) error { mod(o); return runRun(t.Context(), o) }))
	root.SetArgs(args)
	return root.ExecuteContext(t.Context())
}

func assertNoLock(t *testing.T, te *testEnv) {
	t.Helper()
	assert.False(t, lockHeld(t, te), "lock released")
}

// lockHeld reports whether the lock of "staging" is there and not free (a
// released lock is kept, free, for its history).
func lockHeld(t *testing.T, te *testEnv) bool {
	t.Helper()
	cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	return err != nil || !rec.IsFree()
}

// writeActions keeps the calls that change something.
func writeActions(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}
