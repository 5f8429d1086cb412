package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestDoc: the text of an indented raw string, as the commands' help is
// written (TestHelpGolden in cmd checks every command's).
func TestDoc(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw, want string }{
		{"empty", "", ""},
		{"indented block", "\n\t\tTake the lock.\n\t\t  Then wait.\n\n\t\tDone.\n\t", "Take the lock.\n  Then wait.\n\nDone.\n"},
		{"text on the first line", "Take the lock.\n\t\tThen wait.\n\t", "Take the lock.\nThen wait.\n"},
		{"spaces", "\n    a\n      b\n", "a\n  b\n"},
		{"a blank line is not counted, and kept when shorter", "\n\t\ta\n\t\n\t\tb", "a\n\t\nb"},
		{"only blanks", "\n\t\t\n\t", "\t\t\n"},
		{"no indentation", "\na\n b\n", "a\n b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Doc(tt.raw))
		})
	}
}
