package record

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePodRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    PodRef
		wantErr string
	}{
		{name: "name only: the namespace is the caller's to pick", in: "runner-7", want: PodRef{Name: "runner-7"}},
		{name: "namespace and name", in: "ci/runner-7", want: PodRef{Namespace: "ci", Name: "runner-7"}},
		{name: "a dotted name is a subdomain", in: "ci/runner.7", want: PodRef{Namespace: "ci", Name: "runner.7"}},
		{name: "empty namespace before the slash", in: "/runner", wantErr: "namespace: a lowercase RFC 1123 label must consist of"},
		{name: "dotted namespace", in: "c.i/runner", wantErr: "namespace: "},
		{name: "empty name", in: "ci/", wantErr: "name: a lowercase RFC 1123 subdomain must consist of"},
		{name: "control character", in: "runner\x1b", wantErr: "name: a lowercase RFC 1123 subdomain must consist of"},
		{name: "two slashes", in: "ci/a/b", wantErr: "name: a lowercase RFC 1123 subdomain must consist of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePodRef(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err, "input %q", tt.in)
				assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "input %q: error %q, want prefix %q", tt.in, err, tt.wantErr)
				return
			}
			require.NoError(t, err, "input %q", tt.in)
			assert.Equal(t, tt.want, got, "input %q", tt.in)
		})
	}
}
