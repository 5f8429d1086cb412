package scheduler

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	c, err := ParseConfig([]byte(`
maxConcurrency: 5
queueCapacities: {deploys: 1, nightly: -1}
timeouts: {unscheduled: 1m, pending: 2m, running: 3h}
revivalLimit: 2
podNamespace: test-pods
buildClusters: {default: kind-ci, gpu: gpu-ctx}
jobURLTemplate: "https://ci.example/{{.Spec.Job}}/{{.Status.BuildID}}"
workers: 8
`), "lockctl.yaml")
	require.NoError(t, err)
	o, err := c.Options()
	require.NoError(t, err)
	assert.Equal(t, Options{
		MaxConcurrency:     5,
		QueueCapacities:    map[string]int{"deploys": 1, "nightly": -1},
		UnscheduledTimeout: time.Minute,
		PendingTimeout:     2 * time.Minute,
		RunningTimeout:     3 * time.Hour,
		RevivalLimit:       2,
		PodNamespace:       "test-pods",
		JobURLTemplate:     "https://ci.example/{{.Spec.Job}}/{{.Status.BuildID}}",
		Workers:            8,
	}, o)
	assert.Equal(t, map[string]string{"default": "kind-ci", "gpu": "gpu-ctx"}, c.BuildClusters)

	empty, err := ParseConfig([]byte("# nothing yet\n"), "empty.yaml")
	require.NoError(t, err)
	assert.Equal(t, &Config{}, empty)
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{name: "unknown key", doc: "timeouts: {pendng: 1m}\n", want: "config c.yaml: timeouts.pendng: unknown key; valid keys here: unscheduled, pending, running"},
		{name: "unknown top-level key", doc: "maxConcurency: 3\n", want: "config c.yaml: maxConcurency: unknown key; valid keys here: " +
			"maxConcurrency, queueCapacities, timeouts, revivalLimit, podNamespace, buildClusters, retention, jobURLTemplate, workers"},
		{name: "timeout of the wrong type", doc: "timeouts: {pending: 10}\n", want: "config c.yaml: timeouts.pending: must be a duration such as 10m or 48h, not a number"},
		{name: "zero timeout", doc: "timeouts: {running: 0s}\n", want: "config c.yaml: timeouts.running: must not be 0: give a duration such as 10m, or a negative one for never (leave it out for the default)"},
		{name: "zero revival limit", doc: "revivalLimit: 0\n", want: "config c.yaml: revivalLimit: must not be 0: give how often a lost pod is recreated, or a negative number for no limit (leave it out for the default)"},
		{name: "zero workers", doc: "workers: 0\n", want: "config c.yaml: workers: must be 1 or more (leave it out for the default)"},
		{name: "mapping of the wrong type", doc: "buildClusters: gpu\n", want: "config c.yaml: buildClusters: must be a mapping of cluster aliases to kubeconfig contexts such as {gpu: gpu-context}, not a string"},
		{name: "bad duration", doc: "timeouts: {running: forever}\n", want: `config c.yaml: timeouts.running: "forever" is not a duration such as 10m or 48h`},
		{name: "wrong type", doc: "maxConcurrency: lots\n", want: "config c.yaml: maxConcurrency: must be a whole number such as 10 (0: no limit), not a string"},
		{name: "wrong type in a map", doc: "queueCapacities: {deploys: 1, nightly: lots}\n", want: "config c.yaml: queueCapacities.nightly: must be a whole number such as 2 (0: nothing runs, negative: no limit), not a string"},
		{name: "negative limit", doc: "maxConcurrency: -1\n", want: "config c.yaml: maxConcurrency: must be 0 (no limit) or more"},
		{name: "cluster without context", doc: "buildClusters: {gpu: ''}\n", want: "config c.yaml: buildClusters.gpu: needs a kubeconfig context"},
		{name: "bad pod namespace", doc: "podNamespace: Test_Pods\n", want: "config c.yaml: podNamespace: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"},
		{name: "bad url template", doc: "jobURLTemplate: '{{.Spec'\n", want: "config c.yaml: jobURLTemplate: template: url:1: unclosed action"},
		{name: "yaml syntax", doc: "maxConcurrency: [1\n", want: "config c.yaml: yaml: line 1: did not find expected ',' or ']'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseConfig([]byte(tt.doc), "c.yaml")
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.ErrorIs(t, err, ErrConfig)
		})
	}
}

// TestDocsConfigExample: the config file of docs/configuration.md parses,
// sets every key the file supports, and gives the defaults it claims, so it
// works when pasted.
func TestDocsConfigExample(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(page), "cat > lockctl.yaml <<'EOF'\n")
	require.True(t, ok, "docs/configuration.md has the config example")
	doc, _, ok := strings.Cut(rest, "\nEOF\n")
	require.True(t, ok, "the config example ends with EOF")

	c, err := ParseConfig([]byte(doc), "lockctl.yaml")
	require.NoError(t, err)
	var keys []string
	for _, k := range configKeys("") {
		keys = append(keys, k)
		if k == "timeouts" {
			for _, sub := range configKeys("timeouts.x") {
				keys = append(keys, "timeouts."+sub)
			}
		}
	}
	v := reflect.ValueOf(*c)
	for _, key := range keys {
		field := v
		for _, part := range strings.Split(key, ".") {
			f, ok := fieldByTag(field.Type(), part)
			require.True(t, ok, "key %s", key)
			field = field.FieldByIndex(f.Index)
		}
		assert.False(t, field.IsZero(), "the example sets %s", key)
	}
	o, err := c.Options()
	require.NoError(t, err)
	assert.Equal(t, DefaultUnscheduledTimeout, o.UnscheduledTimeout, "the example shows the default")
	assert.Equal(t, DefaultPendingTimeout, o.PendingTimeout, "the example shows the default")
	assert.Equal(t, DefaultRunningTimeout, o.RunningTimeout, "the example shows the default")
	assert.Equal(t, DefaultRevivalLimit, o.RevivalLimit, "the example shows the default")
	assert.Equal(t, DefaultWorkers, o.Workers, "the example shows the default")
	r, err := c.Retention.PruneOptions()
	require.NoError(t, err)
	assert.Equal(t, DefaultJobRetention, r.JobRetention, "the example shows the default")
	assert.Equal(t, DefaultPodRetention, r.PodRetention, "the example shows the default")
}
