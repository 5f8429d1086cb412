//go:build !unix

package identity

import "os"

// terminalSessionID stands for the terminal session where there is no Unix
// session: the parent process, the shell lockctl was started from.
func terminalSessionID() int { return os.Getppid() }
