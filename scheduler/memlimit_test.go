package scheduler

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimitFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name                string
		live, ceiling, want int64
	}{
		{name: "small live heap: the floor", live: 20 * mib, want: 80 * mib},
		{name: "up to the floor", live: 57 * mib, want: 80 * mib},
		{name: "above: a quarter more plus headroom, in 4 MiB steps", live: 100 * mib, want: 136 * mib},
		{name: "rounded up", live: 101 * mib, want: 136 * mib},
		{name: "under the container's limit", live: 100 * mib, ceiling: 512 * mib, want: 136 * mib},
		{name: "never above the container's limit", live: 450 * mib, ceiling: 512 * mib, want: 512 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, memoryLimitFor(tt.live, 80*mib, tt.ceiling))
		})
	}
}

// TestTuneRuntime: GOGC is left alone; GOMEMLIMIT set (as the runtime read
// it at start) is the ceiling of the soft limit kept, and its start when
// lower than the default.
// NOTE: not parallel: it sets the process's GC percent and memory limit, and
// puts them back.
func TestTuneRuntime(t *testing.T) {
	before := debug.SetGCPercent(250)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(before); debug.SetMemoryLimit(limit) })

	stop := TuneRuntime(t.Context(), func(string) string { return "" })
	assert.Equal(t, 250, debug.SetGCPercent(250), "GOGC: left as it is")
	assert.Eventually(t, func() bool { return debug.SetMemoryLimit(-1) == DefaultMemoryLimit }, time.Minute, time.Millisecond,
		"GOMEMLIMIT unset: the default soft limit")
	stop()

	const ceiling = 32 << 20 // below the default, as the container's limit
	debug.SetMemoryLimit(ceiling)
	stop = TuneRuntime(t.Context(), func(k string) string { return map[string]string{"GOMEMLIMIT": "32MiB"}[k] })
	defer stop()
	assert.Never(t, func() bool { return debug.SetMemoryLimit(-1) != ceiling }, 100*time.Millisecond, time.Millisecond,
		"GOMEMLIMIT below the default: the limit stays at it")
}

// TestTuneRuntimeGivesTheLoopItsPs: the loop runs on the runtime's default
// number of Ps, which lockctl's short commands lower to one, unless
// GOMAXPROCS is set.
func TestTuneRuntimeGivesTheLoopItsPs(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev); debug.SetGCPercent(gc); debug.SetMemoryLimit(limit) })
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)

	runtime.GOMAXPROCS(1)
	stop := TuneRuntime(t.Context(), func(k string) string { return map[string]string{"GOMAXPROCS": "1"}[k] })
	stop()
	assert.Equal(t, 1, runtime.GOMAXPROCS(0), "GOMAXPROCS set: left as it is")

	stop = TuneRuntime(t.Context(), func(string) string { return "" })
	stop()
	assert.Equal(t, def, runtime.GOMAXPROCS(0), "GOMAXPROCS unset: the runtime's default")
}
