package printers

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDocuments(t *testing.T) {
	t.Parallel()
	objs := []any{map[string]string{"kind": "A"}, map[string]string{"kind": "B"}}
	tests := []struct {
		format, want string
	}{
		{format: "yaml", want: "kind: A\n---\nkind: B\n"},
		{format: "json", want: "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": [\n    {\n      \"kind\": \"A\"\n    },\n    {\n      \"kind\": \"B\"\n    }\n  ]\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			require.NoError(t, Documents(&out, tt.format, objs))
			assert.Equal(t, tt.want, out.String(), "format %s", tt.format)
		})
	}
}
