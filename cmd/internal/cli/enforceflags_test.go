package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/enforce"
)

func TestEnforceFlags(t *testing.T) {
	t.Parallel()
	e := NewEnforceFlags()
	require.NoError(t, e.Validate(), "the defaults")
	s := e.Settings("prod", "locks")
	assert.Equal(t, enforce.ModeWarn, s.Mode)
	assert.Equal(t, enforce.DefaultKinds, s.Kinds, "the default kinds, parsed")
	assert.Equal(t, "prod", s.Target)
	assert.Equal(t, "locks", s.LockNamespace)

	for _, tt := range []struct {
		name    string
		change  func(*EnforceFlags)
		wantErr string
	}{
		{name: "bad mode", change: func(e *EnforceFlags) { e.Mode = "block" }, wantErr: `invalid --mode: unknown mode "block": use "warn", "audit" or "deny"`},
		{name: "no kinds", change: func(e *EnforceFlags) { e.Kinds = nil }, wantErr: "--kinds is empty: name at least one kind to guard, such as deployments.apps"},
		{name: "empty exempt", change: func(e *EnforceFlags) { e.Exempt = []string{""} }, wantErr: "--agent and --exempt take a user name, got an empty one"},
	} {
		e := NewEnforceFlags()
		tt.change(&e)
		assert.EqualError(t, e.Validate(), tt.wantErr, tt.name)
	}
}
