package schema

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type sample struct {
	Name string `json:"name"`
}

// TestDecodeEncodeKeeping: a member the struct does not name (any case
// of a known name is known) is kept on decoding and written back on
// encoding, beside the known ones.
func TestDecodeEncodeKeeping(t *testing.T) {
	t.Parallel()
	var s sample
	unknown, err := DecodeKeeping([]byte(`{"NAME":"web","later":{"a":1}}`), &s, Fields(sample{}))
	require.NoError(t, err)
	assert.Equal(t, "web", s.Name)
	assert.Equal(t, map[string]json.RawMessage{"later": json.RawMessage(`{"a":1}`)}, unknown)

	out, err := EncodeKeeping(s, unknown)
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"web","later":{"a":1}}`, string(out))

	_, err = DecodeKeeping([]byte(`{"name":1}`), &s, Fields(sample{}))
	require.Error(t, err)
}
