package scheduler

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// DefaultMemoryLimit is the soft memory limit of lockctl reconcile while its live heap is small (under about 45 MiB,
// some 10,000 jobs): it keeps the heap from growing to twice the live set
// between collections under the default GOGC. A larger live heap raises it
// (KeepMemoryLimit), so many records never make the collector run without
// pause. At 10,000 jobs the live heap raises it above this start before
// the peak (docs/benchmarks-history.md §4: 64 or 80 MiB made no difference there);
// a smaller loop stays nearer it.
const DefaultMemoryLimit = 64 << 20

// MemoryLimitCheck is how often KeepMemoryLimit follows the live heap in
// lockctl reconcile.
const MemoryLimitCheck = 10 * time.Second

// memoryHeadroom is what the soft memory limit leaves above the heap for the
// runtime's own memory: goroutine stacks, GC metadata, free spans not yet
// returned.
const memoryHeadroom = 8 << 20

// TuneRuntime sets the Go runtime up for the reconcile loop: the runtime's
// default number of Ps (GOMAXPROCS: the CPUs, or the container's CPU
// limit), unless GOMAXPROCS is set, and the soft memory
// limit KeepMemoryLimit keeps from DefaultMemoryLimit until ctx ends or the
// returned stop is called. GOMEMLIMIT, when set (deploy/ sets it to the
// container's memory limit), is the ceiling: the limit never rises above it,
// and starts there when it is below DefaultMemoryLimit. getenv reads the
// environment.
func TuneRuntime(ctx context.Context, getenv func(string) string) (stop func()) {
	if getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
	floor, ceiling := int64(DefaultMemoryLimit), int64(0)
	if getenv("GOMEMLIMIT") != "" {
		// The runtime has parsed GOMEMLIMIT at start; -1 reads it back.
		ceiling = debug.SetMemoryLimit(-1)
		floor = min(floor, ceiling)
	}
	ctx, stop = context.WithCancel(ctx)
	go KeepMemoryLimit(ctx, floor, ceiling, MemoryLimitCheck)
	return stop
}

// KeepMemoryLimit keeps the soft memory limit (debug.SetMemoryLimit) of a
// long-running loop at floor while the live heap is small, and raises it
// with the live heap (as the last collection found it) once that outgrows
// floor: to 1.25 times the live heap plus headroom. A fixed limit below a
// large live set (many job records kept) would make the collector run
// without pause; a limit only GOGC sets lets the heap grow to twice the
// live set between collections, which is most of the loop's resident
// memory. It never raises it above ceiling (0 means no ceiling), so a limit
// on the container is respected: near it, the collector runs more often
// rather than the kernel killing the process. It checks every interval
// until ctx ends.
func KeepMemoryLimit(ctx context.Context, floor, ceiling int64, every time.Duration) {
	debug.SetMemoryLimit(floor)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	last := floor
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		if limit := memoryLimitFor(int64(sample[0].Value.Uint64()), floor, ceiling); limit != last {
			debug.SetMemoryLimit(limit)
			last = limit
		}
	}
}

// memoryLimitFor is the soft memory limit for a live heap of live bytes:
// floor, or 1.25 times live plus headroom when that is more, in steps of
// 4 MiB so it does not change at every check; never above ceiling unless
// ceiling is 0.
func memoryLimitFor(live, floor, ceiling int64) int64 {
	const step = 4 << 20
	want := live + live/4 + memoryHeadroom
	want = max(floor, (want+step-1)/step*step)
	if ceiling > 0 {
		want = min(want, ceiling)
	}
	return want
}
