//go:build !unix

package lock

import "os"

// sessionID stands for the terminal session where there is no Unix
// session: the parent process, the shell lockctl was started from.
func sessionID() int { return os.Getppid() }
