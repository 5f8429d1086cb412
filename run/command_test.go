package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQuoteCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{name: "plain words", argv: []string{"./deploy.sh", "--env", "staging"}, want: `./deploy.sh --env staging`},
		{name: "quotes and empty", argv: []string{"sh", "-c", "echo it's; exit 7", ""}, want: `sh -c 'echo it'\''s; exit 7' ''`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, QuoteCommand(tt.argv), "argv %q", tt.argv)
		})
	}
}
