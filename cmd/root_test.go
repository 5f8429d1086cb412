package cmd

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type validatedOptions struct {
	arg   string
	err   error
	calls []string
}

func (o *validatedOptions) validate() error {
	o.calls = append(o.calls, "validate "+o.arg)
	return o.err
}

type plainOptions struct{ calls []string }

// TestRunE: complete, then validate (when the options have it), then the
// test hook instead of run; a validation error stops before either.
func TestRunE(t *testing.T) {
	t.Parallel()
	bad := errors.New("bad flag")
	run := func(_ context.Context, o *validatedOptions) error { o.calls = append(o.calls, "run"); return nil }
	hook := func(o *validatedOptions) error { o.calls = append(o.calls, "runF"); return nil }
	complete := func(o *validatedOptions) func(*cobra.Command, []string) {
		return func(_ *cobra.Command, args []string) { o.arg = args[0] }
	}
	tests := []struct {
		name    string
		err     error
		runF    func(*validatedOptions) error
		want    []string
		wantErr error
	}{
		{name: "run", want: []string{"validate x", "run"}},
		{name: "the test hook instead", runF: hook, want: []string{"validate x", "runF"}},
		{name: "invalid", err: bad, runF: hook, want: []string{"validate x"}, wantErr: bad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := &validatedOptions{err: tt.err}
			err := runE(o, tt.runF, run, complete(o))(&cobra.Command{}, []string{"x"})
			assert.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, tt.want, o.calls)
		})
	}
	p := &plainOptions{}
	err := runE(p, nil, func(_ context.Context, p *plainOptions) error { p.calls = append(p.calls, "run"); return nil }, nil)(&cobra.Command{}, nil)
	assert.NoError(t, err)
	assert.Equal(t, []string{"run"}, p.calls, "no validate, no complete: run")
}

// TestCommandsByName: the table newRootCmdFor finds a command in names
// each command as it is called, and args that do not start with one get
// the whole tree.
func TestCommandsByName(t *testing.T) {
	t.Parallel()
	f := newTestEnv(t).f
	for _, c := range commands {
		cmd := c.new(f)
		assert.Equal(t, c.name, cmd.Name(), "commands names %q by its name", cmd.Use)
		assert.Empty(t, cmd.Aliases, "%s: commands are found by name, not alias", c.name)
		if c.name == "completion" {
			assert.Len(t, newRootCmdFor(f, []string{c.name}).Commands(), len(commands), "completion gets the whole tree")
			continue
		}
		root := newRootCmdFor(f, []string{c.name, "--help"})
		require.Len(t, root.Commands(), 1, "args starting with %q", c.name)
		assert.Equal(t, cmd.Use, root.Commands()[0].Use, "args starting with %q", c.name)
	}
	for _, args := range [][]string{nil, {"help"}, {"--help"}, {"-v", "2", "status"}, {"__complete", "st"}, {"stat"}, {"Status"}} {
		assert.Len(t, newRootCmdFor(f, args).Commands(), len(commands), "args %q get the whole tree", args)
	}
}
