package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

func TestContenderFlagsValidate(t *testing.T) {
	for _, tc := range []struct {
		name         string
		ttl, timeout time.Duration
		progress     string
		wantErr      string
	}{
		{name: "defaults", ttl: 30 * time.Second, progress: "auto"},
		{name: "wait forever, plain", ttl: time.Second, progress: "plain"},
		{name: "zero ttl", ttl: 0, progress: "auto", wantErr: "--ttl must be positive, got 0s"},
		{name: "negative timeout", ttl: time.Second, timeout: -time.Second, progress: "tty", wantErr: "--timeout must not be negative, got -1s"},
		{name: "unknown progress", ttl: time.Second, progress: "fancy", wantErr: `--progress must be auto, tty or plain, got "fancy"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := (&ContenderFlags{TTL: tc.ttl, Timeout: tc.timeout, Progress: tc.progress}).Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.wantErr)
			require.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "a bad flag exits 2")
		})
	}
}

func TestJobNames(t *testing.T) {
	t.Parallel()
	names := []string{"job/a", "b", "job/b"}
	assert.Equal(t, "b", JobNames(names), "b is named twice")
	assert.Equal(t, []string{"a", "b", "b"}, names, "job/ stripped in place")
	assert.Empty(t, JobNames([]string{"a", "job/c"}), "no name twice")
}
