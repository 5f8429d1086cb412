//go:build unix

package cmd

import "golang.org/x/sys/unix"

// sessionID is the Unix session of this process: the terminal (or the
// script run by cron, CI, ssh) it was started from.
func sessionID() int {
	sid, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	return sid
}
