//go:build !linux

package testenv

import (
	"os"
	"syscall"
)

// sysProcAttr returns nil: outside Linux there is no parent-death signal, so
// children outlive a test binary that dies without calling Env.Stop.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup kills p; outside Linux only the process itself.
func killGroup(p *os.Process) error { return p.Kill() }

// processAlive reports true: stale directories are only reaped on Linux.
func processAlive(int) bool { return true }
