package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// record is a job record finished (when state is terminal) ago before
// epoch, with its pod.
type record struct {
	name     string
	jobName  string
	typ      job.Type
	state    job.State
	finished time.Duration // before epoch; also orders the starts
	pod      corev1.PodPhase
	// version, when set, is the record version written (a newer lockctl's).
	version string
}

func (r record) objects(t *testing.T) (*corev1.ConfigMap, *corev1.Pod) {
	t.Helper()
	start := metav1.NewMicroTime(epoch.Add(-r.finished - time.Minute))
	j := &job.Job{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: jobNS, UID: k8stypes.UID("uid-" + r.name), ResourceVersion: "1"},
		Spec:       job.JobSpec{Job: r.jobName, Type: r.typ, PodSpec: &corev1.PodSpec{}},
		Status:     job.JobStatus{State: r.state, StartTime: &start},
	}
	if j.Spec.Job == "" {
		j.Spec.Job = "deploy-web"
	}
	if j.Spec.Type == "" {
		j.Spec.Type = job.Postsubmit
	}
	if r.state != job.Triggered && r.state != job.Pending {
		done := metav1.NewTime(epoch.Add(-r.finished))
		j.Status.CompletionTime = &done
	}
	cm, err := job.ToConfigMap(j)
	require.NoError(t, err)
	if r.version != "" {
		cm.Data["version"] = r.version
	}
	if r.pod == "" {
		return cm, nil
	}
	pod := job.NewPod(j, podNS, "1")
	pod.UID = k8stypes.UID("pod-" + r.name)
	pod.ResourceVersion = "1"
	pod.CreationTimestamp = metav1.NewTime(start.Time)
	pod.Status.Phase = r.pod
	return cm, pod
}

func TestPrunerPrune(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	tests := []struct {
		name        string
		records     []record
		orphans     []*corev1.Pod
		opts        PruneOptions
		wantDeleted []string
	}{
		{
			name: "defaults: records after a week, pods after a day",
			records: []record{
				{name: "old", state: job.Success, finished: 8 * day, pod: corev1.PodSucceeded},
				{name: "week", state: job.Failure, finished: 6 * day, pod: corev1.PodFailed},
				{name: "hour", state: job.Error, finished: time.Hour, pod: corev1.PodFailed},
				{name: "running", state: job.Pending, finished: 30 * day, pod: corev1.PodRunning},
				{name: "waiting", state: job.Triggered, finished: 30 * day},
			},
			wantDeleted: []string{`pod "pods/old"`, `pod "pods/week"`, `job "jobs/old"`},
		},
		{
			name: "newest run of a periodic job is kept",
			records: []record{
				{name: "nightly-1", jobName: "nightly", typ: job.Periodic, state: job.Success, finished: 10 * day},
				{name: "nightly-2", jobName: "nightly", typ: job.Periodic, state: job.Failure, finished: 9 * day},
				{name: "weekly-1", jobName: "weekly", typ: job.Periodic, state: job.Success, finished: 20 * day},
			},
			wantDeleted: []string{`job "jobs/nightly-1"`},
		},
		{
			name:        "short ages",
			opts:        PruneOptions{JobRetention: time.Minute, PodRetention: time.Second},
			records:     []record{{name: "a", state: job.Aborted, finished: 2 * time.Minute, pod: corev1.PodRunning}},
			wantDeleted: []string{`pod "pods/a"`, `job "jobs/a"`},
		},
		{
			name:    "negative ages keep everything",
			opts:    PruneOptions{JobRetention: -1, PodRetention: -1},
			records: []record{{name: "a", state: job.Success, finished: 100 * day, pod: corev1.PodSucceeded}},
		},
		{
			name: "pods whose record is gone: finished, or older than the pod age",
			orphans: []*corev1.Pod{
				orphan("finished", corev1.PodSucceeded, 2*time.Minute),
				orphan("just-finished", corev1.PodSucceeded, 30*time.Second),
				orphan("running", corev1.PodRunning, time.Hour),
				orphan("running-long", corev1.PodRunning, 2*day),
			},
			wantDeleted: []string{`pod "pods/finished"`, `pod "pods/running-long"`},
		},
		{
			name: "a record of a newer major version and its pod are left alone",
			records: []record{
				{name: "newer", state: job.Success, finished: 30 * day, pod: corev1.PodSucceeded, version: "2.0"},
				{name: "newer-minor", state: job.Success, finished: 30 * day, pod: corev1.PodSucceeded, version: "1.9"},
			},
			wantDeleted: []string{`pod "pods/newer-minor"`, `job "jobs/newer-minor"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var jobObjs, podObjs []runtime.Object
			for _, r := range tt.records {
				cm, pod := r.objects(t)
				jobObjs = append(jobObjs, cm)
				if pod != nil {
					podObjs = append(podObjs, pod)
				}
			}
			for _, p := range tt.orphans {
				podObjs = append(podObjs, p)
			}
			for _, dry := range []bool{true, false} {
				jobs, pods := fake.NewClientset(jobObjs...), fake.NewClientset(podObjs...)
				opts := tt.opts
				opts.PodNamespace, opts.DryRun = podNS, dry
				opts.Clock = testingclock.NewFakeClock(epoch)
				s := NewPruner(kubetest.CoreV1(jobs.CoreV1()), jobNS, map[string]kube.PodsGetter{"default": kubetest.CoreV1(pods.CoreV1())}, opts)
				res, err := s.Prune(t.Context())
				require.NoError(t, err)
				var got []string
				for _, p := range res.Deleted {
					got = append(got, p.Kind+` "`+p.Namespace+"/"+p.Name+`"`)
				}
				assert.Equal(t, tt.wantDeleted, got, "dry run %v", dry)

				cms, err := jobs.CoreV1().ConfigMaps(jobNS).List(t.Context(), metav1.ListOptions{})
				require.NoError(t, err)
				left, err := pods.CoreV1().Pods(podNS).List(t.Context(), metav1.ListOptions{})
				require.NoError(t, err)
				wantLeft := len(jobObjs) + len(podObjs)
				if !dry {
					wantLeft -= len(tt.wantDeleted)
				}
				assert.Equal(t, wantLeft, len(cms.Items)+len(left.Items), "objects left, dry run %v", dry)
			}
		})
	}
}

func orphan(name string, phase corev1.PodPhase, age time.Duration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: podNS, UID: k8stypes.UID("pod-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(epoch.Add(-age)),
			Labels: map[string]string{
				job.LabelManagedBy: job.ManagedByValue, job.LabelRecordNamespace: jobNS,
				job.LabelRecord: name, job.LabelRecordUID: "uid-" + name,
			},
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func TestShortAge(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		3 * 24 * time.Hour: "3d", 30 * time.Hour: "30h", 90 * time.Minute: "90m", 5 * time.Second: "5s",
	} {
		assert.Equal(t, want, shortAge(in), "%v", in)
	}
}

// TestPrunerRun prunes at once and then at every interval.
func TestPrunerRun(t *testing.T) {
	t.Parallel()
	first, _ := record{name: "first", state: job.Success, finished: 8 * 24 * time.Hour}.objects(t)
	jobs := fake.NewClientset(first)
	clock := testingclock.NewFakeClock(epoch)
	s := NewPruner(kubetest.CoreV1(jobs.CoreV1()), jobNS, nil, PruneOptions{Clock: clock})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx, time.Hour) }()
	left := func() int {
		cms, err := jobs.CoreV1().ConfigMaps(jobNS).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		return len(cms.Items)
	}
	require.Eventually(t, func() bool { return left() == 0 && clock.HasWaiters() }, 10*time.Second, time.Millisecond, "the first pass runs at once")

	second, _ := record{name: "second", state: job.Success, finished: 8 * 24 * time.Hour}.objects(t)
	_, err := jobs.CoreV1().ConfigMaps(jobNS).Create(t.Context(), second, metav1.CreateOptions{})
	require.NoError(t, err)
	clock.Step(time.Hour)
	require.Eventually(t, func() bool { return left() == 0 }, 10*time.Second, time.Millisecond, "the next pass after the interval")
	cancel()
	<-done
}

func TestConfigRetention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		doc      string
		wantJobs time.Duration
		wantPods time.Duration
		wantErr  string
	}{
		{name: "absent: the defaults", doc: "workers: 2\n"},
		{name: "both", doc: "retention: {jobs: 720h, pods: 6h}\n", wantJobs: 720 * time.Hour, wantPods: 6 * time.Hour},
		{name: "one", doc: "retention: {pods: 30m}\n", wantPods: 30 * time.Minute},
		{name: "0 keeps everything", doc: "retention: {jobs: 0s, pods: \"0\"}\n", wantJobs: -1, wantPods: -1},
		{name: "negative", doc: "retention: {jobs: -1h}\n", wantErr: "config c.yaml: retention.jobs: must be 0 (keep everything) or more"},
		{name: "not a duration", doc: "retention: {pods: 1d}\n", wantErr: `config c.yaml: retention.pods: "1d" is not a duration such as 168h or 24h`},
		{name: "a number", doc: "retention: {pods: 24}\n", wantErr: "config c.yaml: retention.pods: must be a duration such as 168h (0s: keep everything), not a number"},
		{name: "not a mapping", doc: "retention: 24h\n", wantErr: "config c.yaml: retention: must be a mapping such as {jobs: 168h, pods: 24h}, not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := ParseConfig([]byte(tt.doc), "c.yaml")
			if tt.wantErr != "" {
				require.Error(t, err, tt.doc)
				assert.ErrorContains(t, err, tt.wantErr, tt.doc)
				assert.ErrorIs(t, err, ErrConfig, tt.doc)
				return
			}
			require.NoError(t, err, tt.doc)
			o, err := c.Retention.PruneOptions()
			require.NoError(t, err, tt.doc)
			assert.Equal(t, tt.wantJobs, o.JobRetention, "jobs of %q", tt.doc)
			assert.Equal(t, tt.wantPods, o.PodRetention, "pods of %q", tt.doc)
		})
	}
}

// TestConfigRetentionApply: an age given (not 0) wins over the file's; the
// file fills the ages left at 0, and what both leave at 0 stays 0, the
// default.
func TestConfigRetentionApply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		retention  ConfigRetention
		given      PruneOptions
		want       PruneOptions
		wantErrKey string
	}{
		{name: "neither", want: PruneOptions{}},
		{name: "the file", retention: ConfigRetention{Jobs: "720h", Pods: "0"}, want: PruneOptions{JobRetention: 720 * time.Hour, PodRetention: -1}},
		{
			name: "a given age wins", retention: ConfigRetention{Jobs: "720h", Pods: "6h"}, given: PruneOptions{PodRetention: time.Hour},
			want: PruneOptions{JobRetention: 720 * time.Hour, PodRetention: time.Hour},
		},
		{name: "a bad key", retention: ConfigRetention{Pods: "1d"}, wantErrKey: "retention.pods"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.retention.Apply(tt.given)
			if tt.wantErrKey != "" {
				var ce *ConfigError
				require.ErrorAs(t, err, &ce, "%+v", tt.retention)
				assert.Equal(t, tt.wantErrKey, ce.Key)
				return
			}
			require.NoError(t, err, "%+v", tt.retention)
			assert.Equal(t, tt.want, got, "%+v over %+v", tt.retention, tt.given)
		})
	}
}
