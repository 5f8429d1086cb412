//go:build !unix

package identity

import "os"

// sessionID stands for the terminal session where there is no Unix
// session: the parent process, the shell lockctl was started from.
func sessionID() int { return os.Getppid() }
