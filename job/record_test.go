package job

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func recordGolden(name string) string { return filepath.Join("testdata", "records", name) }

func readRecordGolden(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	raw, err := os.ReadFile(recordGolden(name))
	require.NoError(t, err)
	cm := &corev1.ConfigMap{}
	require.NoError(t, yaml.UnmarshalStrict(raw, cm), "%s is a ConfigMap", name)
	return cm
}

// TestRecordGoldenCurrent pins what this lockctl writes: the golden of the
// current job record version.
func TestRecordGoldenCurrent(t *testing.T) {
	t.Parallel()
	start := metav1.NewMicroTime(epoch)
	pending := metav1.NewTime(epoch.Add(time.Minute))
	j := newJob("deploy-web-7")
	j.Namespace = ns
	j.Spec.Cluster = DefaultCluster
	j.Spec.Refs = &Refs{Org: "acme", Repo: "web", BaseRef: "main"}
	j.Spec.Lock = &LockSpec{Namespace: "staging"}
	j.Status = JobStatus{State: Pending, Description: "job pending", StartTime: &start, PendingTime: &pending, PodName: "deploy-web-7", BuildID: "7"}
	cm, err := ToConfigMap(j)
	require.NoError(t, err)
	got, err := yaml.Marshal(cm)
	require.NoError(t, err)
	path := recordGolden("v" + RecordVersion + ".yaml")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "record as written (go test ./job -run TestRecordGoldenCurrent -update rewrites it)")
}

// TestRecordVersionsRoundTrip reads the golden of every job record version
// and writes it back, unchanged and after a change of state, as the
// reconcile loop would.
func TestRecordVersionsRoundTrip(t *testing.T) {
	t.Parallel()
	current := RecordVersion
	tests := []struct {
		file        string
		wantVersion string // version written back; "" for an error
		wantErr     string
	}{
		{file: "v1.0.yaml", wantVersion: current},
		{file: "v" + current + ".yaml", wantVersion: current},
		{file: "v1.2-newer-minor.yaml", wantVersion: "1.2"},
		{file: "v2.0.yaml", wantErr: `job "deploy-web-7" has record version 2.0, which this lockctl cannot read (it reads version 1, up to ` + current + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			in := readRecordGolden(t, tt.file)
			j, err := FromConfigMap(in)
			if tt.wantErr != "" {
				var ve *VersionError
				require.ErrorAs(t, err, &ve, "%s is refused", tt.file)
				assert.EqualError(t, err, tt.wantErr)
				assert.ErrorIs(t, err, ErrCorrupt, "listings leave it out")
				return
			}
			require.NoError(t, err, "%s decodes", tt.file)
			assert.Equal(t, Pending, j.Status.State, "%s: status", tt.file)
			assert.Equal(t, "deploy-web", j.Spec.Job, "%s: spec", tt.file)

			// Written back unchanged: the same data, but the version.
			out, err := ToConfigMap(j)
			require.NoError(t, err)
			assert.Equal(t, tt.wantVersion, out.Data[dataVersion], "%s: version written", tt.file)
			assert.Equal(t, in.Labels, out.Labels, "%s: labels", tt.file)
			for k, v := range in.Data {
				if k == dataVersion {
					continue
				}
				assert.JSONEq(t, v, out.Data[k], "%s: data[%s] kept", tt.file, k)
			}
			assert.Equal(t, in.Data[dataSpec], out.Data[dataSpec], "%s: an unchanged spec is written as read", tt.file)

			// A change of state keeps every field this lockctl does not know.
			next := j.DeepCopy()
			done := metav1.NewTime(epoch.Add(time.Hour))
			next.Status.State, next.Status.CompletionTime = Success, &done
			out, err = ToConfigMap(next)
			require.NoError(t, err)
			again, err := FromConfigMap(out)
			require.NoError(t, err)
			assert.Equal(t, Success, again.Status.State)
			assert.Equal(t, j.stored, again.stored, "%s: unknown fields kept through a change of state", tt.file)
			for k := range in.Data {
				assert.Contains(t, out.Data, k, "%s: data[%s] kept", tt.file, k)
			}
		})
	}
}

// TestRecordUnknownFields: a newer minor version's fields, at the top
// level and nested, in spec and status, and its data keys, survive a
// rewrite; a spec this lockctl changes keeps the top-level ones.
func TestRecordUnknownFields(t *testing.T) {
	t.Parallel()
	j, err := FromConfigMap(readRecordGolden(t, "v1.2-newer-minor.yaml"))
	require.NoError(t, err)
	require.NotNil(t, j.stored, "something to keep")
	assert.Equal(t, map[string]string{"provenance": `{"signedBy":"release-bot"}`}, j.stored.data)
	assert.Contains(t, j.stored.specUnknown, "priority")
	assert.Contains(t, j.stored.statusUnknown, "attempts")

	j.Spec.Cluster = "eu" // a spec change drops what cannot be placed
	out, err := ToConfigMap(j)
	require.NoError(t, err)
	assert.Contains(t, out.Data[dataSpec], `"priority":5`, "top-level spec field kept")
	assert.Contains(t, out.Data[dataSpec], `"cluster":"eu"`)
	assert.NotContains(t, out.Data[dataSpec], `"mirror"`, "a nested field of a changed spec is lost")
}

func TestRecordBadVersion(t *testing.T) {
	t.Parallel()
	cm := readRecordGolden(t, "v1.1.yaml")
	cm.Data[dataVersion] = "one"
	_, err := FromConfigMap(cm)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, `decode job "deploy-web-7": version "one" is not MAJOR.MINOR`)
}
