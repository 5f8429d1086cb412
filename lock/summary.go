package lock

import (
	"context"
	"strings"

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
	set(SummaryUpdatedAnnotation, microTime(rec.Updated))
	if !rec.unheld() {
		h := rec.Holder
		set(SummaryHolderAnnotation, h.Identity.String())
		set(SummaryHolderUserAnnotation, h.User)
		set(SummaryHolderAppsAnnotation, appMarks(h.Apps))
		set(SummarySinceAnnotation, microTime(h.Since))
		if h.Pod == nil && h.Expires != nil {
			set(SummaryExpiresAnnotation, microTime(*h.Expires))
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
		set(SummaryFreezeUntilAnnotation, microTime(f.Until))
		if f.FromWindow() {
			set(SummaryFreezeWindowAnnotation, f.By.Branch)
		}
	}
}

// microTime spells t as the record does (metav1.MicroTime's JSON, without
// the quotes); "" for the zero time.
func microTime(t metav1.MicroTime) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(metav1.RFC3339Micro)
}

// EnforcedAnnotation marks a lock whose target lockctl enforce guards,
// with the policy's mode (warn, audit, deny) as its value. A contender
// reading it asks who it is (Request.Callbacks.LookupUser) and records that user
// with its claim; a lock without it costs no such request. It is not part
// of the summary: writes of the record keep it as it is.
const EnforcedAnnotation = SummaryPrefix + "enforced"

// Summarize makes target's lock readable by an admission policy (lockctl
// enforce) and marks it enforced in mode (EnforcedAnnotation; "" removes
// the mark). A lock that does not exist is created free (as a released
// lock is kept, for its history: the next contender takes it as a new
// one, with its own policy), so that the policy has its parameter, unless
// mode is ""; a record without a summary, or with one that is not of it
// (written by a lockctl before record version 1.8), is written back as it
// was with its summary, and so is a lock whose freeze windows' intervals
// (SummaryWindowsAnnotation) are not those of now. A lock whose summary
// is current and whose mark is mode is not written. It reports whether
// it wrote.
func (c *Client) Summarize(ctx context.Context, target, mode string) (bool, error) {
	wrote := false
	mark := map[string]string{EnforcedAnnotation: mode}
	err := c.update(ctx, "summarize", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		wrote = false
		if cm == nil {
			if mode == "" {
				return change{}, nil
			}
			rec := &Record{Target: target, Policy: PolicyNewest, Updated: metav1.NewMicroTime(c.clk.Now())}
			rec.free(rec.Updated)
			wrote = true
			return change{Decision: Decision{Record: rec, Create: true}, annotate: mark}, nil
		}
		if summaryCurrent(cm) && cm.Annotations[EnforcedAnnotation] == mode {
			// The freeze windows' intervals are refreshed too: a window
			// added or passed since the last write.
			cp := cm.DeepCopy()
			if err := c.summarizeWindows(ctx, cp, target); err != nil {
				return change{}, err
			}
			if cp.Annotations[SummaryWindowsAnnotation] == cm.Annotations[SummaryWindowsAnnotation] &&
				cp.Annotations[SummaryWindowsUntilAnnotation] == cm.Annotations[SummaryWindowsUntilAnnotation] {
				return change{}, nil
			}
		}
		rec, err := c.decode(cm, target)
		if err != nil {
			return change{}, err
		}
		wrote = true
		return change{Decision: Decision{Record: rec}, annotate: mark}, nil
	})
	return wrote, err
}

// summaryCurrent reports whether cm's summary is of its record, as the
// policy judges it: the record holds the summary's updated.
func summaryCurrent(cm *corev1.ConfigMap) bool {
	u := cm.Annotations[SummaryUpdatedAnnotation]
	return u != "" && strings.Contains(cm.Annotations[RecordAnnotation], `"updated":"`+u+`"`)
}

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
