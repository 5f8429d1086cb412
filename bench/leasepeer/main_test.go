package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr string
	}{
		{
			name: "klock's timings by default",
			args: []string{"-n", "ci", "-l", "deploy", "-i", "me", "--", "true"},
			want: options{namespace: "ci", lease: "deploy", identity: "me", timings: klockTimings, command: []string{"true"}},
		},
		{
			name: "fast",
			args: []string{"-fast", "-i", "me", "--", "sh", "-c", "exit 3"},
			want: options{namespace: "default", lease: "leasepeer", identity: "me", timings: fastTimings, command: []string{"sh", "-c", "exit 3"}},
		},
		{name: "no command", args: []string{"-n", "ci"}, wantErr: "no command given"},
		{name: "unknown flag", args: []string{"-x", "--", "true"}, wantErr: "flag provided but not defined: -x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parse(tt.args, io.Discard)
			if tt.wantErr != "" {
				require.Error(t, err, "%v", tt.args)
				assert.Contains(t, err.Error(), tt.wantErr, "%v", tt.args)
				return
			}
			require.NoError(t, err, "%v", tt.args)
			assert.Equal(t, tt.want, *got, "%v", tt.args)
		})
	}
}

func TestParseRandomIdentity(t *testing.T) {
	t.Parallel()
	a, err := parse([]string{"--", "true"}, io.Discard)
	require.NoError(t, err)
	b, err := parse([]string{"--", "true"}, io.Discard)
	require.NoError(t, err)
	assert.Len(t, a.identity, 16, "8 random bytes in hex")
	assert.NotEqual(t, a.identity, b.identity, "each process its own identity")
}

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 2, run([]string{"-n", "ci"}, io.Discard, io.Discard), "no command: usage")
	code, err := runCommand(t.Context(), []string{"sh", "-c", "exit 3"}, io.Discard, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3, code, "the command's own status")
	code, err = runCommand(t.Context(), []string{"/nonexistent/command"}, io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, 1, code, "a command that cannot start")
}
