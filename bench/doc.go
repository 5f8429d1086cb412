// Package bench measures lockctl against what users would pick instead, on
// the real control plane of internal/testing/testenv.
//
// The measurements are Benchmark functions that run one full experiment per
// iteration (run them with -benchtime 1x), print a readable table with
// b.Logf, and report their figures with b.ReportMetric: percentiles in
// milliseconds (p50-ms, p99-ms), API requests per operation (req/acq) and
// ratios. Nothing here asserts a figure; docs/benchmarks.md records them with
// the command that reproduces each one:
//
//	go test ./bench -run '^$' -bench . -benchtime 1x -timeout 60m
//
// Where a cost grows with the work (a queue's length, the number of
// locks), the benchmark also draws the curve from its own numbers as an
// SVG (Plot, WritePlot) into the directory LOCKCTL_BENCH_PLOTS names;
// `make scale` names docs/images.
//
// Without -bench the package starts no control plane, so `go test ./...`
// only runs the unit tests of the helpers below.
//
// The helpers are exported for the reliability suite: Counter counts API
// requests at the client with a wrapping http.RoundTripper, and Sample
// summarises latencies.
package bench
