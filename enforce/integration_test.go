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
	env.Grant(t, target, "writer-"+name, subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps", "services"}, Verbs: all}})
	rules := append([]rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}, extra...)
	if target != lockNS {
		env.Grant(t, lockNS, "locker-"+name, subject, rules)
	}
	me, err := enforce.WhoAmI(t.Context(), kc.AuthenticationV1())
	require.NoError(t, err)
	require.Equal(t, name, me, "the SelfSubjectReview names the impersonated user")
	return &user{
		name: name, client: client, kube: kc, warnings: w,
		locks: lock.New(kc.CoreV1(), kc.CoreV1(), lockNS, clock.RealClock{}, lock.Options{ConfirmAfter: -1}),
	}
}

// request is the lock request of u for build n of its own branch.
func (u *user) request(target string, n int) lock.Request {
	return lock.Request{
		Target: target, User: u.name, Policy: lock.PolicyFIFO, TTL: time.Minute,
		Identity: lock.Identity{Owner: "acme", Repo: u.name, Branch: "main", Build: fmt.Sprint(n)},
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

func install(t *testing.T, env *testenv.Env, s enforce.Settings) {
	t.Helper()
	require.NoError(t, enforce.Install(t.Context(), env.Kube.AdmissionregistrationV1(), s))
	t.Cleanup(func() {
		_, err := enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), s.Target)
		assert.NoError(t, err)
	})
	if s.Mode == enforce.ModeDeny {
		require.NoError(t, enforce.AwaitInEffect(t.Context(), env.Kube.CoreV1(), s.Target, 20*time.Millisecond, 30*time.Second))
	}
}

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
	for _, want := range []string{"lockctl refused this write", "locked by acme/alice@main#1", "(user alice)", "fencing token " + held.Token, lockNS + "/" + lock.Name(target), "lockctl acquire " + target} {
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
	awaitRefused(t, alice, target, "")
	require.NoError(t, bob.write(t.Context(), target, ""))
	_, err = bob.locks.ReleaseHeld(t.Context(), bobHeld, lock.ReleaseOptions{})
	require.NoError(t, err)
	awaitAdmitted(t, alice, target, "")
}
