package enforce

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{
			name: "adds metadata and annotations",
			in:   "kind: ConfigMap\n",
			want: "kind: ConfigMap\nmetadata:\n  annotations:\n    lockctl.dev/fencing-token: \"42\"\n",
		},
		{
			name: "replaces a token, keeps comments",
			in:   "kind: Service # svc\nmetadata:\n  annotations:\n    lockctl.dev/fencing-token: \"1\"\n",
			want: "kind: Service # svc\nmetadata:\n  annotations:\n    lockctl.dev/fencing-token: \"42\"\n",
		},
		{
			name: "null annotations",
			in:   "kind: Pod\nmetadata:\n  annotations: null\n",
			want: "kind: Pod\nmetadata:\n  annotations:\n    lockctl.dev/fencing-token: \"42\"\n",
		},
		{
			name: "each item of a List",
			in:   `{"kind":"List","items":[{"kind":"Pod"},{"kind":"Service","metadata":{}}]}`,
			want: `{"kind": "List", "items": [{"kind": "Pod", metadata: {annotations: {lockctl.dev/fencing-token: "42"}}}, {"kind": "Service", "metadata": {annotations: {lockctl.dev/fencing-token: "42"}}}]}` + "\n",
		},
		{name: "empty documents dropped", in: "---\n---\nkind: A\n", want: "kind: A\nmetadata:\n  annotations:\n    lockctl.dev/fencing-token: \"42\"\n"},
		{name: "not a mapping", in: "- a\n", wantErr: "stamp manifests: document 1: not a Kubernetes manifest (an object with kind and metadata)"},
		{name: "no kind", in: "kind: A\n---\nmetadata: {}\n", wantErr: "stamp manifests: document 2: a manifest without kind"},
		{name: "not YAML", in: "a: [\n", wantErr: "stamp manifests: document 1: yaml: line 1: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			err := Stamp(strings.NewReader(tt.in), &out, "42")
			if tt.wantErr != "" {
				require.Error(t, err, "input %q", tt.in)
				assert.Equal(t, tt.wantErr, err.Error(), "input %q", tt.in)
				return
			}
			require.NoError(t, err, "input %q", tt.in)
			assert.Equal(t, tt.want, out.String(), "input %q", tt.in)
		})
	}
}
