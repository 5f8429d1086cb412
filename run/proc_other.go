//go:build unix && !linux

package run

import "syscall"

// setParentDeathSignal does nothing: only Linux can signal a child when its
// parent dies. A killed lockctl leaves the command running; the lock still
// expires after --ttl.
func setParentDeathSignal(*syscall.SysProcAttr) {}
