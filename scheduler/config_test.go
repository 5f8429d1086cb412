package scheduler

import (
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
		{name: "unknown key", doc: "timeouts: {pendng: 1m}\n", want: "config c.yaml: timeouts.pendng: unknown key"},
		{name: "bad duration", doc: "timeouts: {running: forever}\n", want: `config c.yaml: timeouts.running: "forever" is not a duration such as 10m or 48h`},
		{name: "wrong type", doc: "maxConcurrency: lots\n", want: "config c.yaml: maxConcurrency: must be int, not string"},
		{name: "wrong type in a map", doc: "queueCapacities: {deploys: 1, nightly: lots}\n", want: "config c.yaml: queueCapacities.nightly: must be int, not string"},
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
