//go:build unix

package identity

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSessionID is the Unix session of this process: the terminal (or the
// script run by cron, CI, ssh) it was started from. Inside a PID namespace
// whose session leader lives outside it (a container, a sandboxed CI job)
// getsid reports 0; the parent process, the shell lockctl was started
// from, stands in for the session there, as it does where there are no
// Unix sessions.
func terminalSessionID() int {
	if sid, err := unix.Getsid(0); err == nil && sid > 0 {
		return sid
	}
	return os.Getppid()
}
