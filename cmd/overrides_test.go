package cmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// TestOverridesOnlyFromTheCommandLine: the flags that break a lock's
// promises are marked as overrides on every command that has them, and are
// never taken from LOCKCTL_* (ADR 0054: a pipeline-level
// LOCKCTL_FORCE=true made every release break whoever held the lock).
func TestOverridesOnlyFromTheCommandLine(t *testing.T) {
	t.Parallel()
	root := newRootCmd(newTestEnv(t).f)
	assert.Equal(t, []string{"force", "ignore-freeze", "token"}, cli.Overrides(root), "the overrides of every command")
	for _, path := range [][]string{{"release", "force"}, {"release", "token"}, {"acquire", "ignore-freeze"}, {"run", "ignore-freeze"}} {
		fl := findCmd(root, path[0]).Flags().Lookup(path[1])
		require.NotNil(t, fl, "%s --%s", path[0], path[1])
		assert.True(t, cli.IsOverride(fl), "%s --%s is an override", path[0], path[1])
		assert.Contains(t, fl.Usage, "command line only", "%s --%s says so in its help", path[0], path[1])
	}
	assert.Contains(t, root.Long, "ignored with a warning): --force, --ignore-freeze, --token.", "lockctl --help names them")
}

// TestReleaseForceFromEnvironmentIgnored: with LOCKCTL_FORCE=true (and
// LOCKCTL_TOKEN) set, a release of someone else's lock breaks nothing; one
// line per variable says it was ignored and how to mean it.
func TestReleaseForceFromEnvironmentIgnored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		objs     []*corev1.ConfigMap
		wantCode int
		wantLock bool
		warnings []string
	}{
		{
			name:     "LOCKCTL_FORCE=true: refused, lock kept",
			env:      map[string]string{"LOCKCTL_FORCE": "true"},
			args:     []string{"release", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"},
			objs:     []*corev1.ConfigMap{heldLock(t, "41")},
			wantCode: cmdutil.CodeError,
			wantLock: true,
			warnings: []string{"warning: LOCKCTL_FORCE is ignored: --force is taken only from the command line; pass --force to mean it"},
		},
		{
			name:     "LOCKCTL_TOKEN and LOCKCTL_FORCE: refused, lock kept, each reported",
			env:      map[string]string{"LOCKCTL_TOKEN": "77", "LOCKCTL_FORCE": "1"},
			args:     []string{"release", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"},
			objs:     []*corev1.ConfigMap{tokenLock(t, "41", "77")},
			wantCode: cmdutil.CodeError,
			wantLock: true,
			warnings: []string{
				"warning: LOCKCTL_FORCE is ignored: --force is taken only from the command line; pass --force to mean it",
				"warning: LOCKCTL_TOKEN is ignored: --token is taken only from the command line; pass --token to mean it",
			},
		},
		{
			name:     "the flag on the command line still breaks it, without a warning",
			env:      map[string]string{"LOCKCTL_FORCE": "true"},
			args:     []string{"release", "staging", "--force"},
			objs:     []*corev1.ConfigMap{heldLock(t, "41")},
			wantLock: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for k, v := range tt.env {
				te.env[k] = v
			}
			for _, o := range tt.objs {
				_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), o, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			err := te.run(tt.args...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			assert.Equal(t, tt.wantLock, lockHeld(t, te), "lock still held")
			var got []string
			for _, line := range strings.Split(te.errOut.String(), "\n") {
				if _, w, ok := strings.Cut(line, "warning: "); ok {
					got = append(got, "warning: "+w)
				}
			}
			assert.Equal(t, tt.warnings, got, "one warning per override variable set, stderr %q", te.errOut.String())
		})
	}
}

// TestIgnoreFreezeFromEnvironmentIgnored: LOCKCTL_IGNORE_FREEZE=true does
// not make acquire or run override a freeze.
func TestIgnoreFreezeFromEnvironmentIgnored(t *testing.T) {
	t.Parallel()
	for _, verb := range []string{"acquire", "run"} {
		t.Run(verb, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			te.env["LOCKCTL_IGNORE_FREEZE"] = "true"
			args := []string{"staging"}
			if verb == "run" {
				args = []string{"--lock", "staging", "--", "true"}
			}
			switch verb {
			case "acquire":
				got, err := parseArgsIn(t, te, []string{verb}, args, newAcquireCmd)
				require.NoError(t, err)
				assert.False(t, got.IgnoreFreeze, "--ignore-freeze not taken from the environment")
			case "run":
				got, err := parseArgsIn(t, te, []string{verb}, args, newRunCmd)
				require.NoError(t, err)
				assert.False(t, got.IgnoreFreeze, "--ignore-freeze not taken from the environment")
			}
			assert.Equal(t, 1, strings.Count(te.errOut.String(), "warning: LOCKCTL_IGNORE_FREEZE is ignored: --ignore-freeze is taken only from the command line"),
				"reported once: %q", te.errOut.String())
		})
	}
}
