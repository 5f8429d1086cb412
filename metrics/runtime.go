package metrics

import (
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// goGauge is one of the Go collector's families of a single value.
type goGauge struct {
	name, help string
	typ        Type
	value      func(*runtime.MemStats) float64
}

// NOTE: the names, types and help texts are client_golang's (v1.23) of
// collectors.NewGoCollector() with its default options, so that
// dashboards and alerts of lockctl's Deployment keep working;
// TestRuntimeFamiliesAreClientGolangs compares them with client_golang's.
var goGauges = []goGauge{
	{"go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.Alloc) }},
	{"go_memstats_alloc_bytes_total", "Total number of bytes allocated in heap until now, even if released already. Equals to /gc/heap/allocs:bytes.", CounterType, func(m *runtime.MemStats) float64 { return float64(m.TotalAlloc) }},
	{"go_memstats_buck_hash_sys_bytes", "Number of bytes used by the profiling bucket hash table. Equals to /memory/classes/profiling/buckets:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.BuckHashSys) }},
	{"go_memstats_frees_total", "Total number of heap objects frees. Equals to /gc/heap/frees:objects + /gc/heap/tiny/allocs:objects.", CounterType, func(m *runtime.MemStats) float64 { return float64(m.Frees) }},
	{"go_memstats_gc_sys_bytes", "Number of bytes used for garbage collection system metadata. Equals to /memory/classes/metadata/other:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.GCSys) }},
	{"go_memstats_heap_alloc_bytes", "Number of heap bytes allocated and currently in use, same as go_memstats_alloc_bytes. Equals to /memory/classes/heap/objects:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapAlloc) }},
	{"go_memstats_heap_idle_bytes", "Number of heap bytes waiting to be used. Equals to /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapIdle) }},
	{"go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapInuse) }},
	{"go_memstats_heap_objects", "Number of currently allocated objects. Equals to /gc/heap/objects:objects.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapObjects) }},
	{"go_memstats_heap_released_bytes", "Number of heap bytes released to OS. Equals to /memory/classes/heap/released:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapReleased) }},
	{"go_memstats_heap_sys_bytes", "Number of heap bytes obtained from system. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes + /memory/classes/heap/released:bytes + /memory/classes/heap/free:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.HeapSys) }},
	{"go_memstats_last_gc_time_seconds", "Number of seconds since 1970 of last garbage collection.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.LastGC) / 1e9 }},
	{"go_memstats_mallocs_total", "Total number of heap objects allocated, both live and gc-ed. Semantically a counter version for go_memstats_heap_objects gauge. Equals to /gc/heap/allocs:objects + /gc/heap/tiny/allocs:objects.", CounterType, func(m *runtime.MemStats) float64 { return float64(m.Mallocs) }},
	{"go_memstats_mcache_inuse_bytes", "Number of bytes in use by mcache structures. Equals to /memory/classes/metadata/mcache/inuse:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.MCacheInuse) }},
	{"go_memstats_mcache_sys_bytes", "Number of bytes used for mcache structures obtained from system. Equals to /memory/classes/metadata/mcache/inuse:bytes + /memory/classes/metadata/mcache/free:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.MCacheSys) }},
	{"go_memstats_mspan_inuse_bytes", "Number of bytes in use by mspan structures. Equals to /memory/classes/metadata/mspan/inuse:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.MSpanInuse) }},
	{"go_memstats_mspan_sys_bytes", "Number of bytes used for mspan structures obtained from system. Equals to /memory/classes/metadata/mspan/inuse:bytes + /memory/classes/metadata/mspan/free:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.MSpanSys) }},
	{"go_memstats_next_gc_bytes", "Number of heap bytes when next garbage collection will take place. Equals to /gc/heap/goal:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.NextGC) }},
	{"go_memstats_other_sys_bytes", "Number of bytes used for other system allocations. Equals to /memory/classes/other:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.OtherSys) }},
	{"go_memstats_stack_inuse_bytes", "Number of bytes obtained from system for stack allocator in non-CGO environments. Equals to /memory/classes/heap/stacks:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.StackInuse) }},
	{"go_memstats_stack_sys_bytes", "Number of bytes obtained from system for stack allocator. Equals to /memory/classes/heap/stacks:bytes + /memory/classes/os-stacks:bytes.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.StackSys) }},
	{"go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:byte.", GaugeType, func(m *runtime.MemStats) float64 { return float64(m.Sys) }},
	{"go_goroutines", "Number of goroutines that currently exist.", GaugeType, func(*runtime.MemStats) float64 { return float64(runtime.NumGoroutine()) }},
	{"go_threads", "Number of OS threads created.", GaugeType, func(*runtime.MemStats) float64 { n, _ := runtime.ThreadCreateProfile(nil); return float64(n) }},
	{"go_sched_gomaxprocs_threads", "The current runtime.GOMAXPROCS setting, or the number of operating system threads that can execute user-level Go code simultaneously. Sourced from /sched/gomaxprocs:threads.", GaugeType, func(*runtime.MemStats) float64 { return float64(runtime.GOMAXPROCS(0)) }},
	{"go_gc_gomemlimit_bytes", "Go runtime memory limit configured by the user, otherwise math.MaxInt64. This value is set by the GOMEMLIMIT environment variable, and the runtime/debug.SetMemoryLimit function. Sourced from /gc/gomemlimit:bytes.", GaugeType, func(*runtime.MemStats) float64 { return float64(debug.SetMemoryLimit(-1)) }},
	{"go_gc_gogc_percent", "Heap size target percentage configured by the user, otherwise 100. This value is set by the GOGC environment variable, and the runtime/debug.SetGCPercent function. Sourced from /gc/gogc:percent.", GaugeType, func(*runtime.MemStats) float64 { return gogcPercent() }},
}

func gogcPercent() float64 {
	s := []rtmetrics.Sample{{Name: "/gc/gogc:percent"}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindUint64 {
		return math.NaN()
	}
	return float64(s[0].Value.Uint64())
}

// goCollector is the Go runtime's metrics.
type goCollector struct{}

// NewGoCollector returns the Go runtime's metrics (go_*), as client_golang's
// collectors.NewGoCollector() reports them by default.
func NewGoCollector() Collector { return goCollector{} }

func (goCollector) Describe() []string {
	names := []string{"go_gc_duration_seconds", "go_info"}
	for _, g := range goGauges {
		names = append(names, g.name)
	}
	return names
}

func (goCollector) Collect(add func(Family)) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	for _, g := range goGauges {
		add(Family{Name: g.name, Help: g.help, Type: g.typ, Samples: []Sample{{Value: g.value(&ms)}}})
	}
	add(Family{Name: "go_info", Help: "Information about the Go environment.", Type: GaugeType,
		Samples: []Sample{{Labels: []Label{{"version", runtime.Version()}}, Value: 1}}})
	var st debug.GCStats
	st.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&st)
	var ss []Sample
	for i, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		ss = append(ss, Sample{Labels: []Label{{"quantile", formatFloat(q)}}, Value: st.PauseQuantiles[i].Seconds()})
	}
	ss = append(ss, Sample{Suffix: "_sum", Value: st.PauseTotal.Seconds()}, Sample{Suffix: "_count", Value: float64(st.NumGC)})
	add(Family{Name: "go_gc_duration_seconds", Type: SummaryType, Samples: ss,
		Help: "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles."})
}

// processCollector is the process's metrics, read from /proc/self.
type processCollector struct{ proc string }

// NewProcessCollector returns the process's metrics (process_*), as
// client_golang's collectors.NewProcessCollector reports them on Linux. A
// family whose file cannot be read is left out of that scrape.
func NewProcessCollector() Collector { return processCollector{proc: "/proc"} }

var processFamilies = []struct {
	name, help string
	typ        Type
}{
	{"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", CounterType},
	{"process_max_fds", "Maximum number of open file descriptors.", GaugeType},
	{"process_network_receive_bytes_total", "Number of bytes received by the process over the network.", CounterType},
	{"process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", CounterType},
	{"process_open_fds", "Number of open file descriptors.", GaugeType},
	{"process_resident_memory_bytes", "Resident memory size in bytes.", GaugeType},
	{"process_start_time_seconds", "Start time of the process since unix epoch in seconds.", GaugeType},
	{"process_virtual_memory_bytes", "Virtual memory size in bytes.", GaugeType},
	{"process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", GaugeType},
}

func (processCollector) Describe() []string {
	names := make([]string, len(processFamilies))
	for i, f := range processFamilies {
		names[i] = f.name
	}
	return names
}

// userHZ is the unit of /proc's CPU times: 100 on every Linux lockctl runs on.
const userHZ = 100

func (c processCollector) Collect(add func(Family)) {
	values := map[string]float64{}
	if st, err := os.ReadFile(c.proc + "/self/stat"); err == nil {
		// The fields after the command name, which is in parentheses.
		if i := bytes.LastIndexByte(st, ')'); i >= 0 {
			f := strings.Fields(string(st[i+1:]))
			// f[0] is field 3 (state): utime 14, stime 15, starttime 22, vsize 23, rss 24.
			if len(f) > 21 {
				num := func(field int) float64 { v, _ := strconv.ParseFloat(f[field-3], 64); return v }
				values["process_cpu_seconds_total"] = (num(14) + num(15)) / userHZ
				values["process_virtual_memory_bytes"] = num(23)
				values["process_resident_memory_bytes"] = num(24) * float64(os.Getpagesize())
				if boot, ok := c.bootTime(); ok {
					values["process_start_time_seconds"] = boot + num(22)/userHZ
				}
			}
		}
	}
	if fds, err := os.ReadDir(c.proc + "/self/fd"); err == nil {
		values["process_open_fds"] = float64(len(fds))
	}
	if l, err := os.ReadFile(c.proc + "/self/limits"); err == nil {
		for line := range strings.Lines(string(l)) {
			for prefix, name := range map[string]string{"Max open files": "process_max_fds", "Max address space": "process_virtual_memory_max_bytes"} {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					if f := strings.Fields(rest); len(f) > 0 {
						values[name] = limit(f[0])
					}
				}
			}
		}
	}
	if n, err := os.ReadFile(c.proc + "/self/net/netstat"); err == nil {
		if in, out, ok := ipOctets(string(n)); ok {
			values["process_network_receive_bytes_total"] = in
			values["process_network_transmit_bytes_total"] = out
		}
	}
	for _, f := range processFamilies {
		if v, ok := values[f.name]; ok {
			add(Family{Name: f.name, Help: f.help, Type: f.typ, Samples: []Sample{{Value: v}}})
		}
	}
}

// limit is a soft limit of /proc/self/limits; "unlimited" is the largest
// uint64, as procfs reads it.
func limit(s string) float64 {
	if s == "unlimited" {
		return float64(math.MaxUint64)
	}
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

func (c processCollector) bootTime() (float64, bool) {
	st, err := os.ReadFile(c.proc + "/stat")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(st)) {
		if rest, ok := strings.CutPrefix(line, "btime "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// ipOctets returns InOctets and OutOctets of the IpExt lines of
// /proc/self/net/netstat (a line of names, then a line of values).
func ipOctets(netstat string) (in, out float64, ok bool) {
	var names []string
	for line := range strings.Lines(netstat) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "IpExt:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		var gotIn, gotOut bool
		for i := 1; i < len(f) && i < len(names); i++ {
			switch names[i] {
			case "InOctets":
				in, _ = strconv.ParseFloat(f[i], 64)
				gotIn = true
			case "OutOctets":
				out, _ = strconv.ParseFloat(f[i], 64)
				gotOut = true
			}
		}
		return in, out, gotIn && gotOut
	}
	return 0, 0, false
}
