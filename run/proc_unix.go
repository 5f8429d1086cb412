//go:build unix

package run

import (
	"os"
	"syscall"
)

// childProcAttr starts the command of a local command in a process
// group of its own when newGroup is set, and asks the kernel to stop it
// when lockctl dies, where the platform can (Linux).
func childProcAttr(newGroup bool) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: newGroup}
	setParentDeathSignal(attr)
	return attr
}

// signalChild sends sig to the command, or to its whole process group when
// it has one of its own.
func signalChild(p *os.Process, sig os.Signal, group bool) error {
	s, ok := sig.(syscall.Signal)
	if !group || !ok {
		return p.Signal(sig)
	}
	return syscall.Kill(-p.Pid, s)
}

// exitStatus is the status a shell reports for the command: its exit code,
// or 128+n when signal n ended it.
func exitStatus(ps *os.ProcessState) int {
	if sig, ok := exitSignal(ps); ok {
		return 128 + int(sig.(syscall.Signal))
	}
	return ps.ExitCode()
}

// exitSignal returns the signal that ended the command, if one did.
func exitSignal(ps *os.ProcessState) (os.Signal, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return nil, false
	}
	return ws.Signal(), true
}
