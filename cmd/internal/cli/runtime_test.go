package cli

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTuneCLIRuntime: a short command runs on one P, a serving one gets the
// runtime's default Ps back, GOMAXPROCS in the environment wins over both,
// and neither changes the garbage collector's GOGC.
func TestTuneCLIRuntime(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev); debug.SetGCPercent(gc) })
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	unset := func(string) string { return "" }

	TuneCLIRuntime(unset)
	assert.Equal(t, CLIMaxProcs, runtime.GOMAXPROCS(0))
	assert.Equal(t, gc, debug.SetGCPercent(gc), "a short command: GOGC as it was")

	ServeRuntime(unset)
	assert.Equal(t, def, runtime.GOMAXPROCS(0), "a serving command: the runtime's default")
	assert.Equal(t, gc, debug.SetGCPercent(gc), "a serving command: GOGC as it was")

	runtime.GOMAXPROCS(def)
	debug.SetGCPercent(150)
	set := func(k string) string { return map[string]string{"GOGC": "150", "GOMAXPROCS": "3"}[k] }
	TuneCLIRuntime(set)
	assert.Equal(t, def, runtime.GOMAXPROCS(0), "GOMAXPROCS set: the runtime read it at start")
	assert.Equal(t, 150, debug.SetGCPercent(gc), "GOGC set: the runtime read it at start")
	runtime.GOMAXPROCS(3)
	debug.SetGCPercent(150)
	ServeRuntime(set)
	assert.Equal(t, 3, runtime.GOMAXPROCS(0))
	assert.Equal(t, 150, debug.SetGCPercent(gc), "GOGC set: a serving command keeps it")
}

// TestGrowStack: growing the stack by StackReserve leaves the goroutine
// running, from a shallow stack and a deep one.
func TestGrowStack(t *testing.T) {
	t.Parallel()
	GrowStack()
	var deep func(n int) int
	deep = func(n int) int {
		if n == 0 {
			GrowStack()
			return 0
		}
		return deep(n-1) + 1
	}
	assert.Equal(t, 100, deep(100))
}
