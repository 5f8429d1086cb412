package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
)

// endlessReader yields x forever and counts what it gave.
type endlessReader struct{ n int64 }

func (r *endlessReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	r.n += int64(len(p))
	return len(p), nil
}

func TestReadJobFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exact := filepath.Join(dir, "exact.yaml")
	require.NoError(t, os.WriteFile(exact, []byte(strings.Repeat("x", job.MaxFileSize)), 0o600))
	over := filepath.Join(dir, "over.yaml")
	require.NoError(t, os.WriteFile(over, []byte(strings.Repeat("x", job.MaxFileSize+1)), 0o600))
	tests := []struct {
		name     string
		file     string
		stdin    io.Reader
		wantLen  int
		wantErr  string
		wantCode int
	}{
		{name: "file at the limit", file: exact, wantLen: job.MaxFileSize},
		{name: "stdin at the limit", file: "-", stdin: strings.NewReader(strings.Repeat("x", job.MaxFileSize)), wantLen: job.MaxFileSize},
		{
			name: "file over the limit", file: over, wantCode: cmdutil.CodeUsage,
			wantErr: "parse " + over + ": job file is 1.0 MiB (1048577 bytes), larger than 1 MiB (1048576 bytes)",
		},
		{
			name: "endless stdin", file: "-", stdin: &endlessReader{}, wantCode: cmdutil.CodeUsage,
			wantErr: "parse <stdin>: job file is larger than 1 MiB (1048576 bytes)",
		},
		{name: "a directory", file: dir, wantCode: cmdutil.CodeUsage, wantErr: "read job file: read " + dir + ": is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, _, err := ReadJobFile(tt.stdin, tt.file)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Len(t, data, tt.wantLen)
				return
			}
			require.Error(t, err)
			assert.Nil(t, data)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "error %q\nwant prefix %q", err.Error(), tt.wantErr)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code")
			if r, ok := tt.stdin.(*endlessReader); ok {
				assert.LessOrEqual(t, r.n, int64(job.MaxFileSize+64<<10), "stops reading past the limit")
			}
		})
	}
}
