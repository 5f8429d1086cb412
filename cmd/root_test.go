package cmd

import (
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
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
