// Package notify calls a webhook when a lock changes in ways people wait
// for: a contender's turn comes (it holds the lock), a hold ends, a hold
// runs past its expected time (the 90th percentile of the lock's
// recorded holds), a freeze window starts within a lead time, and a
// break-glass grant is made. A Notifier is an Observer of the lock
// ConfigMaps (stats.WatchLocks) in a long-running process (lockctl
// reconcile); the body is a CloudEvent in its structured JSON form, or a
// Slack-compatible {"text": ...}, and holds nothing secret: names,
// identities and times, never a fencing token or the webhook's URL.
//
// Several replicas deliver each event at most once between them: before
// it calls the webhook, a replica marks the event in a ConfigMap of the
// lock namespace (MarksName) with a compare-and-swap on its
// resourceVersion; the replica whose write wins delivers it, the others
// find it marked and skip it. A replica that dies between its mark and
// the delivery loses that event: at most once, not at least once. The
// webhook is retried with exponential backoff on a network error, a 5xx
// or a 429, never on another answer.
package notify
