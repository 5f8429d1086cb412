// Package stats turns what a lock's record remembers into numbers: how
// long its holds lasted and its contenders waited (median, 90th
// percentile, longest), how holds ended, how long it was frozen and at
// which hours it is busiest (Summarize, what lockctl stats prints); how
// long a contender at a place in the queue may have to wait (Budget,
// acquire --timeout auto); and the locks' Prometheus metrics that the
// long-running processes export (Exporter).
//
// Everything is computed from the lock records alone (docs/adr/0110):
// the history of the last holds with their waits, the break-glass grants
// and the freezes that ended. Nothing here writes to the cluster.
package stats
