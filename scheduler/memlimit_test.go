package scheduler

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMemoryLimitFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	tests := []struct {
		name       string
		live, want int64
	}{
		{name: "small live heap: the floor", live: 20 * mib, want: 80 * mib},
		{name: "up to the floor", live: 57 * mib, want: 80 * mib},
		{name: "above: a quarter more plus headroom, in 4 MiB steps", live: 100 * mib, want: 136 * mib},
		{name: "rounded up", live: 101 * mib, want: 136 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, memoryLimitFor(tt.live, 80*mib))
		})
	}
}

// TestTuneRuntime: GOGC and GOMEMLIMIT set leave the runtime alone; GOGC
// unset, the collector goes back to 100 (lockctl's commands raise it).
// NOTE: not parallel: it sets the process's GC percent, and puts it back.
func TestTuneRuntime(t *testing.T) {
	before := debug.SetGCPercent(250)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(before); debug.SetMemoryLimit(limit) })

	set := map[string]string{"GOGC": "250", "GOMEMLIMIT": "1GiB"}
	TuneRuntime(t.Context(), func(k string) string { return set[k] })()
	assert.Equal(t, 250, debug.SetGCPercent(250), "GOGC set: left as it is")
	assert.Equal(t, limit, debug.SetMemoryLimit(-1), "GOMEMLIMIT set: no soft limit kept")

	// NOTE: GOMEMLIMIT stays set, so that no keeper outlives the test.
	TuneRuntime(t.Context(), func(k string) string { return map[string]string{"GOMEMLIMIT": "1GiB"}[k] })()
	assert.Equal(t, 100, debug.SetGCPercent(250), "GOGC unset: the default")
}
