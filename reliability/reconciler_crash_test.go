package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/scheduler"
)

// helperMaxConcurrency is the global limit of the reconciler helpers.
const helperMaxConcurrency = 4

// helperOptions, when set in a reconciler helper's environment, holds its
// scheduler.Options as JSON instead of the default global limit.
const helperOptions = "LOCKCTL_HELPER_OPTIONS"

// runReconcilerHelper runs a scheduler.Controller on the job namespace
// helperNS, pods in the same namespace, with a global limit of
// helperMaxConcurrency (or the options in helperOptions), until it is
// killed. As helperEnv=reconciler-once it runs --once passes back to back
// instead, as cron entries that overlap would.
func runReconcilerHelper() {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err == nil {
		var cs kube.Interface
		if cs, err = kube.NewForConfig(cfg); err == nil {
			ns := os.Getenv(helperNS)
			opts := scheduler.Options{MaxConcurrency: helperMaxConcurrency}
			if o := os.Getenv(helperOptions); o != "" {
				opts = scheduler.Options{}
				err = json.Unmarshal([]byte(o), &opts)
			}
			opts.PodNamespace = ns
			fmt.Println("reconciling")
			for err == nil {
				var c *scheduler.Controller
				c, err = scheduler.NewController(cs, ns, map[string]scheduler.Clientset{job.DefaultCluster: cs}, opts)
				switch {
				case err != nil:
				case os.Getenv(helperEnv) == "reconciler-once":
					if err = c.RunOnce(context.Background()); err != nil {
						fmt.Fprintln(os.Stderr, "pass:", err) // a lost race; the next pass decides again
						err = nil
					}
				default:
					err = c.Run(context.Background())
					if err == nil {
						return
					}
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "reconciler helper:", err)
	os.Exit(1)
}

// startReconciler starts a reconciler helper process on ns, with the
// options, if any, given as JSON.
func startReconciler(t *testing.T, kubeconfig, ns string, options ...string) *exec.Cmd {
	t.Helper()
	return startReconcilerMode(t, "reconciler", kubeconfig, ns, options...)
}

// startReconcilerMode starts a reconciler helper: mode "reconciler" for
// the loop, "reconciler-once" for back-to-back --once passes.
func startReconcilerMode(t *testing.T, mode, kubeconfig, ns string, options ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "KUBECONFIG="+kubeconfig, helperNS+"="+ns)
	if len(options) > 0 {
		cmd.Env = append(cmd.Env, helperOptions+"="+options[0])
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// submitJobs stores n triggered jobs named job-000... in ns.
func submitJobs(t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	store := job.NewStore(kubetest.CoreV1(cs.CoreV1()), ns, job.StoreOptions{})
	for i := range n {
		_, err := store.Create(t.Context(), &job.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%03d", i)},
			Spec: job.JobSpec{
				Job:     fmt.Sprintf("build-%d", i%5),
				Type:    job.Periodic,
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
			},
		})
		require.NoError(t, err)
	}
}

// podWorkload finishes every job pod in ns that runs: each succeeds after
// `after`. It also samples how many job pods run at once, and returns the
// highest count seen.
func podWorkload(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, after time.Duration) *atomic.Int32 {
	t.Helper()
	var peak atomic.Int32
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"0",%q:%q}}}`,
		testenv.AnnotationExitCode, testenv.AnnotationDuration, after.String())
	var annotated sync.Map
	go func() {
		for ctx.Err() == nil {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: job.LabelManagedBy + "=" + job.ManagedByValue})
			if err == nil {
				active := int32(0)
				for _, p := range list.Items {
					if p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning {
						active++
					}
					if p.Status.Phase == corev1.PodRunning {
						key := p.Name + "/" + string(p.UID)
						if _, done := annotated.LoadOrStore(key, true); !done {
							_, err := cs.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
							if err != nil {
								annotated.Delete(key) // the API server may be restarting: next round
							}
						}
					}
				}
				for {
					cur := peak.Load()
					if active <= cur || peak.CompareAndSwap(cur, active) {
						break
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return &peak
}

// TestIntegrationReconcilerCrash runs two reconciler processes on a batch
// of jobs with a global limit and SIGKILLs one of them at random points,
// starting a new one each time. At the end every job is terminal and
// succeeded, no job ever had two pods (every pod has the job's one build),
// and the sampled number of active pods never exceeded the limit.
func TestIntegrationReconcilerCrash(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	jobs, kills := 32, 4
	if heavy() {
		jobs, kills = 200, 20
	}
	submitJobs(t, env.Client, ns, jobs)
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rounds(3, 15))*time.Minute)
	defer cancel()
	peak := podWorkload(ctx, t, env.Client, ns, 1500*time.Millisecond)

	procs := []*exec.Cmd{startReconciler(t, env.Kubeconfig, ns), startReconciler(t, env.Kubeconfig, ns)}
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	killed := 0
	for {
		all, err := store.List(ctx, job.ListOptions{})
		require.NoError(t, err)
		done := 0
		for _, j := range all {
			if j.IsTerminal() {
				done++
			}
		}
		if done == jobs {
			break
		}
		// Spread the kills over the run: the k-th once k/(kills+1) of the
		// jobs are done, at a random moment after that.
		if killed < kills && done >= (killed+1)*jobs/(kills+1) {
			time.Sleep(rand.N(time.Second))
			i := rand.N(len(procs))
			_ = procs[i].Process.Signal(syscall.SIGKILL)
			_ = procs[i].Wait()
			procs[i] = startReconciler(t, env.Kubeconfig, ns)
			killed++
			t.Logf("killed a reconciler (%d of %d) with %d of %d jobs terminal", killed, kills, done, jobs)
			continue
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d jobs terminal: %v", done, jobs, context.Cause(ctx))
		case <-time.After(500 * time.Millisecond):
		}
	}

	all, err := store.List(t.Context(), job.ListOptions{})
	require.NoError(t, err)
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: job.LabelManagedBy + "=" + job.ManagedByValue})
	require.NoError(t, err)
	builds := map[string]map[string]bool{}
	for _, p := range pods.Items {
		rec := p.Labels[job.LabelRecord]
		if builds[rec] == nil {
			builds[rec] = map[string]bool{}
		}
		builds[rec][job.BuildIDOf(&p)] = true
	}
	for _, j := range all {
		assert.Equal(t, job.Success, j.Status.State, "job %s ends in success: %s", j.Name, j.Status.Description)
		assert.LessOrEqual(t, len(builds[j.Name]), 1, "job %s had pods of several builds: %v", j.Name, builds[j.Name])
		if j.Status.BuildID != "" && len(builds[j.Name]) == 1 {
			assert.True(t, builds[j.Name][j.Status.BuildID], "job %s records the build of its pod", j.Name)
		}
	}
	assert.LessOrEqual(t, int(peak.Load()), helperMaxConcurrency, "sampled active pods never above the global limit")
	t.Logf("%d jobs, %d reconciler kills, peak of %d active pods sampled (limit %d)", jobs, killed, peak.Load(), helperMaxConcurrency)
}
