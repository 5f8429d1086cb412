package record

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFrozenRecordVersionKeepsTheMinor: a frozen record has every field of
// the current one, so its version differs only in the major.
func TestFrozenRecordVersionKeepsTheMinor(t *testing.T) {
	assert.Equal(t, 1, recordVersion.Major)
	assert.Equal(t, 2, frozenRecordVersion.Major)
	assert.Equal(t, recordVersion.Minor, frozenRecordVersion.Minor)
}
