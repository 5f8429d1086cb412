//go:build unix

package identity

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSessionOrOuter(t *testing.T) {
	ns := func(ino uint64, err error) func() (uint64, error) {
		return func() (uint64, error) { return ino, err }
	}
	ppid := func() int { return 77 }
	for _, tt := range []struct {
		name string
		sid  int
		err  error
		ns   func() (uint64, error)
		want int
	}{
		{"a session of its own", 1234, nil, ns(4026531836, nil), 1234},
		{"the outer session: its namespace", 0, nil, ns(4026531836, nil), 4026531836},
		{"getsid failed", 0, errors.New("ESRCH"), ns(4026531836, nil), 4026531836},
		{"no namespace to read: the parent", 0, nil, ns(0, errors.New("no /proc")), 77},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, sessionOrOuter(tt.sid, tt.err, tt.ns, ppid))
		})
	}
}

// TestHelperPrintSession is run by TestSessionOfOneScript as its helper
// process; it prints the session this process finds.
func TestHelperPrintSession(t *testing.T) {
	if os.Getenv("LOCKCTL_TEST_PRINT_SESSION") == "" {
		t.Skip("a helper of TestSessionOfOneScript")
	}
	fmt.Println("session", terminalSessionID())
}

// TestSessionOfOneScript: every command of one script finds the same
// session, where getsid answers and in a PID namespace whose session leader
// is outside it (unshare --pid, as a sandboxed CI job runs), also the last
// command of `bash -c`, which bash runs in place of itself, and one in a
// command substitution.
func TestSessionOfOneScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	helper := strconv.Quote(self) + " -test.run=^TestHelperPrintSession$"
	script := "a=$(" + helper + "); echo \"$a\"; " + helper + " | cat; " + helper
	for _, tt := range []struct {
		name string
		// wrap runs a command as the case needs.
		wrap []string
	}{
		{"a session", []string{"setsid", "--wait"}},
		{"outside the PID namespace", []string{"unshare", "--pid", "--fork"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := exec.Command(tt.wrap[0], append(tt.wrap[1:], "true")...).Run(); err != nil {
				t.Skipf("%s is not available here: %v", tt.wrap[0], err)
			}
			cmd := exec.Command(tt.wrap[0], append(tt.wrap[1:], "bash", "-euo", "pipefail", "-c", script)...)
			cmd.Env = append(os.Environ(), "LOCKCTL_TEST_PRINT_SESSION=1")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			var sessions []string
			for _, l := range strings.Split(string(out), "\n") {
				if s, ok := strings.CutPrefix(l, "session "); ok {
					sessions = append(sessions, s)
				}
			}
			require.Len(t, sessions, 3, "%s", out)
			assert.Equal(t, sessions[0], sessions[1], "a command substitution, a pipeline")
			assert.Equal(t, sessions[0], sessions[2], "the last command, in place of bash")
		})
	}
}
