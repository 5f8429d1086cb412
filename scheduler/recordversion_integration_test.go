package scheduler

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// newerWrite changes the job record called name as a lockctl of a newer
// record version would: a compare-and-swap on the ConfigMap, retried on
// conflicts with the reconcile loop. edit gets the record's data and its
// decoded spec and status; it returns false to write nothing.
func (it *itest) newerWrite(name, version string, edit func(data map[string]string, spec, status map[string]any) bool) {
	it.t.Helper()
	cms := it.env.Client.CoreV1().ConfigMaps(it.ns)
	for attempt := 0; ; attempt++ {
		require.Less(it.t, attempt, 20, "newer writer: too many conflicts")
		cm, err := cms.Get(it.t.Context(), name, metav1.GetOptions{})
		require.NoError(it.t, err)
		var spec, status map[string]any
		require.NoError(it.t, json.Unmarshal([]byte(cm.Data["spec"]), &spec))
		require.NoError(it.t, json.Unmarshal([]byte(cm.Data["status"]), &status))
		if !edit(cm.Data, spec, status) {
			return
		}
		for k, v := range map[string]any{"spec": spec, "status": status} {
			raw, err := json.Marshal(v)
			require.NoError(it.t, err)
			cm.Data[k] = string(raw)
		}
		cm.Data["version"] = version
		_, err = cms.Update(it.t.Context(), cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		require.NoError(it.t, err, "newer writer")
		return
	}
}

// TestIntegrationNewerJobRecord: a lockctl of a newer minor record version
// (1.9) adds a data key, spec fields (top level and nested in the pod spec)
// and status fields to a job record, before the job starts and again while
// it runs; today's reconcile loop drives the job from triggered through
// pending to success, and every field it does not know survives its
// writes, with the newer version. A record of another major version is
// refused by name and left alone.
func TestIntegrationNewerJobRecord(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.submit("newer", exits("0", "10s"))
	it.newerWrite("newer", "1.9", func(data map[string]string, spec, status map[string]any) bool {
		data["provenance"] = `{"signedBy":"release-bot"}`
		spec["priority"] = 5
		spec["podSpec"].(map[string]any)["futurePodField"] = true
		status["attempts"] = []any{map[string]any{"pod": "newer-a", "result": "evicted"}}
		return true
	})
	majorJob := it.submit("major", exits("0", "1s"))
	it.newerWrite("major", "2.0", func(data map[string]string, _, _ map[string]any) bool {
		data["record"] = `{"runs":[]}`
		return true
	})
	major, err := it.env.Client.CoreV1().ConfigMaps(it.ns).Get(t.Context(), "major", metav1.GetOptions{})
	require.NoError(t, err)

	it.run(Options{}, nil)
	it.waitState("newer", job.Pending)
	pendingSeen := true
	it.newerWrite("newer", "1.9", func(_ map[string]string, _, status map[string]any) bool {
		pendingSeen = status["state"] == string(job.Pending)
		status["note"] = "written by the newer lockctl while the job ran"
		return pendingSeen
	})
	require.True(t, pendingSeen, "the second newer write lands while the job runs (its pod runs 10 s)")
	done := it.waitState("newer", job.Success)
	assert.Equal(t, "job succeeded", done.Status.Description)

	cm, err := it.env.Client.CoreV1().ConfigMaps(it.ns).Get(t.Context(), "newer", metav1.GetOptions{})
	require.NoError(t, err)
	var spec, status map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Data["spec"]), &spec))
	require.NoError(t, json.Unmarshal([]byte(cm.Data["status"]), &status))
	assert.Equal(t, "1.9", cm.Data["version"], "the newer version stays")
	assert.Equal(t, `{"signedBy":"release-bot"}`, cm.Data["provenance"], "data key kept")
	assert.EqualValues(t, 5, spec["priority"], "top-level spec field kept")
	assert.Equal(t, true, spec["podSpec"].(map[string]any)["futurePodField"], "nested spec field kept")
	assert.Equal(t, []any{map[string]any{"pod": "newer-a", "result": "evicted"}}, status["attempts"], "status field kept")
	assert.Equal(t, "written by the newer lockctl while the job ran", status["note"], "status field written while pending kept")
	assert.Equal(t, "success", status["state"], "today's lockctl drove the state")

	_, err = it.store.Get(t.Context(), "major")
	assert.EqualError(t, err, `job "major" has record version 2.0, which this lockctl cannot read (it reads version 1, up to `+job.RecordVersion+")")
	after, err := it.env.Client.CoreV1().ConfigMaps(it.ns).Get(t.Context(), "major", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, major.ResourceVersion, after.ResourceVersion, "the record of another major version is left alone")
	assert.Nil(t, it.pod("major"), "and its job not started")

	// The newer lockctl's loop starts that job's pod: today's retention
	// leaves it alone, though it finds no record it can read for it.
	_, err = it.env.Client.CoreV1().Pods(it.ns).Create(t.Context(), job.NewPod(majorJob, it.ns, "1"), metav1.CreateOptions{})
	require.NoError(t, err)
	pruner := NewPruner(it.env.Kube.CoreV1(), it.ns, map[string]kube.PodsGetter{job.DefaultCluster: it.env.Kube.CoreV1()},
		PruneOptions{PodRetention: time.Nanosecond, JobRetention: -1})
	res, err := pruner.Prune(t.Context())
	require.NoError(t, err)
	for _, p := range res.Deleted {
		assert.NotEqual(t, "major", p.Name, "nothing of the newer major's job is pruned: %+v", p)
	}
	assert.NotNil(t, it.pod("major"), "its pod is left alone")
}
