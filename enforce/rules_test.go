package enforce

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/lockctl/lockctl/lock/record"
)

// settingsToCompile are settings that render every branch of the template.
var settingsToCompile = []Settings{
	{Target: "web", LockNamespace: "locks"},
	{Target: "web", LockNamespace: "web", Mode: ModeDeny, Strict: true, RequireHolder: true},
	{Target: "web", LockNamespace: "locks", Mode: ModeDeny, Agents: []string{"system:serviceaccount:argocd:argocd-application-controller"},
		Exempt: []string{"system:serviceaccount:lockctl:reconcile", `odd "user"\n`}, Kinds: []Kind{{"apps", "deployments"}}},
}

// TestPolicyCompiles: every expression of the policy and the create
// guard compiles in the API server's environment for admission policies.
func TestPolicyCompiles(t *testing.T) {
	t.Parallel()
	for _, s := range settingsToCompile {
		assert.Empty(t, compileErrors(t, Policy(s)), "%+v", s)
		guard, _ := CreateGuard(s)
		assert.Empty(t, compileErrors(t, guard), "create guard of %+v", s)
	}
}

// The objects of the rule tests: the lock of target web in namespace
// locks, and a ConfigMap "app" in web.
var (
	configmaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	cmKind     = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretKind = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// summary is the lock's summary annotations, as lock.writeSummary writes
// them, for the fields a test sets.
type summary struct {
	updated             time.Time
	holder, user, token string
	credential, apps    string
	expires             time.Time
	freezeUntil         time.Time
	freezeWindow        string
	windows             [][3]time.Time
	windowNames         []string
	windowsUntil        time.Time
	waiters             []string
	unmarked            bool
}

// annotations renders s as the lock's annotations.
func (s summary) annotations() map[string]any {
	updated := micro(s.updated)
	a := map[string]any{
		record.RecordAnnotation:         `{"version":"1.9","target":"web","updated":"` + updated + `"}`,
		record.SummaryUpdatedAnnotation: updated,
	}
	if !s.unmarked {
		a[record.EnforcedAnnotation] = "deny"
	}
	if s.holder != "" {
		a[record.SummaryHolderAnnotation] = s.holder
		a[record.SummarySinceAnnotation] = updated
		if s.user != "" {
			a[record.SummaryHolderUserAnnotation] = s.user
		}
		a[record.SummaryTokenAnnotation] = s.token
		if !s.expires.IsZero() {
			a[record.SummaryExpiresAnnotation] = micro(s.expires)
		}
		if s.credential != "" {
			a[record.SummaryHolderCredentialAnnotation] = s.credential
		}
		if s.apps != "" {
			a[keys.HolderApps] = s.apps
		}
	}
	if len(s.waiters) > 0 {
		a[record.SummaryNextUserAnnotation] = s.waiters[0]
		a[record.SummaryWaiterUsersAnnotation] = strings.Join(s.waiters, "\n")
	}
	if !s.freezeUntil.IsZero() {
		a[record.SummaryFrozenAnnotation] = "true"
		a[record.SummaryFreezeAnnotation] = "frozen until " + micro(s.freezeUntil) + " by acme/ops@main#1: release party"
		a[record.SummaryFreezeUntilAnnotation] = micro(s.freezeUntil)
		if s.freezeWindow != "" {
			a[record.SummaryFreezeWindowAnnotation] = s.freezeWindow
		}
	}
	var lines []string
	for i, w := range s.windows {
		lines = append(lines, rfc(w[0])+" "+rfc(w[1])+" "+s.windowNames[i])
	}
	if len(lines) > 0 || !s.windowsUntil.IsZero() {
		a[record.SummaryWindowsAnnotation] = strings.Join(lines, "\n")
		a[record.SummaryWindowsUntilAnnotation] = rfc(s.windowsUntil)
	}
	return a
}

// params is the lock's ConfigMap with summary s, as the policy reads it.
func (s summary) params() runtime.Object {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "lockctl-lock-web", "namespace": "locks", "resourceVersion": "900", "annotations": s.annotations()},
	}}
	u.SetGroupVersionKind(cmKind)
	return u
}

// lockObject is the lock's ConfigMap with summary s, as a request writes
// it, its managedFields entry of manager stamped at stamp.
func (s summary) lockObject(manager string, stamp time.Time) map[string]any {
	return map[string]any{"metadata": map[string]any{
		"name": "lockctl-lock-web", "namespace": "locks", "creationTimestamp": rfc(stamp.Add(-time.Hour)),
		"annotations":   s.annotations(),
		"managedFields": []any{entry(manager, stamp)},
	}}
}

// entry is a managedFields entry of manager (an update) at time t.
func entry(manager string, t time.Time, fields ...string) map[string]any {
	fs := map[string]any{}
	for _, f := range fields {
		fs["f:"+f] = map[string]any{}
	}
	return map[string]any{
		"manager": manager, "operation": "Update", "apiVersion": "v1", "time": rfc(t), "fieldsType": "FieldsV1",
		"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": fs}, "f:data": map[string]any{}},
	}
}

// app is the ConfigMap "app" of web with data v and token (if any), last
// written by the managedFields entries given.
func app(v, token string, managed ...map[string]any) map[string]any {
	meta := map[string]any{"name": "app", "namespace": "web", "creationTimestamp": rfc(t0.Add(-24 * time.Hour))}
	if token != "" {
		meta["annotations"] = map[string]any{TokenAnnotation: token}
	}
	if len(managed) > 0 {
		ms := make([]any, len(managed))
		for i, m := range managed {
			ms[i] = m
		}
		meta["managedFields"] = ms
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": map[string]any{"v": v}}
}

// earlier is the managedFields entry every existing "app" carries: the
// first write, a day before t0.
var earlier = entry("kubectl-client-side-apply", t0.Add(-24*time.Hour))

// create is a create of "app" by user at time t (its creationTimestamp).
func create(user string, t time.Time, token string) req {
	o := app("1", token, entry("kubectl-create", t))
	o["metadata"].(map[string]any)["creationTimestamp"] = rfc(t)
	return req{op: admission.Create, user: user, resource: configmaps, kind: cmKind, namespace: "web", name: "app", object: o}
}

// update is an update of "app" by user that the API server stamped at t
// with manager's entry.
func update(user, manager string, t time.Time, token string) req {
	return req{op: admission.Update, user: user, resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("2", token, earlier, entry(manager, t)), old: app("1", "", earlier)}
}

// deleteOf is a delete of "app" by user: it carries no time.
func deleteOf(user string) req {
	return req{op: admission.Delete, user: user, resource: configmaps, kind: cmKind, namespace: "web", name: "app", old: app("1", "", earlier)}
}

func settings(strict bool) Settings {
	return Settings{Target: "web", LockNamespace: "locks", Mode: ModeDeny, Strict: strict,
		Agents: []string{"system:serviceaccount:argocd:argocd-application-controller"}}
}

// ruleCase is a request and what the policy is to say of it: refused or
// not, and what the refusal says. lock is the lock's summary, the policy's
// parameter; a case without one writes the lock itself, and the
// parameter is the lock as it was before (req.old).
type ruleCase struct {
	name    string
	lock    summary
	req     req
	rights  rbac
	refused bool
	message []string
}

// check runs every case on e, in parallel.
func (e *evaluator) check(t *testing.T, tests []ruleCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := tt.lock.params()
			if tt.lock.updated.IsZero() {
				before := tt.req.old["metadata"].(map[string]any)["annotations"].(map[string]any)
				u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "lockctl-lock-web", "namespace": "locks", "resourceVersion": "900", "annotations": before}}}
				u.SetGroupVersionKind(cmKind)
				params = u
			}
			got := e.run(t, tt.req, params, tt.rights)
			require.Empty(t, got.err)
			assert.Equal(t, tt.refused, got.refused, "%s", got.message)
			assert.True(t, contains(got.message, tt.message...), "message %q has %q", got.message, tt.message)
		})
	}
}

// TestRulesKeepTheAPIServersTime: windows open and close, holds lapse and
// freezes end at the request's time as the API server stamped it, with no
// write of the lock in between; a request without a time (a delete) is
// judged at the lock's last write and needs the lock where a window might
// be open; forged managedFields times are refused.
func TestRulesKeepTheAPIServersTime(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t, Policy(settings(false)))
	written := t0.Add(-time.Hour) // the lock's last write
	held := summary{updated: written, holder: "acme/web@main#41", user: "alice", token: "18842", expires: at(0)}
	window := summary{updated: written, windows: [][3]time.Time{{at(0), at(60)}}, windowNames: []string{"nightly"}, windowsUntil: at(86400)}
	frozen := summary{updated: written, freezeUntil: at(0)}
	forgedUpdate := update("bob", "kubectl-edit", at(-10), "")
	forgedUpdate.object["metadata"].(map[string]any)["managedFields"] = []any{earlier, entry("kubectl-edit", at(-10)), entry("cron", at(5))}
	tests := []ruleCase{
		{name: "another user during the hold", lock: held, req: create("bob", at(-1), ""), refused: true, message: []string{"locked by acme/web@main#41 (user alice)"}},
		{name: "another user as the hold lapses", lock: held, req: create("bob", at(0), "")},
		{name: "another user's update during the hold", lock: held, req: update("bob", "kubectl-edit", at(-1), ""), refused: true},
		{name: "another user's update after the lapse", lock: held, req: update("bob", "kubectl-edit", at(1), "")},
		{name: "the holder during the hold", lock: held, req: update("alice", "kubectl-edit", at(-1), "")},
		{name: "a delete during the hold", lock: held, req: deleteOf("bob"), refused: true, message: []string{"carries no time"}},
		{name: "a delete of a lapsed hold, judged at the last write", lock: summary{updated: at(10), holder: "acme/web@main#41", user: "alice", token: "1", expires: at(0)}, req: deleteOf("bob")},
		{name: "a second before the window", lock: window, req: create("bob", at(-1), "")},
		{name: "as the window opens", lock: window, req: create("bob", at(0), ""), refused: true, message: []string{"frozen (freeze window nightly until " + rfc(at(60))}},
		{name: "an update in the window", lock: window, req: update("bob", "kubectl-edit", at(59), ""), refused: true},
		{name: "as the window closes", lock: window, req: update("bob", "kubectl-edit", at(60), "")},
		{name: "past the windows known", lock: window, req: create("bob", at(86400), ""), refused: true, message: []string{"known only until " + rfc(at(86400))}},
		{name: "a delete while windows are set", lock: window, req: deleteOf("bob"), refused: true, message: []string{"freeze windows and this request carries no time"}},
		{name: "a delete with no windows", lock: summary{updated: written}, req: deleteOf("bob")},
		{name: "during a freeze", lock: frozen, req: create("bob", at(-1), ""), refused: true, message: []string{"is frozen (frozen until"}},
		{name: "as the freeze ends", lock: frozen, req: create("bob", at(0), "")},
		{name: "forged times", lock: summary{updated: written}, req: forgedUpdate, refused: true, message: []string{"managedFields carry times the API server did not give"}},
	}
	e.check(t, tests)
}

// lockWrite is a write of the lock's record by user, from summary before
// to summary after, stamped by the API server at t.
func lockWrite(user string, before, after summary, t time.Time) req {
	old := before.lockObject("lockctl", before.updated)
	return req{op: admission.Update, user: user, resource: configmaps, kind: cmKind, namespace: "locks", name: "lockctl-lock-web",
		object: after.lockObject("lockctl", t), old: old}
}

// TestRulesOfTheRecord: who may change the lock's record, judged at the
// API server's time of the write: a lapsed hold is anyone's to take, a
// live one only its holder's to pass on; a userless hold may be released
// by anyone; the record's own time may not run ahead of the API server's;
// a freeze is lifted early only with verb unfreeze, however the record is
// dated; every write keeps the enforced mark.
func TestRulesOfTheRecord(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t, Policy(settings(false)))
	written := at(-600)
	live := summary{updated: written, holder: "acme/web@main#41", user: "alice", token: "18842", expires: at(0), waiters: []string{"bob"}}
	byBob := summary{updated: at(-5), holder: "acme/web@main#42", user: "bob", token: "", expires: at(3600)}
	byCarol := summary{updated: at(5), holder: "acme/web@main#43", user: "carol", token: "", expires: at(3600)}
	userless := summary{updated: written, holder: "acme/web@main#41", token: "18842", expires: at(3600)}
	free := summary{updated: at(-5)}
	frozen := summary{updated: written, freezeUntil: at(0)}
	thawed := summary{updated: at(0)}
	thawedEarly := summary{updated: at(-1)}
	forgedThaw := summary{updated: at(5)} // dated past the freeze, written before its end
	shortened := live
	shortened.updated, shortened.expires = at(-5), at(-300)
	renewed := live
	renewed.updated, renewed.expires = at(-5), at(600)
	otherApps := live
	otherApps.updated, otherApps.apps = at(-5), "argocd:billing"
	unmarked := free
	unmarked.unmarked = true
	tests := []ruleCase{
		{name: "the first waiter takes a live hold", req: lockWrite("bob", live, byBob, at(-5)), refused: true, message: []string{"holder out of turn", "until " + micro(at(0))}},
		{name: "the first waiter takes a lapsed hold", req: lockWrite("bob", live, summary{updated: at(1), holder: "acme/web@main#42", user: "bob", expires: at(3600)}, at(1))},
		{name: "anyone takes a lapsed hold", req: lockWrite("carol", live, byCarol, at(5))},
		{name: "anyone hands a lapsed hold to a waiter", req: lockWrite("carol", live, summary{updated: at(5), holder: "acme/web@main#42", user: "bob", expires: at(3600)}, at(5))},
		{name: "the holder hands over", req: lockWrite("alice", live, byBob, at(-5))},
		{name: "the holder renews", req: lockWrite("alice", live, renewed, at(-5))},
		{name: "another shortens the hold", req: lockWrite("bob", live, shortened, at(-5)), refused: true, message: []string{"only the holder renews its hold"}},
		{name: "another changes the hold's applications", req: lockWrite("bob", live, otherApps, at(-5)), refused: true, message: []string{"changes the applications it names"}},
		{name: "the holder changes its applications", req: lockWrite("alice", live, otherApps, at(-5))},
		{name: "another releases a live hold", req: lockWrite("bob", live, free, at(-5)), refused: true},
		{name: "anyone releases a userless hold", req: lockWrite("bob", userless, free, at(-5))},
		{name: "a record dated ahead of the API server", req: lockWrite("bob", live, summary{updated: at(60), holder: "acme/web@main#42", user: "bob", expires: at(3600)}, at(1)), refused: true, message: []string{"later than the API server's time of the write, " + rfc(at(1))}},
		{name: "verb force takes a live hold", req: lockWrite("bob", live, byBob, at(-5)), rights: rbac{"bob": {VerbForce}}},
		{name: "a freeze lifted at its end", req: lockWrite("bob", frozen, thawed, at(0))},
		{name: "a freeze lifted before its end", req: lockWrite("bob", frozen, thawedEarly, at(-1)), refused: true, message: []string{"takes verb unfreeze"}},
		{name: "a freeze lifted before its end, dated after it", req: lockWrite("bob", frozen, forgedThaw, at(-1)), refused: true, message: []string{"later than the API server's time"}},
		{name: "a freeze lifted early with verb unfreeze", req: lockWrite("bob", frozen, thawedEarly, at(-1)), rights: rbac{"bob": {VerbUnfreeze}}},
		{name: "a write that drops the mark", req: lockWrite("bob", free, unmarked, at(-1)), refused: true, message: []string{"[lockctl-enforced=deny]"}},
	}
	e.check(t, tests)
}

// withOptions gives r the field manager of its options, as kubectl's
// --field-manager sends it.
func withOptions(r req, manager string) req {
	r.options = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{Kind: "UpdateOptions", APIVersion: "meta.k8s.io/v1"}, FieldManager: manager}
	return r
}

// TestRulesOfStrictMode: in strict mode the holder's write carries the
// hold's token itself (an object stamped by this request, or its field
// manager), or comes with the credential the hold recorded; an object
// that only inherits the token from the new holder's write, as a stale
// pipeline's patch or scale does, is refused.
func TestRulesOfStrictMode(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t, Policy(settings(true)))
	held := summary{updated: at(-60), holder: "acme/web@main#42", user: "ci", token: "T2", expires: at(3600)}
	withCredential := held
	withCredential.credential = "JTI=run-42"
	// The new holder stamped "app" with T2 at -30; the stale pipeline (T1)
	// patches it later.
	stampedByNew := entry("kubectl-client-side-apply", at(-30), TokenAnnotation)
	stalePatch := req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("3", "T2", stampedByNew, entry("kubectl-patch", at(-1))), old: app("2", "T2", stampedByNew)}
	sameSecond := req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("3", "T2", entry("kubectl-client-side-apply", at(-1), TokenAnnotation), entry("kubectl-patch", at(-1))),
		old:    app("2", "T2", entry("kubectl-client-side-apply", at(-1), TokenAnnotation))}
	reapply := req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("3", "T2", entry("kubectl-client-side-apply", at(-1), TokenAnnotation)), old: app("2", "T2", stampedByNew)}
	firstStamp := req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("3", "T2", entry("helm", at(-1), TokenAnnotation)), old: app("2", "T1", entry("helm", at(-3000), TokenAnnotation))}
	staleApply := req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("3", "T1", entry("kubectl-client-side-apply", at(-1), TokenAnnotation)), old: app("2", "T2", stampedByNew)}
	release := func(user string, extra map[string][]string) req {
		sec := map[string]any{"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
			"metadata": map[string]any{"name": "sh.helm.release.v1.web.v3", "namespace": "web", "creationTimestamp": rfc(at(-1)),
				"labels": map[string]any{"owner": "helm", "name": "web", "status": "pending-upgrade"}}}
		return req{op: admission.Create, user: user, extra: extra, resource: secrets, kind: secretKind, namespace: "web", name: "sh.helm.release.v1.web.v3", object: sec}
	}
	noop := req{op: admission.Update, user: "mallory", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
		object: app("2", "T2", stampedByNew), old: app("2", "T2", stampedByNew)}
	tests := []ruleCase{
		{name: "a patch that inherits the token", lock: held, req: stalePatch, refused: true, message: []string{"does not carry the fencing token T2", "from an earlier write"}},
		{name: "a patch with the token in its field manager", lock: held, req: withOptions(stalePatch, "lockctl-token-T2")},
		{name: "a patch in the second of the new holder's apply", lock: held, req: sameSecond, refused: true},
		{name: "a stamped re-apply in the second of the last, by the manager that owns the token", lock: held,
			req: withOptions(req{op: admission.Update, user: "ci", resource: configmaps, kind: cmKind, namespace: "web", name: "app",
				object: app("4", "T2", entry("kubectl-client-side-apply", at(-1), TokenAnnotation)), old: app("3", "T2", entry("kubectl-client-side-apply", at(-1), TokenAnnotation))},
				"kubectl-client-side-apply")},
		{name: "a patch with an old token in its field manager", lock: held, req: withOptions(stalePatch, "lockctl-token-T1"), refused: true},
		{name: "a stamped re-apply by the manager that owns the token", lock: held, req: reapply},
		{name: "the first write stamped with the hold's token", lock: held, req: firstStamp},
		{name: "a stale pipeline's stamped apply", lock: held, req: staleApply, refused: true, message: []string{"token T1"}},
		{name: "a create stamped with the token", lock: held, req: create("ci", at(-1), "T2")},
		{name: "a create without the token", lock: held, req: create("ci", at(-1), ""), refused: true},
		{name: "the holder's credential", lock: withCredential, req: func() req {
			r := stalePatch
			r.extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=run-42"}}
			return r
		}()},
		{name: "an old token, with the holder's credential: a rollback of the holding run", lock: withCredential, req: func() req {
			r := staleApply
			r.extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=run-42"}}
			return r
		}()},
		{name: "an old token, with another credential", lock: withCredential, req: func() req {
			r := staleApply
			r.extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=run-41"}}
			return r
		}(), refused: true, message: []string{"token T1"}},
		{name: "another credential of the same user", lock: withCredential, req: func() req {
			r := stalePatch
			r.extra = map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=run-41"}}
			return r
		}(), refused: true},
		{name: "Helm's release record, by the holder's user", lock: held, req: release("ci", nil)},
		{name: "Helm's release record, by another user", lock: held, req: release("mallory", nil), refused: true},
		{name: "Helm's release record, by another credential", lock: withCredential, req: release("ci", map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=run-41"}}), refused: true},
		{name: "a delete by the holder's user", lock: held, req: deleteOf("ci")},
		{name: "a write that changes nothing", lock: held, req: noop},
	}
	e.check(t, tests)
}

// TestRulesOfGitOpsAgents: a GitOps controller's write is admitted only
// for the applications the holder named, never while the lock is free
// with --require-holder, nor while it is frozen.
func TestRulesOfGitOpsAgents(t *testing.T) {
	t.Parallel()
	e := newEvaluator(t, Policy(settings(false)))
	const argo = "system:serviceaccount:argocd:argocd-application-controller"
	held := summary{updated: at(-60), holder: "acme/web@main#42", user: "ci", token: "T2", expires: at(3600), apps: "argocd:web\nflux-kustomization:apps/shop"}
	frozen := held
	frozen.freezeUntil = at(60)
	tracked := func(annotations, labels map[string]any) req {
		r := create(argo, at(-1), "")
		meta := r.object["metadata"].(map[string]any)
		meta["annotations"], meta["labels"] = annotations, labels
		return r
	}
	tests := []ruleCase{
		{name: "Argo CD syncs the holder's app", lock: held, req: tracked(map[string]any{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:web/app"}, nil)},
		{name: "Argo CD syncs another app", lock: held, req: tracked(map[string]any{"argocd.argoproj.io/tracking-id": "billing:/ConfigMap:web/app"}, nil), refused: true, message: []string{"application argocd:web, flux-kustomization:apps/shop", "belongs to none of them"}},
		{name: "Argo CD by label", lock: held, req: tracked(nil, map[string]any{"app.kubernetes.io/instance": "web"})},
		{name: "Flux applies the holder's Kustomization", lock: held, req: tracked(nil, map[string]any{"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "apps"})},
		{name: "helm-controller writes the holder's HelmRelease's release record", lock: func() summary { h := held; h.apps = "flux-helmrelease:apps/web"; return h }(),
			req: func() req {
				r := create(argo, at(-1), "")
				r.resource, r.kind = secrets, secretKind
				r.object["type"] = "helm.sh/release.v1"
				r.object["metadata"].(map[string]any)["labels"] = map[string]any{"owner": "helm", "name": "apps-web"}
				return r
			}()},
		{name: "Flux applies another Kustomization", lock: held, req: tracked(nil, map[string]any{"kustomize.toolkit.fluxcd.io/name": "shop", "kustomize.toolkit.fluxcd.io/namespace": "other"}), refused: true},
		{name: "Argo CD during a freeze", lock: frozen, req: tracked(map[string]any{"argocd.argoproj.io/tracking-id": "web:/ConfigMap:web/app"}, nil), refused: true, message: []string{"is frozen"}},
	}
	e.check(t, tests)
}
