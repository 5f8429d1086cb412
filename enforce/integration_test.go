package enforce_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// user is one Kubernetes user of a test: its clients, impersonated from the
// admin's, and what it sees of warnings.
type user struct {
	name     string
	client   kubernetes.Interface
	kube     kube.Interface
	locks    *lock.Client
	warnings *warnings
}

// warnings collects the API server's warnings to one user.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// newUser returns the clients of name, who may write ConfigMaps and
// Services in the target and the locks in the lock namespace; extra rules
// are granted in the lock namespace too.
func newUser(t *testing.T, env *testenv.Env, name, target, lockNS string, extra ...rbacv1.PolicyRule) *user {
	t.Helper()
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: name}
	w := &warnings{}
	cfg.WarningHandler = w
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	kc, err := kube.NewForConfig(cfg)
	require.NoError(t, err)
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	role := strings.NewReplacer(":", "-").Replace(name)
	env.Grant(t, target, "writer-"+role, subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: all}})
	rules := append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}, extra...)
	if target != lockNS {
		env.Grant(t, lockNS, "locker-"+role, subject, rules)
	}
	me, err := enforce.WhoAmI(t.Context(), kc.AuthenticationV1())
	require.NoError(t, err)
	require.Equal(t, name, me.Name, "the SelfSubjectReview names the impersonated user")
	return &user{
		name: name, client: client, kube: kc, warnings: w,
		locks: lock.New(kc.CoreV1(), kc.CoreV1(), lockNS, clock.RealClock{}, lock.Options{ConfirmAfter: -1}),
	}
}

// request is the lock request of u for build n of its own branch.
func (u *user) request(target string, n int) lock.Request {
	return lock.Request{
		Target: target, User: u.name, Policy: record.PolicyFIFO, TTL: time.Minute,
		Identity: record.Identity{Owner: "acme", Repo: u.name, Branch: "main", Build: fmt.Sprint(n)},
	}
}

// write creates or updates the ConfigMap "app" in ns as u, with the token
// annotation when token is not empty.
func (u *user) write(ctx context.Context, ns, token string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"by": u.name, "at": time.Now().String()}}
	if token != "" {
		cm.Annotations = map[string]string{enforce.TokenAnnotation: token}
	}
	_, err := u.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = u.client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	}
	return err
}

// awaitRefused writes as u until the write is refused by the policy (the
// API server's policy informer and its params informer apply changes
// asynchronously), and returns the refusal.
func awaitRefused(t *testing.T, u *user, ns, token string) error {
	t.Helper()
	var refusal error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := u.write(ctx, ns, token)
		if err != nil && strings.Contains(err.Error(), "lockctl refused") {
			refusal = err
			return true, nil
		}
		return false, nil
	})
	require.NoError(t, err, "%s's write to %s was never refused", u.name, ns)
	return refusal
}

// awaitAdmitted writes as u until the write is admitted.
func awaitAdmitted(t *testing.T, u *user, ns, token string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		last = u.write(ctx, ns, token)
		return last == nil, nil
	})
	require.NoError(t, err, "%s's write to %s was never admitted: %v", u.name, ns, last)
}

// install enforces s as lockctl enforce does (enforced).
func install(t *testing.T, env *testenv.Env, s enforce.Settings) { enforced(t, env, s) }

// TestIntegrationEnforceHolder: with the lock enforced in deny mode, only
// the holder's user writes the target; the others are refused with a
// message naming the lock, the holder, its token and what to do; a free
// lock admits everyone; the lock's own flow (acquire, queue, hand-over,
// release) works under the policy.
func TestIntegrationEnforceHolder(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})

	// Free: everyone writes.
	require.NoError(t, alice.write(t.Context(), target, ""))
	require.NoError(t, bob.write(t.Context(), target, ""))

	held, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	refusal := awaitRefused(t, bob, target, "")
	msg := refusal.Error()
	assert.True(t, apierrors.IsForbidden(refusal) || apierrors.IsInvalid(refusal), "refusal %v", refusal)
	for _, want := range []string{"lockctl refused this write", "locked by acme/alice@main#1", "(user alice)", "fencing token " + held.Token, lockNS + "/" + record.Name(target), "lockctl acquire " + target} {
		assert.Contains(t, msg, want)
	}
	assert.NotContains(t, msg, "\n", "one line")
	require.NoError(t, alice.write(t.Context(), target, ""), "the holder writes")

	// Bob queues (his own user in the queue), is handed the lock at
	// alice's release, and then writes while alice is refused.
	done := make(chan error, 1)
	var bobHeld *lock.Held
	go func() {
		var err error
		bobHeld, err = bob.locks.Acquire(t.Context(), bob.request(target, 1))
		done <- err
	}()
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		v, err := alice.locks.Get(ctx, target)
		return err == nil && v != nil && len(v.Status.Waiters) == 1, err
	}), "bob queues")
	_, err = alice.locks.ReleaseHeld(t.Context(), held, lock.ReleaseOptions{})
	require.NoError(t, err, "alice hands over under the policy")
	require.NoError(t, <-done, "bob takes the lock")
	assert.Contains(t, awaitRefused(t, alice, target, "").Error(), "is locked by acme/bob@main#1")
	require.NoError(t, bob.write(t.Context(), target, ""))
	_, err = bob.locks.ReleaseHeld(t.Context(), bobHeld, lock.ReleaseOptions{})
	require.NoError(t, err)
	awaitAdmitted(t, alice, target, "")
}

// TestIntegrationEnforceStrictStaleHolder: two builds of one user (one
// service account); right after the hand-over from the first to the
// second, the first's write, stamped with its old token, is refused, and
// the second's, with the new token, admitted; an unstamped write is
// refused with a message that names the annotation.
func TestIntegrationEnforceStrictStaleHolder(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	ci := newUser(t, env, "system:serviceaccount:ci:deployer", target, lockNS)
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny, Strict: true})

	first, err := ci.locks.Acquire(t.Context(), ci.request(target, 1))
	require.NoError(t, err)
	awaitAdmitted(t, ci, target, first.Token)
	refusal := awaitRefused(t, ci, target, "")
	assert.Contains(t, refusal.Error(), "does not carry the fencing token "+first.Token)
	assert.Contains(t, refusal.Error(), enforce.TokenAnnotation)

	done := make(chan error, 1)
	var second *lock.Held
	go func() {
		var err error
		second, err = ci.locks.Acquire(t.Context(), ci.request(target, 2))
		done <- err
	}()
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		v, err := ci.locks.Get(ctx, target)
		return err == nil && v != nil && len(v.Status.Waiters) == 1, err
	}), "build 2 queues")
	_, err = ci.locks.ReleaseHeld(t.Context(), first, lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NoError(t, <-done)
	require.NotEqual(t, first.Token, second.Token)

	refusal = awaitRefused(t, ci, target, first.Token)
	assert.Contains(t, refusal.Error(), "fencing token "+second.Token)
	// The policy reads the lock through the API server's informer: the
	// new holder's stamped write is admitted once it has seen the hold.
	awaitAdmitted(t, ci, target, second.Token)
}

// TestIntegrationEnforceFreezeAndBreakGlass: while the lock is frozen even
// its holder is refused, with the freeze's reason in the message; a user
// granted verb breakglass on locks.lockctl.dev writes all the same.
func TestIntegrationEnforceFreezeAndBreakGlass(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	rights := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{enforce.APIGroup}, Resources: []string{enforce.Resource}, ResourceNames: []string{target}, Verbs: verbs}
	}
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS, rights(enforce.VerbFreeze))
	carol := newUser(t, env, "carol", target, lockNS, rights(enforce.VerbBreakGlass, enforce.VerbUnfreeze))
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})

	_, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	freeze := func(u *user) error {
		_, err := u.locks.Freeze(t.Context(), record.FreezeRequest{Target: target, By: u.request(target, 1).Identity, Reason: "release party", Until: time.Now().Add(time.Hour)})
		return err
	}
	err = freeze(alice)
	require.Error(t, err, "freezing takes the right to")
	assert.Contains(t, err.Error(), "lockctl refused this change of lock "+lockNS+"/"+record.Name(target)+": freezing it")
	assert.Contains(t, err.Error(), "takes verb freeze on locks.lockctl.dev "+target+", which user alice has not")
	require.NoError(t, freeze(bob), "bob may freeze")

	refusal := awaitRefused(t, alice, target, "")
	assert.Contains(t, refusal.Error(), "is frozen (frozen until")
	assert.Contains(t, refusal.Error(), `"release party"`)
	assert.Contains(t, refusal.Error(), "declare break-glass with `lockctl break-glass "+target+" --reason ...`")
	require.Error(t, carol.write(t.Context(), target, ""), "the right alone admits nothing: break-glass is declared first")

	// Break-glass: declared by its user, with the right, and seen.
	grant := func(u *user, as string) error {
		_, err := u.locks.GrantBreakGlass(t.Context(), lock.BreakGlassRequest{Target: target, User: as, By: u.request(target, 9).Identity, Reason: "roll back", For: time.Hour})
		return err
	}
	err = grant(alice, "alice")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "declaring break-glass takes verb breakglass on locks.lockctl.dev "+target+", which user alice has not")
	err = grant(carol, "alice")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "break-glass is declared by its user only, and this grants it to alice, as user carol")
	carol.locks = lock.New(carol.kube.CoreV1(), carol.kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{ConfirmAfter: -1, Events: &eventWriter{t: t, client: carol.client}})
	require.NoError(t, grant(carol, "carol"))
	awaitAdmitted(t, carol, target, "")
	require.Error(t, alice.write(t.Context(), target, ""), "the grant admits its user only")
	admin, err := kubernetes.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := admin.EventsV1().Events(lockNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range list.Items {
			if e.Reason == "BreakGlass" && strings.Contains(e.Note, `break-glass for user carol by acme/carol@main#9`) && strings.Contains(e.Note, `"roll back"`) {
				return true, nil
			}
		}
		return false, nil
	}), "a BreakGlass Event on the lock")

	for _, u := range []*user{alice, bob} {
		_, err = u.locks.Unfreeze(t.Context(), target)
		require.Error(t, err, "%s may not lift the freeze before it ends", u.name)
		assert.Contains(t, err.Error(), "lifting its freeze (frozen until")
		assert.Contains(t, err.Error(), "takes verb unfreeze")
	}
	_, err = carol.locks.Unfreeze(t.Context(), target)
	require.NoError(t, err, "carol may unfreeze")
	awaitAdmitted(t, alice, target, "")
	cm, err := env.Kube.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, record.BreakGlassUserAnnotation, "the grant ended with the freeze it was for")
	assert.Contains(t, awaitRefused(t, carol, target, "").Error(), "is locked by acme/alice@main#1", "the grant ended: carol is refused again")
}

// TestIntegrationEnforceFreezeNeedsNoRights: the writes of freezes nobody
// set by hand need no right: an acquire that writes a freeze window's
// freeze, and the first write after a freeze ended, which drops it.
func TestIntegrationEnforceFreezeNeedsNoRights(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS,
		rbacv1.PolicyRule{APIGroups: []string{enforce.APIGroup}, Resources: []string{enforce.Resource}, Verbs: []string{enforce.VerbFreeze}})
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})

	_, err := bob.locks.Freeze(t.Context(), record.FreezeRequest{Target: target, By: bob.request(target, 1).Identity, Reason: "short", Until: time.Now().Add(2 * time.Second)})
	require.NoError(t, err)
	// As a lockctl whose summary has no freeze-until left it: the policy
	// reads the end from the freeze's description.
	cms := alice.client.CoreV1().ConfigMaps(lockNS)
	cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	delete(cm.Annotations, record.SummaryFreezeUntilAnnotation)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	time.Sleep(3 * time.Second)
	_, err = alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err, "the freeze ended: the write that drops it needs no right")
	_, err = alice.locks.Release(t.Context(), target, alice.request(target, 1).Identity, lock.ReleaseOptions{})
	require.NoError(t, err)

	windows := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: lockNS},
		Data:       map[string]string{record.FreezeWindowsKey: "windows:\n- name: always\n  schedule: \"* * * * *\"\n  duration: 2m\n  reason: change freeze\n"},
	}
	_, err = env.Kube.CoreV1().ConfigMaps(lockNS).Create(t.Context(), windows, metav1.CreateOptions{})
	require.NoError(t, err)
	fresh := lock.New(alice.kube.CoreV1(), alice.kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{ConfirmAfter: -1})
	held, progress, err := fresh.TryAcquire(t.Context(), alice.request(target, 2))
	require.NoError(t, err, "queued behind the window's freeze")
	assert.Nil(t, held)
	require.NotNil(t, progress)
	require.NotNil(t, progress.Freeze, "the window freezes the lock")
	cm, err = env.Kube.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "always", cm.Annotations[record.SummaryFreezeWindowAnnotation], "alice wrote the window's freeze without a right")
}

// TestIntegrationEnforceWarnMode: in warn mode a refused write is admitted,
// and the client gets the refusal as a warning.
func TestIntegrationEnforceWarnMode(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeWarn})
	_, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	var warned []string
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := bob.write(ctx, target, ""); err != nil {
			return false, err
		}
		warned = bob.warnings.take()
		return len(warned) > 0, nil
	}), "bob's writes are admitted and, once the policy applies, warned")
	assert.Contains(t, strings.Join(warned, "\n"), "lockctl refused this write: namespace "+target+" is locked by acme/alice@main#1")
	require.NoError(t, alice.write(t.Context(), target, ""))
	assert.Empty(t, alice.warnings.take(), "the holder is not warned")
}

// TestIntegrationEnforceForgedRecord: a user who may update the lock's
// ConfigMap cannot write itself in as holder, nor a record whose summary
// does not match it, nor delete the lock while someone else holds it.
func TestIntegrationEnforceForgedRecord(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	install(t, env, enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny})
	_, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	assert.Contains(t, awaitRefused(t, bob, target, "").Error(), "is locked by acme/alice@main#1")

	cms := bob.client.CoreV1().ConfigMaps(lockNS)
	forge := func(edit func(cm *corev1.ConfigMap)) error {
		cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
		require.NoError(t, err)
		edit(cm)
		_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
		return err
	}
	err = forge(func(cm *corev1.ConfigMap) {
		cm.Annotations[record.RecordAnnotation] = strings.Replace(cm.Annotations[record.RecordAnnotation], `"user":"alice"`, `"user":"bob"`, 1)
		cm.Annotations[record.SummaryHolderUserAnnotation] = "bob"
	})
	require.Error(t, err, "bob writes himself in as holder")
	assert.Contains(t, err.Error(), "lockctl refused this change of lock "+lockNS+"/"+record.Name(target)+": it would make bob holder out of turn")
	err = forge(func(cm *corev1.ConfigMap) {
		cm.Annotations[record.RecordAnnotation] = strings.Replace(cm.Annotations[record.RecordAnnotation], `"updated":"`, `"updated":"1`, 1)
	})
	require.Error(t, err, "a record its summary does not match")
	assert.Contains(t, err.Error(), "do not match its record")
	err = cms.Delete(t.Context(), record.Name(target), metav1.DeleteOptions{})
	require.Error(t, err, "bob deletes alice's lock")
	assert.Contains(t, err.Error(), "lockctl refused this change")
	assert.Contains(t, awaitRefused(t, bob, target, "").Error(), "is locked by acme/alice@main#1")
}

// TestIntegrationEnforceRequireHolderAndUninstall: with --require-holder a
// target nobody holds refuses everyone, and lockctl can still take its
// lock; the holder writes once it takes the lock; uninstalling leaves no
// policy or binding behind and admits everyone again.
func TestIntegrationEnforceRequireHolderAndUninstall(t *testing.T) {
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	alice := newUser(t, env, "alice", target, lockNS)
	bob := newUser(t, env, "bob", target, lockNS)
	s := enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny, RequireHolder: true}
	install(t, env, s)
	refusal := awaitRefused(t, bob, target, "")
	assert.Contains(t, refusal.Error(), "nobody holds it; take it with `lockctl acquire "+target+"` first")

	h, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	awaitAdmitted(t, alice, target, "")
	_, err = alice.locks.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
	require.NoError(t, err)
	refusal = awaitRefused(t, alice, target, "")
	assert.Contains(t, refusal.Error(), "nobody holds it; take it with `lockctl acquire "+target+"` first")

	st, err := enforce.Status(t.Context(), env.Kube.AdmissionregistrationV1(), target)
	require.NoError(t, err)
	assert.Equal(t, enforce.State{Enforced: true, Mode: enforce.ModeDeny, RequireHolder: true}, st)
	removed, err := enforce.Uninstall(t.Context(), env.Kube.AdmissionregistrationV1(), target)
	require.NoError(t, err)
	assert.True(t, removed)
	selector := metav1.ListOptions{LabelSelector: record.KindLabel + "=" + enforce.KindValue + "," + record.TargetLabel + "=" + target}
	ps, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(t.Context(), selector)
	require.NoError(t, err)
	assert.Empty(t, ps.Items, "policies left behind")
	bs, err := env.Client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().List(t.Context(), selector)
	require.NoError(t, err)
	assert.Empty(t, bs.Items, "bindings left behind")
	awaitAdmitted(t, bob, target, "")
}

// TestIntegrationEnforceTargetNotCreatedYet: a lock may be enforced before
// its namespace exists. The probe cannot tell whether the policy is in
// effect there and says so at once (the command then says the policy
// applies once the namespace is created), instead of polling until its
// timeout; once the namespace is created, the policy refuses its writes.
func TestIntegrationEnforceTargetNotCreatedYet(t *testing.T) {
	env := testenv.Get(t)
	lockNS := env.Namespace(t)
	target := "later-" + lockNS
	s := enforce.Settings{Target: target, LockNamespace: lockNS, Mode: enforce.ModeDeny}
	admin := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	_, err := enforce.Enforce(t.Context(), env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), target)
		assert.NoError(t, err)
	})
	err = enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s, 20*time.Millisecond, 0)
	require.ErrorIs(t, err, enforce.ErrNoTargetNamespace)

	_, err = env.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: target}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = env.Client.CoreV1().Namespaces().Delete(context.Background(), target, metav1.DeleteOptions{})
	})
	require.NoError(t, enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s, 20*time.Millisecond, 30*time.Second))
	alice := newUser(t, env, "alice", target, lockNS)
	h, err := alice.locks.Acquire(t.Context(), alice.request(target, 1))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = alice.locks.ReleaseHeld(context.Background(), h, lock.ReleaseOptions{}) })
	bob := newUser(t, env, "bob", target, lockNS)
	refusal := awaitRefused(t, bob, target, "")
	assert.Contains(t, refusal.Error(), "lockctl refused")
}

// eventWriter writes the lock's Events as lockctl's recorder does, in
// short: the events package is above this one.
type eventWriter struct {
	t      *testing.T
	client kubernetes.Interface
}

func (w *eventWriter) Event(ctx context.Context, cm *corev1.ConfigMap, warning bool, action, reason, note string) {
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	_, err := w.client.EventsV1().Events(cm.Namespace).Create(ctx, &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: "lock-"},
		EventTime:           metav1.NowMicro(),
		ReportingController: "lockctl.dev/lockctl",
		ReportingInstance:   "enforce-test",
		Action:              action,
		Reason:              reason,
		Note:                note,
		Type:                typ,
		Regarding:           corev1.ObjectReference{Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: cm.UID, APIVersion: "v1"},
	}, metav1.CreateOptions{})
	assert.NoError(w.t, err, "write the Event")
}
