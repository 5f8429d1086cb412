package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/job"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// changeBehind changes a job record straight in the fake's store, as
// another worker or reconciler would between this one's read and its
// write. It is safe inside a reactor (the tracker has a lock of its own).
func (h *harness) changeBehind(name string, mod func(*job.Job)) {
	h.t.Helper()
	obj, err := h.jobs.Tracker().Get(configMaps, jobNS, name)
	require.NoError(h.t, err)
	j, err := job.FromConfigMap(obj.(*corev1.ConfigMap))
	require.NoError(h.t, err)
	mod(j)
	cm, err := job.ToConfigMap(j)
	require.NoError(h.t, err)
	rv, err := strconv.ParseUint(j.ResourceVersion, 10, 64)
	require.NoError(h.t, err)
	cm.ResourceVersion = strconv.FormatUint(rv+1000, 10)
	require.NoError(h.t, h.jobs.Tracker().Update(configMaps, cm, jobNS))
}

// abortedBy is the status another worker writes when it aborts a job as
// superseded by newer.
func abortedBy(h *harness, newer string) func(*job.Job) {
	return func(j *job.Job) {
		now := metav1.NewTime(h.clock.Now())
		j.Status.State, j.Status.Reason = job.Aborted, job.ReasonSuperseded
		j.Status.Description = fmt.Sprintf("superseded by a newer run (%s)", newer)
		j.Status.CompletionTime = &now
	}
}

// onceOn runs change the first time the fake sees verb on the job record
// called name, before the fake serves the call (which then sees the change).
func onceOn(name string, change func()) k8stesting.ReactionFunc {
	var once sync.Once
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		if objectName(a) == name {
			once.Do(change)
		}
		return false, nil, nil
	}
}

func objectName(a k8stesting.Action) string {
	switch a := a.(type) {
	case k8stesting.GetAction:
		// NOTE: a DeleteAction is a GetAction too (GetName).
		return a.GetName()
	case k8stesting.UpdateAction:
		if cm, ok := a.GetObject().(*corev1.ConfigMap); ok {
			return cm.Name
		}
	}
	return ""
}

// updatesOf counts the status writes this reconciler sent for a job record.
func updatesOf(h *harness, name string) int {
	n := 0
	for _, a := range h.jobs.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "configmaps" && objectName(a) == name {
			n++
		}
	}
	return n
}

// TestWriteThatLostToAWinnerIsJudgedAgain: a write of the pass that loses
// to a change which already did what it wanted (another worker aborted the
// duplicate first, the record went) re-reads and judges again instead of
// failing the step, which used to fail with `update job "old": job is
// finished` (ADR 0053).
func TestWriteThatLostToAWinnerIsJudgedAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// race installs the other worker's move on the harness.
		race func(h *harness)
		// look is the job reconciled.
		look string
		// oldState is what old ends as; "" means its record is gone.
		oldState    job.State
		oldDesc     string
		oldUpdates  int
		newStarted  bool
		oldPodGone  bool
		wantNoError bool
	}{
		{
			name: "the duplicate is aborted by another worker before this one reads it",
			race: func(h *harness) {
				h.jobs.PrependReactor("get", "configmaps", onceOn("old", func() { h.changeBehind("old", abortedBy(h, "new")) }))
			},
			look:     "new",
			oldState: job.Aborted, oldDesc: "superseded by a newer run (new)",
			newStarted: true,
		},
		{
			name: "the duplicate is aborted by another worker between this one's read and write",
			race: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", onceOn("old", func() { h.changeBehind("old", abortedBy(h, "mid")) }))
			},
			look:     "new",
			oldState: job.Aborted, oldDesc: "superseded by a newer run (mid)",
			oldUpdates: 1, newStarted: true,
		},
		{
			name: "the superseded run is aborted by the newer run's worker while it aborts itself",
			race: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", onceOn("old", func() { h.changeBehind("old", abortedBy(h, "new")) }))
			},
			look:     "old",
			oldState: job.Aborted, oldDesc: "superseded by a newer run (new)",
			oldUpdates: 1,
		},
		{
			name: "the duplicate finishes on its own between this one's read and write",
			race: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", onceOn("old", func() {
					h.changeBehind("old", func(j *job.Job) {
						now := metav1.NewTime(h.clock.Now())
						j.Status.State, j.Status.Description, j.Status.CompletionTime = job.Success, "job succeeded", &now
					})
				}))
			},
			look:     "new",
			oldState: job.Success, oldDesc: "job succeeded",
			oldUpdates: 1, newStarted: true,
		},
		{
			name: "the duplicate's record is deleted before this one reads it",
			race: func(h *harness) {
				h.jobs.PrependReactor("get", "configmaps", onceOn("old", func() {
					require.NoError(h.t, h.jobs.Tracker().Delete(configMaps, jobNS, "old"))
				}))
			},
			look:       "new",
			newStarted: true,
		},
		{
			name: "the superseded run's record is deleted while it aborts itself",
			race: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", onceOn("old", func() {
					require.NoError(h.t, h.jobs.Tracker().Delete(configMaps, jobNS, "old"))
				}))
			},
			look:       "old",
			oldUpdates: 1,
		},
		{
			name: "the duplicate's pod is deleted by the winner before this one deletes it",
			race: func(h *harness) {
				h.build.PrependReactor("delete", "pods", onceOn("old", func() {
					require.NoError(h.t, h.build.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), podNS, "old"))
				}))
			},
			look:     "new",
			oldState: job.Aborted, oldDesc: "superseded by a newer run (new)",
			oldUpdates: 1, newStarted: true, oldPodGone: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{})
			h.submit("old", presubmit(7))
			h.mustReconcile("old")
			require.NotNil(t, h.pod("old"), "old runs")
			h.submit("mid", presubmit(7))
			h.submit("new", presubmit(7))
			h.setState("mid", job.JobStatus{State: job.Aborted, Reason: job.ReasonSuperseded, Description: "superseded by a newer run (new)",
				CompletionTime: &metav1.Time{Time: h.clock.Now()}})
			h.jobs.ClearActions()
			tt.race(h)

			_, err := h.reconcile(tt.look)

			require.NoError(t, err, "a race already won fails nothing")
			if tt.oldState == "" {
				_, gerr := h.store.Get(t.Context(), "old")
				assert.ErrorIs(t, gerr, job.ErrNotFound)
			} else {
				old := h.assertState("old", tt.oldState, tt.oldDesc)
				assert.True(t, old.IsTerminal(), "old is finished")
			}
			assert.Equal(t, tt.oldUpdates, updatesOf(h, "old"), "writes of old sent by this reconciler (the lost one, at most)")
			if tt.newStarted {
				assert.Equal(t, job.Pending, h.get("new").Status.State, "the newer run goes on once its duplicates are settled")
			}
			if tt.oldPodGone {
				assert.Nil(t, h.pod("old"))
			}
		})
	}
}

// TestPodGoneWhileCreatedIsJudgedAgain: a pod that exists when created
// and is gone when read (the reconciler that ended the job deleted it) is
// no error: the job is read again and judged on it.
func TestPodGoneWhileCreatedIsJudgedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	h.setState("a", job.JobStatus{State: job.Pending, BuildID: "1", PodName: "a", Description: "job pending"})
	var refused atomic.Bool
	h.build.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refused.CompareAndSwap(false, true) {
			h.changeBehind("a", func(j *job.Job) {
				now := metav1.NewTime(h.clock.Now())
				j.Status.State, j.Status.Description, j.Status.CompletionTime = job.Error, "pod deleted unexpectedly", &now
			})
			return true, nil, apierrors.NewAlreadyExists(corev1.Resource("pods"), "a")
		}
		return false, nil, nil
	})

	_, err := h.reconcile("a")

	require.NoError(t, err)
	h.assertState("a", job.Error, "pod deleted unexpectedly")
	assert.Nil(t, h.pod("a"), "no pod for the job that ended meanwhile")
}

// TestRunOnceDuplicatesManyWorkers: a --once pass with several workers over
// duplicates of several jobs and pull requests (ADR 0053: the pass used
// to fail in 5 of 6 runs) finishes without error, 20 times over, and aborts
// every older duplicate once: one status change, one completion time.
func TestRunOnceDuplicatesManyWorkers(t *testing.T) {
	t.Parallel()
	const (
		rounds = 20
		runs   = 4 // runs of each job for each pull request
	)
	jobNames := []string{"unit", "lint", "e2e"}
	pulls := []int{7, 8}
	for round := range rounds {
		t.Run(fmt.Sprintf("pass %d", round), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{})
			var newest []string
			for _, name := range jobNames {
				for _, pull := range pulls {
					for r := range runs {
						n := fmt.Sprintf("%s-%d-%d", name, pull, r)
						h.submit(n, presubmit(pull), func(j *job.Job) { j.Spec.Job = "pull-web-" + name })
						if r == runs-1 {
							newest = append(newest, n)
						}
					}
				}
			}
			var (
				mu      sync.Mutex
				aborted = map[string]int{}
			)
			c := h.controller(Options{Workers: 8, OnJobChange: func(_ context.Context, before, after *job.Job) {
				if after.IsTerminal() && !before.IsTerminal() {
					mu.Lock()
					aborted[after.Name]++
					mu.Unlock()
				}
			}})

			require.NoError(t, c.RunOnce(t.Context()), "the pass fails on no race it already won")

			all, err := h.store.List(t.Context(), job.ListOptions{})
			require.NoError(t, err)
			for _, j := range all {
				if contains(newest, j.Name) {
					assert.Equal(t, job.Pending, j.Status.State, "the newest run %s starts", j.Name)
					continue
				}
				assert.Equal(t, job.Aborted, j.Status.State, "older run %s", j.Name)
				assert.Equal(t, job.ReasonSuperseded, j.Status.Reason, "older run %s", j.Name)
				assert.NotNil(t, j.Status.CompletionTime, "older run %s is complete", j.Name)
				assert.Equal(t, 1, aborted[j.Name], "older run %s aborted by one write", j.Name)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
