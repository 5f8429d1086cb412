// Package record is the lock's record: the wire format kept in the one
// JSON annotation of a lock ConfigMap (docs/lock-record.md), and the pure
// rules that decide each change to it.
//
// Record, Claim and Identity are the format, versioned by RecordVersion;
// Decode reads a lock ConfigMap's record and Encode writes one back,
// keeping the fields of a newer minor version. Decide is the rule of an
// acquisition: from the record read, the contender's claim, the policy,
// the (server-clock) now and whether the holder is alive, it returns the
// record to write and what the contender learns. The other rules (renew,
// freeze and unfreeze, confirm a hand-over, leave the queue, priority,
// cancel-in-progress, the wait estimate) are pure functions and methods
// of Record alike. Freeze windows are parsed here (ParseFreezeWindows) and
// joined with a lock's own freeze (EffectiveFreeze); the history of past
// holds, the summary annotations an enforced lock's admission policy reads
// and the record's errors and defaults live here too.
//
// The package does no I/O and imports no client: it is the lowest tier of
// the library, below package lock, which reads, writes and watches the
// records through the API server, and below the commands that only read
// them (identity, completion, printers).
package record
