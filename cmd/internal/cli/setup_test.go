package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// TestFlagsFromEnv: LOCKCTL_<FLAG> sets a flag not given on the command
// line; a flag given wins; a bad value is a usage error naming the variable.
func TestFlagsFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantN   int
		wantErr string
	}{
		{name: "nothing set", want: "", wantN: 0},
		{name: "from the environment", env: map[string]string{"LOCKCTL_LOCK_NAMESPACE": "locks", "LOCKCTL_RETRIES": "3"}, want: "locks", wantN: 3},
		{name: "the command line wins", args: []string{"--lock-namespace", "ci"}, env: map[string]string{"LOCKCTL_LOCK_NAMESPACE": "locks"}, want: "ci"},
		{
			name: "a bad value", env: map[string]string{"LOCKCTL_RETRIES": "many"},
			wantErr: `invalid value "many" in LOCKCTL_RETRIES for --retries: invalid argument "many" for "--retries" flag: strconv.ParseInt: parsing "many": invalid syntax`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			ns := fs.String("lock-namespace", "", "")
			n := fs.Int("retries", 0, "")
			require.NoError(t, fs.Parse(tt.args))
			ignored, err := FlagsFromEnv(fs, func(k string) string { return tt.env[k] })
			assert.Empty(t, ignored, "no override among these flags")
			if tt.wantErr != "" {
				require.Error(t, err, "env %v", tt.env)
				assert.Equal(t, tt.wantErr, err.Error())
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit code")
				return
			}
			require.NoError(t, err, "env %v", tt.env)
			assert.Equal(t, tt.want, *ns, "--lock-namespace, env %v", tt.env)
			assert.Equal(t, tt.wantN, *n, "--retries, env %v", tt.env)
		})
	}
}

// TestFlagsFromEnvOverrides: a flag marked as an override is never taken
// from its LOCKCTL_* variable; a set
// variable is returned, once, to be reported as ignored. A flag given on
// the command line is not reported.
func TestFlagsFromEnvOverrides(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		args        []string
		env         map[string]string
		wantForce   bool
		wantToken   string
		wantNS      string
		wantIgnored []string
	}{
		{name: "nothing set"},
		{
			name:        "overrides in the environment are ignored, others taken",
			env:         map[string]string{"LOCKCTL_FORCE": "true", "LOCKCTL_TOKEN": "77", "LOCKCTL_LOCK_NAMESPACE": "locks"},
			wantNS:      "locks",
			wantIgnored: []string{"LOCKCTL_FORCE", "LOCKCTL_TOKEN"},
		},
		{
			name:        "a bad value of an override is ignored too, not an error",
			env:         map[string]string{"LOCKCTL_FORCE": "maybe"},
			wantIgnored: []string{"LOCKCTL_FORCE"},
		},
		{
			name:        "the command line sets an override, its variable is not reported",
			args:        []string{"--force"},
			env:         map[string]string{"LOCKCTL_FORCE": "true", "LOCKCTL_TOKEN": "77"},
			wantForce:   true,
			wantIgnored: []string{"LOCKCTL_TOKEN"},
		},
		{
			name:      "the command line sets both",
			args:      []string{"--force", "--token", "9"},
			env:       map[string]string{"LOCKCTL_FORCE": "true", "LOCKCTL_TOKEN": "77"},
			wantForce: true, wantToken: "9",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			force := fs.Bool("force", false, "break it")
			token := fs.String("token", "", "by token")
			ns := fs.String("lock-namespace", "", "")
			MarkOverride(fs, "force", "token")
			require.NoError(t, fs.Parse(tt.args))
			ignored, err := FlagsFromEnv(fs, func(k string) string { return tt.env[k] })
			require.NoError(t, err, "env %v", tt.env)
			assert.Equal(t, tt.wantForce, *force, "--force, env %v", tt.env)
			assert.Equal(t, tt.wantToken, *token, "--token, env %v", tt.env)
			assert.Equal(t, tt.wantNS, *ns, "--lock-namespace, env %v", tt.env)
			assert.Equal(t, tt.wantIgnored, ignored, "reported as ignored, env %v", tt.env)
		})
	}
}

func TestMarkOverride(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "root"}
	release := &cobra.Command{Use: "release"}
	acquire := &cobra.Command{Use: "acquire"}
	root.AddCommand(release, acquire)
	release.Flags().Bool("force", false, "break it")
	release.Flags().String("token", "", "by token")
	release.Flags().String("reason", "", "why")
	acquire.Flags().Bool("ignore-freeze", false, "in a freeze")
	MarkOverride(release.Flags(), "force", "token")
	MarkOverride(acquire.Flags(), "ignore-freeze")
	MarkOverride(acquire.Flags(), "ignore-freeze")

	assert.Equal(t, []string{"force", "ignore-freeze", "token"}, Overrides(root))
	assert.Equal(t, "in a freeze (command line only: never read from LOCKCTL_*)", acquire.Flags().Lookup("ignore-freeze").Usage,
		"marked once, said once")
	assert.False(t, IsOverride(release.Flags().Lookup("reason")))
	assert.Panics(t, func() { MarkOverride(release.Flags(), "nope") }, "a flag that does not exist")
	assert.Equal(t, "warning: LOCKCTL_IGNORE_FREEZE is ignored: --ignore-freeze is taken only from the command line; pass --ignore-freeze to mean it",
		IgnoredWarning("LOCKCTL_IGNORE_FREEZE"))
	assert.Equal(t, "LOCKCTL_LOCK_NAMESPACE", EnvVar("lock-namespace"))
}

// TestConfigFileHoldsNoOverride: the only config file lockctl reads
// (--config, the reconcile loop's) has no key for an override, and refuses
// one as unknown instead of applying it.
func TestConfigFileHoldsNoOverride(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"force", "ignoreFreeze", "token"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "lockctl.yaml")
			require.NoError(t, os.WriteFile(path, []byte(key+": true\n"), 0o600))
			_, err := (&ClusterFlags{ConfigFile: path}).LoadConfig()
			require.Error(t, err, "key %s", key)
			assert.Contains(t, err.Error(), "unknown key", "key %s", key)
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "key %s", key)
		})
	}
}
