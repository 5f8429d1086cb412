// Package dashboard serves lockctl's read-only web page: the locks of a
// lock namespace (holder, fencing token, liveness, the queue with
// priorities, freezes and upcoming freeze windows, each lock's last
// holds) and the job records of a job namespace (state, pod, build ID,
// and each job's pod logs streamed on a page of their own).
//
// One Hub per process keeps one set of watches, however many browsers
// look: an informer on the lock ConfigMaps, one on the freeze-windows
// ConfigMap and the job store's watch (job.Store.Watch). Every change
// makes a new Snapshot, whose locks are the lock.LockView values `lockctl
// status -o json` prints, and the Hub pushes it to every open page as
// server-sent events: whole first, then as updates that carry only the
// locks that changed, encoded once for every page (Update). An entry
// carries the times its words count from (LockEntry.Expires), which the
// page words on its own clock corrected by the server's (the stream's
// "clock" events), so an entry changes only when its lock does or its
// state does with time (ADR 0099); the page is served with its first
// cards (FirstCards) and its script makes the others. Viewers never
// cause a request to the API server, except a log page, which follows its
// job's pod as `lockctl logs -f` does (run.FollowJob) for as long as it is
// open.
//
// The page is read-only (GET and HEAD only), embeds its script and style
// (no asset from elsewhere), escapes every string that came from a user
// (html/template on the server, textContent in the script) and is served
// under a Content-Security-Policy that allows no inline script, so a
// missed escape still runs nothing. It answers only requests whose Host is
// an IP address, localhost or a name it was told, so a web page elsewhere
// cannot read it through DNS rebinding. docs/dashboard.md says who can see
// what.
package dashboard
