package cli

import "runtime"

// CLIMaxProcs is the number of Ps (GOMAXPROCS) lockctl's commands run on
// unless GOMAXPROCS is set. A command waits on the API server and its
// child; its own work is decoding and encoding, one thing at a time. With
// a P per CPU, every idle P spins looking for work each time a goroutine
// wakes, and twenty waiting lockctl run processes on a 2-CPU runner spent
// that on each hand-over: one P cut the gap between their commands from
// 38.0 to 30.9 ms at p50 and from 301 to 166 ms at p99, side by side in one
// run (docs/adr/0078). lockctl reconcile and lockctl dashboard, which serve
// for long, go back to the runtime's default. Set only in the process:
// the environment of a command lockctl runs is left as it was.
const CLIMaxProcs = 1

// TuneCLIRuntime sets the runtime up for a short command: CLIMaxProcs,
// unless GOMAXPROCS says otherwise. The garbage collector keeps Go's
// default (GOGC 100): a short command's heap stays under the first
// collection's goal, and GOGC 400 saved none of its wall, CPU or peak RSS
// (docs/benchmarks.md, "Start-up machinery, accounted for").
func TuneCLIRuntime(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(CLIMaxProcs)
	}
}

// ServeRuntime gives a command that serves for long the runtime's default
// number of Ps back (the CPUs, or the container's CPU limit), unless
// GOMAXPROCS is set: lockctl dashboard serves many pages at once.
func ServeRuntime(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// StackReserve is how much stack GrowStack makes room for: about what a
// command's deepest calls use (cobra, the command, the lock client,
// client-go's request, TLS and decoding); 16 KiB and 32 KiB saved the
// same (docs/adr/0100). Against a build without GrowStack, lockctl status
// TARGET peaks 0.5 MiB (2.4 %) lower and spends the same CPU
// (docs/benchmarks.md, "Start-up machinery, accounted for"): it stays
// while that figure is 2 % or more.
const StackReserve = 16 << 10

// GrowStack grows the calling goroutine's stack to hold StackReserve more
// bytes, at once and while it holds a few frames. Go copies a goroutine's
// stack each time it outgrows it, and to copy it looks up the stack map of
// every frame in the binary's function table (pclntab, 8.5 MB in lockctl):
// the copies made deep in a command, with thirty frames of cobra and
// client-go on the stack, touched windows of that table all over, each
// 64 KiB of resident memory. Main calls it first; the stack is not shrunk
// back before a garbage collection, which a short command seldom has.
//
//go:noinline
func GrowStack() {
	var frame [StackReserve]byte
	keepStack(frame[:])
}

// keepStack uses frame, so that GrowStack's frame is not optimised away.
//
//go:noinline
func keepStack(frame []byte) { frame[len(frame)-1] = 1 }
