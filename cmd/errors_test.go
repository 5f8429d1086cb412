package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockctl/lockctl/lock"
)

func TestExplainLockErrors(t *testing.T) {
	t.Parallel()
	holder := lock.Claim{Identity: lock.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}}
	tests := []struct {
		name     string
		err      error
		wantMsg  string
		wantHint string
	}{
		{
			name:     "missing lock namespace",
			err:      &lock.NamespaceError{Namespace: "does-not-exist"},
			wantMsg:  `lock namespace "does-not-exist" does not exist`,
			wantHint: "create it with `kubectl create namespace does-not-exist`, or keep locks in another namespace with --lock-namespace",
		},
		{
			name:     "corrupt record names the command that removes it",
			err:      &lock.InvalidError{Namespace: "ci", Name: "lockctl-lock-staging", Target: "staging", Field: "holder.build", Reason: "empty"},
			wantMsg:  "lock ci/lockctl-lock-staging is invalid: holder.build: empty",
			wantHint: "inspect it with `kubectl get configmap -n ci lockctl-lock-staging -o yaml`; remove it with `lockctl release staging --lock-namespace ci --force`",
		},
		{
			name:     "release by a non-holder points to --force, not to the holder's identity",
			err:      &lock.NotHolderError{Target: "staging", Namespace: "ci", Holder: holder},
			wantMsg:  `lock on "staging" is held by acme/web@main#7, not by the caller`,
			wantHint: "only its holder releases it; to break it, run `lockctl release staging --lock-namespace ci --force` (it says whose lock it broke)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, hint := explain(tt.err)
			assert.Equal(t, tt.wantMsg, msg, "message of %T", tt.err)
			assert.Equal(t, tt.wantHint, hint, "hint of %T", tt.err)
		})
	}
}
