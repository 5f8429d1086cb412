package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The templates are parsed on the first page served, not at init (ADR
// 0071): a broken template must still fail a test, not a user's first page.
func TestPageTemplatesParseOnce(t *testing.T) {
	first := pages()
	require.NotNil(t, first)
	for _, name := range []string{"index.html", "history.html", "logs.html", "layout.html"} {
		assert.NotNil(t, first.Lookup(name), name)
	}
	assert.Same(t, first, pages(), "parsed once, then shared")
}
