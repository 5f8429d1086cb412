package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

// TestMain shares one control plane among the cmd package's integration
// tests; under -short none starts.
func TestMain(m *testing.M) { testenv.Main(m) }

// lockctlIn runs lockctl against the control plane in namespace ns and
// returns its stdout, stderr and exit code.
func lockctlIn(t *testing.T, env *testenv.Env, ns string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	err := Run(t.Context(), f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns))
	if err != nil {
		cmdutil.PrintError(&errOut, err, 0)
	}
	return out.String(), errOut.String(), cmdutil.ExitCode(err)
}

// jobFile writes a job document whose pod kwok runs, with extra metadata
// annotations, and returns its path.
func jobFile(t *testing.T, name string, annotations map[string]string, podExtra string) string {
	t.Helper()
	var ann strings.Builder
	for k, v := range annotations {
		fmt.Fprintf(&ann, "\n    %s: %q", k, v)
	}
	doc := fmt.Sprintf(`apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  name: %s
  annotations: {}%s
spec:
  job: deploy-web
  type: postsubmit
  refs: {org: acme, repo: web, baseRef: main}
  podSpec:
    tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
    containers: [{name: main, image: alpine%s}]
`, name, ann.String(), podExtra)
	doc = strings.Replace(doc, "annotations: {}\n", "annotations:\n", 1)
	if len(annotations) == 0 {
		doc = strings.Replace(doc, "  annotations:\n", "", 1)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	return path
}

func TestIntegrationSubmitReconcileGet(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	state := func(name string) job.State {
		j, err := store.Get(t.Context(), name)
		require.NoError(t, err)
		return j.Status.State
	}

	out, errOut, code := lockctlIn(t, env, ns, "submit", "-f", jobFile(t, "ok", map[string]string{testenv.AnnotationExitCode: "0"}, ""))
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, "ok\n", out)
	_, errOut, code = lockctlIn(t, env, ns, "submit", "-f", jobFile(t, "long", nil, ""))
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	_, errOut, code = lockctlIn(t, env, ns, "submit", "-f", jobFile(t, "bad", nil, ", volumeMounts: [{name: nope, mountPath: /x}]"))
	require.Equal(t, cmdutil.CodeOK, code, errOut)

	out, errOut, code = lockctlIn(t, env, ns, "reconcile", "--once", "--dry-run")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, "would start ok\nwould start long\nwould start bad\n", out)
	assert.Equal(t, job.Triggered, state("ok"), "a dry run changes nothing")

	_, errOut, code = lockctlIn(t, env, ns, "reconcile", "--once")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, job.Pending, state("ok"))
	assert.Equal(t, job.Pending, state("long"))
	assert.Equal(t, job.Error, state("bad"), "the API server refused the pod")

	require.Eventually(t, func() bool {
		_, _, code := lockctlIn(t, env, ns, "reconcile", "--once")
		return code == cmdutil.CodeOK && state("ok") == job.Success
	}, time.Minute, 200*time.Millisecond, "a later pass records the success")

	out, errOut, code = lockctlIn(t, env, ns, "abort", "long", "--reason", "not needed")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, "job \"long\" aborted: not needed\n", out)
	_, errOut, code = lockctlIn(t, env, ns, "reconcile", "--once")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, job.Aborted, state("long"))

	out, errOut, code = lockctlIn(t, env, ns, "get", "jobs")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	assert.Regexp(t, `^ok\s+deploy-web\s+postsubmit\s+success\s+\S+\s+ok\s+\d+\s+job succeeded$`, lines[1])
	assert.Regexp(t, `^long\s+deploy-web\s+postsubmit\s+aborted\s+.*not needed$`, lines[2])
	assert.Regexp(t, `^bad\s+deploy-web\s+postsubmit\s+error\s+.*pod can not be created`, lines[3])

	out, errOut, code = lockctlIn(t, env, ns, "get", "clusters")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Regexp(t, `default\s+reachable`, out)
}

func TestIntegrationReconcileUsageErrors(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("queueCapacities: {deploys: many}\n"), 0o644))
	_, errOut, code := lockctlIn(t, env, ns, "reconcile", "--once", "--config", bad)
	assert.Equal(t, cmdutil.CodeUsage, code)
	assert.Equal(t, "error: config "+bad+": queueCapacities.deploys: must be a whole number such as 2 (0: nothing runs, negative: no limit), not a string\n", errOut)

	_, errOut, code = lockctlIn(t, env, ns, "submit", "-f", "../testdata/invalid-unknown-field.yaml")
	assert.Equal(t, cmdutil.CodeUsage, code)
	assert.Contains(t, errOut, "spec.maxConcurency: Forbidden: unknown field")
	jobs, err := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{}).List(context.WithoutCancel(t.Context()), job.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, jobs, "nothing written")
}

// TestIntegrationRetentionFromConfig drives a job to success, then prunes
// with the ages of the config file: a file that keeps everything prunes
// nothing, short ages make lockctl prune and the reconcile pass delete the
// finished job records and their pods.
func TestIntegrationRetentionFromConfig(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep.yaml")
	require.NoError(t, os.WriteFile(keep, []byte("retention: {jobs: 0s, pods: 0s}\n"), 0o644))
	short := filepath.Join(dir, "short.yaml")
	require.NoError(t, os.WriteFile(short, []byte("retention: {jobs: 1ms, pods: 1ms}\n"), 0o644))
	finished := func(names ...string) {
		t.Helper()
		for _, name := range names {
			_, errOut, code := lockctlIn(t, env, ns, "submit", "-f", jobFile(t, name, map[string]string{testenv.AnnotationExitCode: "0"}, ""))
			require.Equal(t, cmdutil.CodeOK, code, errOut)
		}
		require.Eventually(t, func() bool {
			_, errOut, code := lockctlIn(t, env, ns, "reconcile", "--once", "--config", keep)
			require.Equal(t, cmdutil.CodeOK, code, errOut)
			for _, name := range names {
				j, err := store.Get(t.Context(), name)
				require.NoError(t, err, "a config file that keeps everything prunes nothing")
				if j.Status.State != job.Success {
					return false
				}
			}
			return true
		}, time.Minute, 200*time.Millisecond, "reconcile passes drive %v to success", names)
	}
	gone := func(name string) bool {
		_, err := store.Get(t.Context(), name)
		if errors.Is(err, job.ErrNotFound) {
			return true
		}
		require.NoError(t, err)
		return false
	}
	// A deleted pod may linger while it terminates.
	podGone := func(name string) bool {
		pod, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true
		}
		require.NoError(t, err)
		return pod.DeletionTimestamp != nil
	}

	finished("by-prune", "by-loop")
	_, errOut, code := lockctlIn(t, env, ns, "prune", "--config", keep)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.False(t, gone("by-prune"), "prune with a config file that keeps everything")

	// A flag wins over the file: --older-than a day keeps the job records.
	_, errOut, code = lockctlIn(t, env, ns, "prune", "--config", short, "--older-than", "24h")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.False(t, gone("by-prune"), "--older-than 24h wins over retention.jobs")
	assert.True(t, podGone("by-prune"), "retention.pods of the file applies: the pod is deleted")

	// lockctl reconcile prunes with the file's ages after its pass.
	require.Eventually(t, func() bool {
		_, errOut, code := lockctlIn(t, env, ns, "reconcile", "--once", "--config", short)
		require.Equal(t, cmdutil.CodeOK, code, errOut)
		return gone("by-loop") && gone("by-prune")
	}, time.Minute, 200*time.Millisecond, "reconcile --once with retention {jobs: 1ms} prunes the finished jobs")
	assert.True(t, podGone("by-loop"), "and their pods")
}

// TestIntegrationReconcileJobEvents drives jobs to success and to failure
// with lockctl reconcile --once on the real API server, with each
// --job-events setting, and reads the job records' Events as kubectl get
// events does: all records every state change, warnings only the failure,
// none nothing. The Events are written by the time the pass returns.
func TestIntegrationReconcileJobEvents(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, tt := range []struct {
		setting string
		want    []string
	}{
		{setting: "all", want: []string{
			"ok Normal Pending", "ok Normal Success",
			"fails Normal Pending", "fails Warning Failure",
		}},
		{setting: "warnings", want: []string{"fails Warning Failure"}},
		{setting: "none", want: nil},
	} {
		t.Run(tt.setting, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
			for name, code := range map[string]string{"ok": "0", "fails": "3"} {
				_, errOut, rc := lockctlIn(t, env, ns, "submit", "-f", jobFile(t, name, map[string]string{testenv.AnnotationExitCode: code}, ""))
				require.Equal(t, cmdutil.CodeOK, rc, errOut)
			}
			require.Eventually(t, func() bool {
				_, _, rc := lockctlIn(t, env, ns, "reconcile", "--once", "--job-events", tt.setting)
				if rc != cmdutil.CodeOK {
					return false
				}
				for _, name := range []string{"ok", "fails"} {
					if j, err := store.Get(t.Context(), name); err != nil || !j.IsTerminal() {
						return false
					}
				}
				return true
			}, time.Minute, 200*time.Millisecond, "passes drive both jobs to their end")

			list, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			var got []string
			for _, ev := range list.Items {
				if ev.InvolvedObject.Kind == "ConfigMap" {
					got = append(got, ev.InvolvedObject.Name+" "+ev.Type+" "+ev.Reason)
				}
			}
			assert.ElementsMatch(t, tt.want, got, "--job-events=%s", tt.setting)
		})
	}
}
