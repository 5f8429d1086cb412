package record

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The summary of the record: flat annotations on the lock's ConfigMap,
// written by every write of the record (encode), for the
// ValidatingAdmissionPolicy of an enforced lock (docs/enforcement.md),
// whose CEL cannot decode the record's JSON. They say nothing the record
// does not; SummaryUpdatedAnnotation ties them to the record they were
// made from, so a record written by a lockctl that does not write them
// (before record version 1.8) is not read through a stale summary.
const (
	// SummaryPrefix starts the name of every summary annotation.
	SummaryPrefix = "enforce.lockctl.dev/"
	// SummaryUpdatedAnnotation is the record's `updated`, as the record
	// spells it.
	SummaryUpdatedAnnotation = SummaryPrefix + "updated"
	// SummaryHolderAnnotation is the holder's identity (owner/repo@branch#build),
	// empty when nobody holds the lock.
	SummaryHolderAnnotation = SummaryPrefix + "holder"
	// SummaryHolderUserAnnotation is the holder's Kubernetes user (Claim.User),
	// empty when nobody holds the lock or its user is not known.
	SummaryHolderUserAnnotation = SummaryPrefix + "holder-user"
	// SummaryHolderAppsAnnotation lists the GitOps applications the holder
	// deploys (Claim.Apps), one a line, each as App.Marks renders it:
	// KIND:VALUE with VALUE what the controller writes on the
	// application's objects, in the order the holder named them:
	//
	//	argocd:web                    Argo CD's tracking id starts "web:", or app.kubernetes.io/instance=web
	//	argocd:team-a_web             the Application web in namespace team-a
	//	flux-kustomization:apps/web   kustomize.toolkit.fluxcd.io/namespace=apps, /name=web
	//	flux-helmrelease:apps/web     helm.toolkit.fluxcd.io/namespace=apps, /name=web
	//
	// Empty when nobody holds the lock or the holder names none. Written
	// from record version 1.9: a lockctl before it that rewrites the record
	// leaves it out, and the holder then names no application.
	SummaryHolderAppsAnnotation = SummaryPrefix + "holder-apps"
	// SummarySinceAnnotation is when the holder took the lock.
	SummarySinceAnnotation = SummaryPrefix + "since"
	// SummaryTokenAnnotation is the holder's fencing token, empty while it
	// is pending (SummaryTokenPendingAnnotation).
	SummaryTokenAnnotation = SummaryPrefix + "token"
	// SummaryTokenPendingAnnotation is "true" when the holder's token is
	// the ConfigMap's own resourceVersion (Claim.TokenPending).
	SummaryTokenPendingAnnotation = SummaryPrefix + "token-pending"
	// SummaryNextUserAnnotation is the user of the first waiter.
	SummaryNextUserAnnotation = SummaryPrefix + "next-user"
	// SummaryWaiterUsersAnnotation lists the users of the waiters that
	// have one, one a line, in queue order.
	SummaryWaiterUsersAnnotation = SummaryPrefix + "waiter-users"
	// SummaryFrozenAnnotation is "true" while the record carries a freeze.
	SummaryFrozenAnnotation = SummaryPrefix + "frozen"
	// SummaryFreezeAnnotation describes the freeze for messages: its
	// reason, who set it and until when.
	SummaryFreezeAnnotation = SummaryPrefix + "freeze"
	// SummaryFreezeUntilAnnotation is when the freeze ends, as the record
	// spells it: a write at or after it may drop the freeze.
	SummaryFreezeUntilAnnotation = SummaryPrefix + "freeze-until"
	// SummaryFreezeWindowAnnotation names the freeze window the freeze was
	// written from; empty for a freeze set with lockctl freeze. The policy
	// asks for the right to freeze or unfreeze only for the latter.
	SummaryFreezeWindowAnnotation = SummaryPrefix + "freeze-window"
	// SummaryExpiresAnnotation is when the holder's hold lapses unless
	// renewed; empty for a hold that lives as long as its pod. The policy
	// compares it with the API server's time of each request.
	SummaryExpiresAnnotation = SummaryPrefix + "expires"
	// SummaryHolderCredentialAnnotation is the credential the holder's
	// user authenticated with when it took the lock, as Claim.Credential.
	SummaryHolderCredentialAnnotation = SummaryPrefix + "holder-credential"
	// SummaryWindowsAnnotation lists the intervals in which the freeze
	// windows freeze the lock, one "START END NAME" a line (RFC 3339,
	// UTC), from the write to SummaryWindowsUntilAnnotation. Written only
	// on a lock marked enforced (EnforcedAnnotation) that a window applies
	// to.
	SummaryWindowsAnnotation = SummaryPrefix + "windows"
	// SummaryWindowsUntilAnnotation is how far SummaryWindowsAnnotation
	// knows the windows: past it, the policy counts the lock as frozen
	// until a write of the record extends them.
	SummaryWindowsUntilAnnotation = SummaryPrefix + "windows-until"
)

// summaryKeys are the summary annotations, which writeSummary replaces as
// a whole.
var summaryKeys = []string{
	SummaryUpdatedAnnotation, SummaryHolderAnnotation, SummaryHolderUserAnnotation,
	SummaryHolderAppsAnnotation, SummarySinceAnnotation, SummaryTokenAnnotation, SummaryTokenPendingAnnotation,
	SummaryNextUserAnnotation, SummaryWaiterUsersAnnotation, SummaryFrozenAnnotation,
	SummaryFreezeAnnotation, SummaryFreezeUntilAnnotation, SummaryFreezeWindowAnnotation,
	SummaryExpiresAnnotation, SummaryHolderCredentialAnnotation,
	SummaryWindowsAnnotation, SummaryWindowsUntilAnnotation,
}

// EnforcedAnnotation marks a lock whose target lockctl enforce guards,
// with the policy's mode (warn, audit, deny) as its value. A contender
// reading it asks who it is (Request.Callbacks.LookupUser) and records that user
// with its claim; a lock without it costs no such request. It is not part
// of the summary: writes of the record keep it as it is.
const EnforcedAnnotation = SummaryPrefix + "enforced"

// User is who the API server says a contender is (a SelfSubjectReview):
// what an enforced lock records with its claim and admits the holder's
// writes by.
type User struct {
	// Name is the authenticated user name (Claim.User).
	Name string
	// Credential names the credential the user authenticated with
	// (Claim.Credential); "" when the API server tells none.
	Credential string
}

// writeSummary sets the summary annotations of rec on cm, whose
// annotations map exists.
func writeSummary(cm *corev1.ConfigMap, rec *Record) {
	for _, k := range summaryKeys {
		delete(cm.Annotations, k)
	}
	set := func(k, v string) {
		if v != "" {
			cm.Annotations[k] = v
		}
	}
	set(SummaryUpdatedAnnotation, MicroTime(rec.Updated))
	if !rec.Unheld() {
		h := rec.Holder
		set(SummaryHolderAnnotation, h.Identity.String())
		set(SummaryHolderUserAnnotation, h.User)
		set(SummaryHolderAppsAnnotation, appMarks(h.Apps))
		set(SummarySinceAnnotation, MicroTime(h.Since))
		if h.Pod == nil && h.Expires != nil {
			set(SummaryExpiresAnnotation, MicroTime(*h.Expires))
		}
		set(SummaryHolderCredentialAnnotation, h.Credential)
		if h.TokenPending {
			set(SummaryTokenPendingAnnotation, "true")
		} else {
			set(SummaryTokenAnnotation, h.Token)
		}
	}
	var users []string
	for i, w := range rec.Waiters {
		if i == 0 {
			set(SummaryNextUserAnnotation, w.User)
		}
		if w.User != "" {
			users = append(users, w.User)
		}
	}
	set(SummaryWaiterUsersAnnotation, strings.Join(users, "\n"))
	if f := rec.Freeze; f != nil {
		set(SummaryFrozenAnnotation, "true")
		set(SummaryFreezeAnnotation, f.Describe())
		set(SummaryFreezeUntilAnnotation, MicroTime(f.Until))
		if f.FromWindow() {
			set(SummaryFreezeWindowAnnotation, f.By.Branch)
		}
	}
}

// MicroTime spells t as the record does (metav1.MicroTime's JSON, without
// the quotes); "" for the zero time.
func MicroTime(t metav1.MicroTime) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(metav1.RFC3339Micro)
}

// SummaryCurrent reports whether cm's summary is of its record, as the
// policy judges it: the record holds the summary's updated.
func SummaryCurrent(cm *corev1.ConfigMap) bool {
	u := cm.Annotations[SummaryUpdatedAnnotation]
	return u != "" && strings.Contains(cm.Annotations[RecordAnnotation], `"updated":"`+u+`"`)
}

// windowsHorizon is how far ahead a write of an enforced lock lists the
// intervals its freeze windows freeze it (SummaryWindowsAnnotation), and
// maxWindowIntervals how many it lists at most: past the last, the
// policy counts the lock as frozen until a write lists more.
const (
	windowsHorizon     = 90 * 24 * time.Hour
	maxWindowIntervals = 256
)

// WindowIntervals lists the intervals in which ws freeze target's lock
// from now on, merged where they overlap, one "START END NAME" a line
// (SummaryWindowsAnnotation, RFC 3339 in whole seconds), and until when
// the list is complete; none and the zero time when no window applies to
// target.
func WindowIntervals(ws []FreezeWindow, target string, now time.Time) ([]string, time.Time) {
	type interval struct {
		start, end time.Time
		name       string
	}
	now = now.UTC()
	horizon := now.Add(windowsHorizon)
	var all []interval
	applies := false
	for i := range ws {
		w := &ws[i]
		if !w.applies(target) || w.sched == nil {
			continue
		}
		applies = true
		// The first start whose freeze has not ended at now, then every
		// start up to the horizon (at most one more than can be listed).
		for start := w.sched.Next(now.Add(-w.Duration.Duration)); !start.IsZero() && start.Before(horizon); start = w.sched.Next(start) {
			all = append(all, interval{start, start.Add(w.Duration.Duration), w.Name})
			if len(all) > maxWindowIntervals*len(ws) {
				break
			}
		}
	}
	if !applies {
		return nil, time.Time{}
	}
	slices.SortFunc(all, func(a, b interval) int { return a.start.Compare(b.start) })
	var merged []interval
	for _, iv := range all {
		if n := len(merged); n > 0 && !iv.start.After(merged[n-1].end) {
			if iv.end.After(merged[n-1].end) {
				merged[n-1].end = iv.end
			}
			continue
		}
		merged = append(merged, iv)
	}
	until := horizon
	if len(merged) > maxWindowIntervals {
		until = merged[maxWindowIntervals].start
		merged = merged[:maxWindowIntervals]
	}
	// NOTE: whole seconds in UTC, one width, which the policy compares as
	// strings: a start rounded down, an end up, so a window never shrinks.
	lines := make([]string, len(merged))
	for i, iv := range merged {
		end := iv.end.Truncate(time.Second)
		if end.Before(iv.end) {
			end = end.Add(time.Second)
		}
		lines[i] = iv.start.Truncate(time.Second).Format(time.RFC3339) + " " + end.Format(time.RFC3339) + " " + iv.name
	}
	return lines, until.Truncate(time.Second)
}

// The annotations of a break-glass grant on an enforced lock's ConfigMap
// (lockctl break-glass, docs/enforcement.md), beside the record, which
// the admission policy reads.
const (
	// BreakGlassUserAnnotation is the Kubernetes user the grant admits.
	BreakGlassUserAnnotation = SummaryPrefix + "break-glass-user"
	// BreakGlassStateAnnotation is the state of the lock the grant is
	// for: a change of holder or of freeze ends it.
	BreakGlassStateAnnotation = SummaryPrefix + "break-glass-state"
	// BreakGlassAnnotation describes the grant for people and messages.
	BreakGlassAnnotation = SummaryPrefix + "break-glass"
)

// turnPrefix begins the name of a lock's turn object.
const turnPrefix = "lockctl-turn-"

// TurnName returns the name of the turn object of target's lock, which
// lock publishes beside it for the waiters behind the head of the queue
// and the admission policy admits like the lock itself.
func TurnName(target string) string {
	return turnPrefix + strings.TrimPrefix(Name(target), lockPrefix)
}
