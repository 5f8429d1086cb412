package run

import "syscall"

// setParentDeathSignal makes the kernel send SIGTERM to the command when
// lockctl dies, so a killed lockctl does not leave it running without the
// lock.
//
// NOTE: the signal follows the OS thread that started the command, not the
// process; Go only ends threads of goroutines that exit while locked to
// them, which lockctl never does.
func setParentDeathSignal(attr *syscall.SysProcAttr) {
	attr.Pdeathsig = syscall.SIGTERM
}
