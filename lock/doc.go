// Package lock implements the namespace deploy lock: one ConfigMap per target
// namespace, living in a lock namespace, whose single JSON annotation records
// who holds the lock and who waits for it.
//
// Every change is a compare-and-swap: the lock is read, a new record is
// decided from it (see Decide), and the object just read is updated, so the
// API server's resourceVersion check turns a lost race into a Conflict that
// makes the caller read again and decide again. Stale locks are deleted with
// a UID and resourceVersion precondition, so a lock re-created or changed in
// between is never removed.
//
// Waiters queue inside the record. Releasing hands the lock to the first
// live waiter with one write instead of deleting it, so a release wakes
// exactly one process and the queue order survives. Waiters renew a short
// expiry while they wait; a waiter that dies drops out of the queue when its
// expiry passes, and a lock handed to a waiter that died in between is free
// again after that same short expiry.
//
// What it does not guarantee: there is no fencing inside Kubernetes. A holder
// that stalls past its expiry may still act after another process took the
// lock. Acquire returns a fencing token (the resourceVersion of the write that
// made the caller the holder, which grows with every write in the cluster)
// that a deploy step can hand to a system able to refuse an older token.
//
// Expiry is judged by the clock of the process that reads the lock, against
// times written by the clock of the process that wrote them; clocks that
// disagree by more than a small fraction of the TTL shorten or lengthen it by
// that much. Pod liveness (the holder's pod gone, finished, or lost with its
// node) is judged by the API server's view and needs no clock.
//
// Why a ConfigMap and not a coordination.k8s.io Lease, which client-go's
// leader election moved to: a deploy lock carries a queue and a holder
// identity that people read with kubectl, it is owned by the holder's pod for
// garbage collection, and ConfigMap permissions are what CI service accounts
// already have. Leases suit one frequently renewed holder; this lock is held
// for minutes and handed over in a fixed order.
package lock
