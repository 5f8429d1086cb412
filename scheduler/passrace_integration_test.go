package scheduler

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

// TestIntegrationOncePassDuplicates: a --once pass over duplicates of
// several presubmits and pull requests, with 16 workers (the default),
// exits 0 every time, 20 times, and aborts every older duplicate once (one
// completion time, one status change, one Event), the running ones'
// pods deleted (ADR 0053: the pass used to fail in 5 of 6 runs with
// `update job "old": job is finished`). Most passes run in-process; the last few
// are the built `lockctl reconcile --once`, whose exit status is checked.
func TestIntegrationOncePassDuplicates(t *testing.T) {
	t.Parallel()
	const (
		rounds       = 20
		binaryRounds = 4 // the last ones run the built binary
		workers      = 16
		runs         = 4 // runs of each job for each pull request
	)
	jobNames := []string{"unit", "lint", "e2e"}
	pulls := []int{7, 8}
	for round := range rounds {
		binary := round >= rounds-binaryRounds
		it := newITest(t)
		name := func(jobName string, pull, run int) string { return fmt.Sprintf("%s-%d-%d", jobName, pull, run) }
		submit := func(run int) {
			for _, jn := range jobNames {
				for _, pull := range pulls {
					it.submit(name(jn, pull, run), presubmitOf(pull), func(j *job.Job) { j.Spec.Job = "pull-web-" + jn })
				}
			}
		}
		clusters := map[string]Clientset{job.DefaultCluster: it.env.Kube}

		// The first runs start (their pods exist when they are superseded),
		// then three newer runs of each arrive.
		submit(0)
		first, err := NewController(it.env.Kube, it.ns, clusters, Options{Workers: workers})
		require.NoError(t, err)
		require.NoError(t, first.RunOnce(t.Context()), "round %d: the first pass", round)
		for r := 1; r < runs; r++ {
			submit(r)
		}

		var (
			mu    sync.Mutex
			ended = map[string]int{}
		)
		if binary {
			cmd := exec.CommandContext(t.Context(), lockctlBinary(t), "reconcile", "--once", "--kubeconfig", it.env.Kubeconfig,
				"-n", it.ns, "--workers", fmt.Sprint(workers))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "round %d: lockctl reconcile --once exits 0:\n%s", round, out)
		} else {
			c, err := NewController(it.env.Kube, it.ns, clusters, Options{Workers: workers, OnJobChange: func(_ context.Context, before, after *job.Job) {
				if after.IsTerminal() && !before.IsTerminal() {
					mu.Lock()
					ended[after.Name]++
					mu.Unlock()
				}
			}})
			require.NoError(t, err)
			require.NoError(t, c.RunOnce(t.Context()), "round %d: the pass fails on no race it already won", round)
		}

		all, err := it.store.List(t.Context(), job.ListOptions{})
		require.NoError(t, err)
		require.Len(t, all, len(jobNames)*len(pulls)*runs)
		for _, j := range all {
			if j.Name[len(j.Name)-1] == byte('0'+runs-1) {
				assert.Equal(t, job.Pending, j.Status.State, "round %d: the newest run %s starts", round, j.Name)
				continue
			}
			assert.Equal(t, job.Aborted, j.Status.State, "round %d: older run %s", round, j.Name)
			assert.Equal(t, job.ReasonSuperseded, j.Status.Reason, "round %d: older run %s", round, j.Name)
			assert.NotNil(t, j.Status.CompletionTime, "round %d: older run %s is complete", round, j.Name)
			if !binary {
				assert.Equal(t, 1, ended[j.Name], "round %d: older run %s ended by one write", round, j.Name)
			}
			if j.Name[len(j.Name)-1] == '0' {
				pod := it.pod(j.Name)
				assert.True(t, pod == nil || pod.DeletionTimestamp != nil, "round %d: the pod of %s is deleted", round, j.Name)
			}
		}
		if binary {
			it.assertOneAbortedEvent(round, all)
		}
	}
}

// assertOneAbortedEvent checks that each aborted job has exactly one
// Aborted Event, as lockctl reconcile records them.
func (it *itest) assertOneAbortedEvent(round int, jobs []*job.Job) {
	it.t.Helper()
	evs, err := it.env.Client.EventsV1().Events(it.ns).List(it.t.Context(), metav1.ListOptions{})
	require.NoError(it.t, err)
	count := map[string]int{}
	for _, ev := range evs.Items {
		if ev.Reason == "Aborted" {
			count[ev.Regarding.Name]++
		}
	}
	for _, j := range jobs {
		if j.Status.State == job.Aborted {
			assert.Equal(it.t, 1, count[j.Name], "round %d: one Aborted Event for %s", round, j.Name)
		}
	}
}
