package enforce_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// The fence keeps the API server's time: between the steps that matter
// below, no lockctl process runs and nothing writes the lock; the API
// server alone judges each write at the time it stamps it with.

// sleepUntil sleeps until t on this machine's clock, which the test
// control plane shares.
func sleepUntil(t *testing.T, at time.Time) {
	t.Helper()
	select {
	case <-time.After(time.Until(at)):
	case <-t.Context().Done():
		t.Fatal(t.Context().Err())
	}
}

// create writes a new ConfigMap in ns as u, named after what it tests.
func (u *user) create(ctx context.Context, ns, name string) error {
	_, err := u.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"by": u.name}}, metav1.CreateOptions{})
	return err
}

// refused reports whether err is the policy's refusal.
func refused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "lockctl refused")
}

// enforced installs the policy of s as lockctl enforce does (which first
// makes the lock exist, so that the policy has its parameter), removes it
// when the test ends, and in deny mode waits until the API server applies
// it; it returns the admin's lock client that enforced it.
func enforced(t *testing.T, env *testenv.Env, s enforce.Settings) *lock.Client {
	t.Helper()
	admin := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), s.LockNamespace, clock.RealClock{}, lock.Options{})
	_, err := enforce.Enforce(t.Context(), env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), s.Target)
		assert.NoError(t, err)
	})
	if s.Mode == enforce.ModeDeny {
		require.NoError(t, enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s, 20*time.Millisecond, time.Minute))
	}
	return admin
}

// TestIntegrationFenceWindowOpensAndCloses: a freeze window on a free,
// enforced target refuses a non-holder's create and update from the
// second it opens, and admits them again once it closes, with nobody
// writing the lock in between; a delete, which carries no time, needs
// the lock while windows are set.
func TestIntegrationFenceWindowOpensAndCloses(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	bob := newUser(t, env, "bob", target, lockNS)
	windows := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: lockNS},
		Data:       map[string]string{record.FreezeWindowsKey: fmt.Sprintf("windows:\n- name: minutely\n  schedule: \"* * * * *\"\n  duration: 6s\n  reason: test\n  targets: [%s]\n", target)},
	}
	_, err := env.Client.CoreV1().ConfigMaps(lockNS).Create(t.Context(), windows, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, bob.create(t.Context(), target, "app"))
	// The lock is written between windows: a request without a time is
	// judged at the lock's last write, which in a window would say frozen
	// rather than that the request carries no time.
	if between := time.Now().Truncate(time.Minute).Add(10 * time.Second); time.Now().Before(between) {
		sleepUntil(t, between)
	} else if time.Now().After(between.Add(30 * time.Second)) {
		sleepUntil(t, between.Add(time.Minute))
	}
	enforced(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})

	// The next minute's window, at least 8 s away: the lock is written now
	// and not again.
	open := time.Now().Truncate(time.Minute).Add(time.Minute)
	if time.Until(open) < 8*time.Second {
		open = open.Add(time.Minute)
	}
	sleepUntil(t, open.Add(-2*time.Second))
	require.NoError(t, bob.create(t.Context(), target, "before"), "two seconds before the window")
	sleepUntil(t, open.Add(time.Second))
	err = bob.create(t.Context(), target, "during")
	assert.True(t, refused(err), "a create a second into the window: %v", err)
	assert.Contains(t, fmt.Sprint(err), "freeze window minutely until "+open.Add(6*time.Second).UTC().Format(time.RFC3339))
	err = bob.write(t.Context(), target, "")
	assert.True(t, refused(err), "an update a second into the window: %v", err)
	err = bob.client.CoreV1().ConfigMaps(target).Delete(t.Context(), "before", metav1.DeleteOptions{})
	assert.True(t, refused(err), "a delete carries no time: %v", err)
	assert.Contains(t, fmt.Sprint(err), "this request carries no time")
	sleepUntil(t, open.Add(7*time.Second))
	require.NoError(t, bob.create(t.Context(), target, "after"), "a second after the window closed")
	require.NoError(t, bob.write(t.Context(), target, ""), "an update after the window")

	cm, err := env.Client.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Less(t, cm.CreationTimestamp.Time, open.Add(-2*time.Second), "the lock was written before the window, and not since")
	for _, f := range cm.ManagedFields {
		assert.True(t, f.Time.Time.Before(open.Add(-2*time.Second)), "no write of the lock at %s", f.Time)
	}
}

// TestIntegrationFenceHoldLapses: a hold whose holder died (no renewal)
// refuses others until its expiry and admits them after it, with nobody
// writing the lock; any contender then takes it over, not only a waiter.
func TestIntegrationFenceHoldLapses(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	carol := newUser(t, env, "carol", target, lockNS)
	require.NoError(t, bob.create(t.Context(), target, "app"))
	enforced(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny, RequireHolder: false})

	req := alice.request(target, 1)
	req.TTL = 6 * time.Second
	held, err := alice.locks.Acquire(t.Context(), req)
	require.NoError(t, err)
	require.NotNil(t, held.Holder.Expires)
	expires := held.Holder.Expires.Time
	// alice dies here: nothing renews or releases her hold.
	err = awaitRefused(t, bob, target, "")
	assert.Contains(t, err.Error(), "is locked by acme/alice@main#1 (user alice)")
	require.True(t, time.Until(expires) > time.Second, "the test saw the hold before it lapsed")
	sleepUntil(t, expires.Add(time.Second))
	require.NoError(t, bob.write(t.Context(), target, ""), "a second after the hold lapsed, with nobody writing the lock")
	require.NoError(t, bob.create(t.Context(), target, "after"))

	// carol never queued: she takes the lapsed hold over.
	took, err := carol.locks.Acquire(t.Context(), carol.request(target, 1))
	require.NoError(t, err, "any contender takes over a lapsed hold")
	assert.Equal(t, "carol", took.Holder.Repo)
	err = awaitRefused(t, bob, target, "")
	assert.Contains(t, err.Error(), "is locked by acme/carol@main#1 (user carol)")
}

// TestIntegrationFenceFreezeEnds: a freeze set with lockctl freeze refuses
// everyone until its end and nobody after it, with nobody writing the lock;
// then anyone's acquire drops it without verb unfreeze. Before its end, a
// user without the verb cannot lift it by dating the record past it.
func TestIntegrationFenceFreezeEnds(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	ops := newUser(t, env, "ops", target, lockNS, rights(target, enforce.VerbFreeze))
	require.NoError(t, alice.create(t.Context(), target, "app"))
	enforced(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})

	until := time.Now().Add(8 * time.Second)
	_, err := ops.locks.Freeze(t.Context(), record.FreezeRequest{Target: target, By: ops.request(target, 1).Identity, Reason: "release party", Until: until})
	require.NoError(t, err)
	err = awaitRefused(t, alice, target, "")
	assert.Contains(t, err.Error(), "is frozen")

	// alice replays the record with the freeze gone and dated past its
	// end, in a second of her own.
	time.Sleep(1100 * time.Millisecond)
	cms := alice.client.CoreV1().ConfigMaps(lockNS)
	cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	forged := forge(cm, func(a map[string]string) {
		for _, k := range []string{record.SummaryFrozenAnnotation, record.SummaryFreezeAnnotation, record.SummaryFreezeUntilAnnotation} {
			delete(a, k)
		}
	}, until.Add(time.Second))
	_, err = cms.Update(t.Context(), forged, metav1.UpdateOptions{})
	require.True(t, refused(err), "a freeze lifted early by dating the record past its end: %v", err)
	assert.Contains(t, err.Error(), "later than the API server's time of the write")

	sleepUntil(t, until.Add(time.Second))
	require.NoError(t, alice.write(t.Context(), target, ""), "a second after the freeze ended, with nobody writing the lock")
	_, err = alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err, "the acquire that drops the ended freeze needs no verb")
}

// rights are verbs on lockctl's virtual resource for target's lock.
func rights(target string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{enforce.APIGroup}, Resources: []string{enforce.Resource}, ResourceNames: []string{target}, Verbs: verbs}
}

// forge returns the lock cm as a user editing it by hand writes it: its
// summary annotations changed by edit, and the record and its summary
// dated updated (the policy reads the summary, which must carry the
// record's updated).
func forge(cm *corev1.ConfigMap, edit func(map[string]string), updated time.Time) *corev1.ConfigMap {
	out := cm.DeepCopy()
	edit(out.Annotations)
	was, now := out.Annotations[record.SummaryUpdatedAnnotation], updated.UTC().Format(metav1.RFC3339Micro)
	out.Annotations[record.RecordAnnotation] = strings.Replace(out.Annotations[record.RecordAnnotation], `"updated":"`+was+`"`, `"updated":"`+now+`"`, 1)
	out.Annotations[record.SummaryUpdatedAnnotation] = now
	return out
}

// TestIntegrationFenceEveryHoldFenced: a hold taken before the lock was
// enforced has no user: enforce refuses it without --force, and with it
// the hold is fenced by its token and its holder can still release it; a
// lock deleted and created again keeps the enforced mark and its holder's
// user; manifests applied before any lockctl enforce (GitOps) make the
// first contender mark the lock.
func TestIntegrationFenceEveryHoldFenced(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	first := alice.request(target, 1)
	first.User = "" // as acquire records it on a lock not enforced
	held, err := alice.locks.Acquire(t.Context(), first)
	require.NoError(t, err)
	assert.Empty(t, held.Holder.User)

	s := enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny}
	admin := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	_, err = enforce.Enforce(t.Context(), env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
	var userless *enforce.UserlessHoldError
	require.ErrorAs(t, err, &userless, "a hold without a user")
	_, err = enforce.Enforce(t.Context(), env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{Force: true})
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), target) })
	require.NoError(t, enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s, 20*time.Millisecond, time.Minute))

	err = awaitRefused(t, bob, target, "")
	assert.Contains(t, err.Error(), "a hold without a Kubernetes user")
	assert.True(t, refused(alice.write(t.Context(), target, "")), "the holder, unknown by user, is fenced by its token")
	awaitAdmitted(t, alice, target, held.Token)
	_, err = alice.locks.ReleaseHeld(t.Context(), held, lock.ReleaseOptions{})
	require.NoError(t, err, "the holder releases a hold without a user")

	// Deleted (it is free) and created again by the next contender.
	require.NoError(t, env.Client.CoreV1().ConfigMaps(lockNS).Delete(t.Context(), record.Name(target), metav1.DeleteOptions{}))
	fresh := lock.New(alice.kube.CoreV1(), alice.kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{ConfirmAfter: -1})
	req := alice.request(target, 2)
	req.Callbacks.LookupUser = func(context.Context) record.User { return record.User{Name: "alice"} }
	_, err = fresh.Acquire(t.Context(), req)
	require.NoError(t, err, "the create guard's refusal makes the contender mark the lock")
	cm, err := env.Client.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "deny", cm.Annotations[record.EnforcedAnnotation], "created again, marked")
	assert.Equal(t, "alice", cm.Annotations[record.SummaryHolderUserAnnotation], "with its holder's user")
	assert.Contains(t, awaitRefused(t, bob, target, "").Error(), "is locked by acme/alice@main#2 (user alice)")
}

// TestIntegrationFenceGitOpsFirst: the manifests of enforce --dry-run
// applied before lockctl enforce ever ran (a GitOps repository): the
// first contender learns from the refusal that the lock is enforced,
// marks it and records its user, and others are refused.
func TestIntegrationFenceGitOpsFirst(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	s := enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny}
	_, err := enforce.Install(t.Context(), env.Kube.AdmissionregistrationV1(), s)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), target) })

	req := alice.request(target, 1)
	req.Callbacks.LookupUser = func(context.Context) record.User { return record.User{Name: "alice"} }
	// The create guard applies asynchronously: until it does, the lock is
	// created unmarked, and the main policy then asks for the mark.
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		h, err := alice.locks.Acquire(ctx, req)
		if err != nil {
			return false, err
		}
		cm, err := env.Client.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(target), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if cm.Annotations[record.SummaryHolderUserAnnotation] == "alice" {
			return true, nil
		}
		_, err = alice.locks.ReleaseHeld(ctx, h, lock.ReleaseOptions{})
		return false, err
	}), "the contender marks the lock and records its user")
	assert.Contains(t, awaitRefused(t, bob, target, "").Error(), "is locked by acme/alice@main#1 (user alice)")
}

// TestIntegrationFenceFirstWaiterForgery: the first waiter cannot make
// itself holder of a live hold by replacing the record (kubectl replace),
// and nobody can shorten someone else's hold.
func TestIntegrationFenceFirstWaiterForgery(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	enforced(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})
	req := alice.request(target, 1)
	req.TTL = time.Hour
	_, err := alice.locks.Acquire(t.Context(), req)
	require.NoError(t, err)
	_, progress, err := bob.locks.TryAcquire(t.Context(), bob.request(target, 1))
	require.NoError(t, err)
	require.NotNil(t, progress, "bob waits first in the queue")

	cms := bob.client.CoreV1().ConfigMaps(lockNS)
	cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "bob", cm.Annotations[record.SummaryNextUserAnnotation])
	taken := forge(cm, func(a map[string]string) {
		a[record.SummaryHolderAnnotation], a[record.SummaryHolderUserAnnotation] = "acme/bob@main#1", "bob"
		delete(a, record.SummaryNextUserAnnotation)
		delete(a, record.SummaryWaiterUsersAnnotation)
	}, time.Now())
	_, err = cms.Update(t.Context(), taken, metav1.UpdateOptions{})
	require.True(t, refused(err), "the first waiter takes a live hold: %v", err)
	assert.Contains(t, err.Error(), "it would make bob holder out of turn")

	shortened := forge(cm, func(a map[string]string) {
		a[record.SummaryExpiresAnnotation] = time.Now().Add(-time.Minute).UTC().Format(metav1.RFC3339Micro)
	}, time.Now())
	_, err = cms.Update(t.Context(), shortened, metav1.UpdateOptions{})
	require.True(t, refused(err), "a waiter shortens the hold: %v", err)
	assert.Contains(t, err.Error(), "only the holder renews its hold or changes the applications it names")
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	assert.False(t, apierrors.IsForbidden(err) && refused(err), "the record as it was is no forgery: %v", err)
}

// TestIntegrationFenceSettingsInForce: once AwaitInEffect returns for new
// settings of an enforced target, they are in force: the first unstamped
// write after enforce --strict returned is refused, every time.
func TestIntegrationFenceSettingsInForce(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	s := enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny}
	admin := enforced(t, env, s)
	_, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	awaitAdmitted(t, alice, target, "")
	for i := range 5 {
		s.Strict = i%2 == 0
		_, err := enforce.Enforce(t.Context(), env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
		require.NoError(t, err)
		require.NoError(t, enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s, 20*time.Millisecond, time.Minute))
		err = alice.write(t.Context(), target, "")
		if s.Strict {
			assert.True(t, refused(err), "trial %d: the first unstamped write after --strict is refused: %v", i, err)
		} else {
			assert.NoError(t, err, "trial %d: the first unstamped write after strict was dropped", i)
		}
	}
}

// concrete is p matching each group's served version, not "*": the type
// checker skips a rule with a wildcard, having no schema to check it by.
func concrete(p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p = p.DeepCopy()
	versions := map[string]string{"": "v1", "apps": "v1", "batch": "v1", "networking.k8s.io": "v1", "autoscaling": "v2", "policy": "v1"}
	for i := range p.Spec.MatchConstraints.ResourceRules {
		r := &p.Spec.MatchConstraints.ResourceRules[i].Rule
		r.APIVersions = []string{versions[r.APIGroups[0]]}
	}
	return p
}

// TestIntegrationFencePolicyTypeChecks: the policy type-checks, as the
// API server's type checker (k8s.io/apiserver's, which the controller
// manager runs to fill a policy's status) checks it, against the schemas
// the API server serves of the kinds it matches and of its parameter:
// no warning, in every branch the settings render.
func TestIntegrationFencePolicyTypeChecks(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.RESTConfig)
	require.NoError(t, err)
	checker := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
	}
	for _, s := range []enforce.Settings{
		{Target: "web", LockNamespace: "locks", Mode: enforce.ModeDeny},
		{Target: "web", LockNamespace: "locks", Mode: enforce.ModeDeny, Strict: true, RequireHolder: true,
			Agents: []string{"system:serviceaccount:argocd:argocd-application-controller"}, Exempt: []string{"ops"}},
	} {
		p := concrete(enforce.Policy(s))
		for _, w := range checker.Check(p) {
			t.Errorf("%+v: %s: %s", s, w.FieldRef, w.Warning)
		}
		guard, _ := enforce.CreateGuard(s)
		for _, w := range checker.Check(concrete(guard)) {
			t.Errorf("create guard of %+v: %s: %s", s, w.FieldRef, w.Warning)
		}
	}
	// The checker bites: a validation that adds a number to a name.
	broken := concrete(enforce.Policy(enforce.Settings{Target: "web", LockNamespace: "locks"}))
	broken.Spec.Validations[0].Expression = "object.metadata.name + 1 == 'x' || variables.admitted"
	assert.NotEmpty(t, checker.Check(broken), "a type error is found")
}
