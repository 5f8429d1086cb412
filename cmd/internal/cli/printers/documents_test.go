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

func TestItems(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, Items(&out, "yaml", []string{"a"}))
	assert.Equal(t, "a\n", out.String(), "one item as itself")
	out.Reset()
	require.NoError(t, Items(&out, "yaml", []string{"a", "b"}))
	assert.Equal(t, "apiVersion: v1\nitems:\n- a\n- b\nkind: List\n", out.String(), "more as a List")
}

// TestEmptyListsAreLists: no items is an empty list, [] in JSON, never
// null: a script reading .items | length must not fail on none.
func TestEmptyListsAreLists(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, Items[string](&out, "json", nil))
	assert.Contains(t, out.String(), `"items": []`)
	out.Reset()
	require.NoError(t, Items(&out, "yaml", []string{}))
	assert.Contains(t, out.String(), "items: []")
	out.Reset()
	require.NoError(t, Documents(&out, "json", nil))
	assert.Contains(t, out.String(), `"items": []`)
}
