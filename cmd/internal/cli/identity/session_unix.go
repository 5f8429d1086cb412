//go:build unix

package identity

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSessionID is the Unix session of this process: the terminal (or the
// script run by cron, CI, ssh) it was started from.
func terminalSessionID() int {
	sid, err := unix.Getsid(0)
	return sessionOrOuter(sid, err, pidNamespace, os.Getppid)
}

// sessionOrOuter picks the session number from getsid's answer. Inside a
// PID namespace whose session leader lives outside it (a container started
// without a terminal, a sandboxed CI job) getsid reports 0: every process
// of the namespace that did not start a session of its own is in that one
// outer session, so the namespace (its inode, from ns) stands for it. It is
// the same for every command of a script, also for one bash runs in place
// of itself (the last command of `bash -c`) or in a command substitution,
// which a parent process ID is not. Without either, the parent process.
func sessionOrOuter(sid int, err error, ns func() (uint64, error), ppid func() int) int {
	if err == nil && sid > 0 {
		return sid
	}
	if ino, err := ns(); err == nil && ino > 0 && ino <= uint64(^uint(0)>>1) {
		return int(ino)
	}
	return ppid()
}

// pidNamespace is the inode of this process's PID namespace.
func pidNamespace() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}
