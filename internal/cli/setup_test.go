package cli

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/cmdutil"
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
			err := FlagsFromEnv(fs, func(k string) string { return tt.env[k] })
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
