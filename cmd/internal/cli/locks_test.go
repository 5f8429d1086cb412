package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock/record"
)

func TestLockFlagsReleaser(t *testing.T) {
	t.Parallel()
	build7 := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}
	tests := []struct {
		name  string
		flags LockFlags
		force bool
		token string
		want  Releaser
	}{
		{name: "the caller's hold", flags: LockFlags{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}, want: Releaser{Identity: build7}},
		{name: "by token: whoever holds", token: "12", want: Releaser{}},
		{name: "forced: whoever holds, broken by the caller", flags: LockFlags{Owner: "acme", Repo: "web", Branch: "main"}, force: true,
			want: Releaser{Breaker: "acme/web@main"}},
		{name: "forced with --build: that hold", flags: LockFlags{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}, force: true,
			want: Releaser{Identity: build7, Breaker: build7.String()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tf := newTestFactory(t)
			got, err := tt.flags.Releaser(tf.f, tt.force, tt.token)
			require.NoError(t, err, tt.name)
			assert.Equal(t, tt.want.Identity, got.Identity, "identity")
			if tt.want.Breaker != "" {
				assert.Contains(t, got.Breaker, tt.want.Breaker, "breaker")
			} else {
				assert.Empty(t, got.Breaker, "no breaker without --force")
			}
		})
	}
}

func TestLocksToShow(t *testing.T) {
	t.Parallel()
	tf := newTestFactory(t)
	var errOut bytes.Buffer
	tf.f.IOStreams.ErrOut = &errOut
	locks, err := NewLockClient(tf.f, &LockFlags{}, LockClientOptions{})
	require.NoError(t, err)

	items, found, err := LocksToShow(t.Context(), tf.f, locks, "", false)
	require.NoError(t, err)
	assert.False(t, found, "no locks")
	assert.Empty(t, items)
	assert.Equal(t, "no locks in namespace \"default\"\n", errOut.String())

	errOut.Reset()
	items, found, err = LocksToShow(t.Context(), tf.f, locks, "prod", false)
	require.NoError(t, err)
	assert.False(t, found, "no lock of prod")
	require.Len(t, items, 1, "its free view, for -o and -w")
	assert.Equal(t, record.Name("prod"), items[0].Name)
	assert.Equal(t, "lock \"prod\" is free (default/"+record.Name("prod")+")\n", errOut.String())
}
