// Package lock implements the namespace deploy lock: one ConfigMap per target
// namespace, living in a lock namespace, whose single JSON annotation records
// who holds the lock and who waits for it (docs/lock-record.md).
//
// This package is the client: it reads, writes and watches the locks
// through the API server. The record itself, its wire format and the pure
// rules that decide each change to it, is package lock/record, below this
// one (docs/adr/0150-lock-record-and-client.md).
//
// Every change is a compare-and-swap: the lock is read, a new record is
// decided from it (see record.Decide), and the object just read is updated, so the
// API server's resourceVersion check turns a lost race into a Conflict that
// makes the caller read again and decide again. Stale locks are deleted with
// a UID and resourceVersion precondition, so a lock re-created or changed in
// between is never removed.
//
// Waiters queue inside the record. Releasing hands the lock to the first
// live waiter with one write instead of deleting it, so a release wakes
// exactly one process and the queue order survives. That write makes the
// waiter the holder: it holds as soon as its watch brings it, with that
// write's resourceVersion as fencing token, and confirms in the background
// before the waiter's expiry the hand-over stands on (Held.Confirm,
// docs/adr/0074-hold-on-hand-over.md), a second into the hold: a shorter
// hold is released without a confirmation
// (docs/adr/0079-confirm-after-a-second.md). Waiters renew a short
// expiry while they wait; a waiter that dies drops out of the queue when its
// expiry passes, and a lock handed to a waiter that died in between is free
// again after that same short expiry.
//
// # Whose clock
//
// Expiries are stamped and judged on the API server's clock, never on the
// contender's own: the clock given to New is meant to be a servertime.Clock that learns
// the API server's time from the Date header of the answers to the clients
// it is wired into, and a Client whose clock has not heard from the API
// server yet reads the lock before its first decision. Each expiry counts
// from the writer's (server-clock) now, never from the record's "updated"
// time, which never goes backwards, so no clock can push another holder's
// expiry. Pod liveness (deletion timestamps, conditions, the node's Ready
// condition) is written by the API server and controllers and is judged on
// the same clock (docs/adr/0015-lock-clock.md).
//
// # What is guaranteed
//
//   - Mutual exclusion of recorded holds: at most one holder at a time,
//     whatever the contenders' own clocks say (tested with clocks 10 minutes
//     apart each way), as long as the API server's clock does not jump. A
//     contender counts an expiry as passed only once its estimate of the API
//     server's time is past it by more than the estimate's uncertainty (about
//     half a second plus half a round trip), so no lock is taken before its
//     stamped expiry; holders renew every third of their TTL.
//   - A holder without a pod that stops renewing loses the lock TTL after
//     its last renewal (plus that uncertainty), to a waiter woken by a timer
//     at the expiry and equally to a contender that arrives late: nobody
//     waits a whole TTL again, as a contender of client-go's leader election
//     does.
//   - A holder in a pod loses the lock as soon as the pod is gone, finished
//     or replaced (the waiter watches it), or lost by the shared rule of
//     package liveness: its node NotReady or Unknown for LostPodGrace (5
//     minutes by default) from the condition's change, or the pod
//     taint-evicted and left Terminating for its deletion grace period plus
//     a margin (30 s).
//
// # What is not guaranteed
//
// There is no fencing inside Kubernetes. A holder learns that it lost the
// lock only when it next reads it (Renew returns ErrLost); a holder that
// stalls past its expiry, or whose pod is judged lost while it still runs
// behind a partitioned node, may still act after another process took the
// lock. Acquire therefore returns a fencing token (Held.Token): the
// resourceVersion of the write that made the caller the holder, which grows
// with every new hold of any lock. It is for a deploy target able to refuse
// an older token: a target that remembers the highest token it has seen and
// turns away a request carrying a lower one makes a stale holder harmless.
// Mixed fleets: a lockctl older than the server clock stamps expiries on its
// own clock, so skew tolerance holds once every contender judges on the API
// server's.
//
// # What a library user wires
//
// lockctl's cmd.Factory does all of this; a program that builds a Client
// itself must too:
//
//	sc := servertime.New(nil)
//	cfg.Wrap(sc.WrapTransport) // the rest.Config of the clients below
//	cs, err := kube.NewForConfig(cfg) // package github.com/lockctl/lockctl/kube
//	c := lock.New(cs.CoreV1(), cs.CoreV1(), lockNamespace, sc, lock.Options{
//		Nodes: cs.CoreV1(), // optional: judge a holder pod's node (get nodes)
//		Log:   log,         // optional: a *slog.Logger
//	})
//
// A Held that Acquire returned keeps a watch of its lock and may still be
// recording the Events of its acquisition: ReleaseHeld ends both, and a
// caller that keeps the lock past its exit calls Held.StopWatching and
// Held.WaitEvents.
//
// A holder without a pod renews with Renew every third of its TTL (package
// run does so for lockctl run) and releases with Release.
//
// # Why a ConfigMap
//
// Not a coordination.k8s.io Lease, which client-go's leader election moved
// to: a deploy lock carries a queue and a holder identity that people read
// with kubectl, it is owned by the holder's pod for garbage collection, and
// ConfigMap permissions are what CI service accounts already have. Leases
// suit one frequently renewed holder; this lock is held for minutes and
// handed over in a fixed order.
package lock
