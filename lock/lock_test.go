package lock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

const lockNS = "locks"

// lockObject builds the ConfigMap of rec as the API server would return it.
func lockObject(t *testing.T, rec *record.Record) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name(rec.Target), Namespace: lockNS, UID: "uid-1", ResourceVersion: "10",
	}}
	require.NoError(t, record.Encode(cm, rec))
	return cm
}

func pod(name string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci", UID: "pod-uid"},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func request(build string) Request {
	return Request{
		Target:   "staging",
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build},
		ClaimID:  "me",
	}
}

// newTestClient returns a client on a fake clientset holding objs, where any
// call not answered by a reactor of the test fails it.
func newTestClient(t *testing.T, now time.Time, reactors func(*fake.Clientset), objs ...runtime.Object) (*Client, *fake.Clientset) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	if reactors != nil {
		reactors(cs)
	}
	c := New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), lockNS, clock.RealClock{}, Options{})
	c.clk = testingclock.NewFakeClock(now)
	// NOTE: as if loaded (none), so the verbs the tests count are the
	// lock's; readfirst_test.go tests the loading (unloaded).
	c.SetFreezeWindows(nil)
	return c, cs
}

// unloaded forgets c's freeze windows, so its first read of a lock loads
// them.
func unloaded(c *Client) {
	c.windows = windowCache{}
}

// onlyVerbs fails the test on any action whose verb is not allowed.
func onlyVerbs(t *testing.T, verbs ...string) func(*fake.Clientset) {
	return func(cs *fake.Clientset) {
		cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			for _, v := range verbs {
				if a.GetVerb() == v {
					return false, nil, nil
				}
			}
			t.Errorf("unexpected call %s %s", a.GetVerb(), a.GetResource().Resource)
			return true, nil, errors.New("unexpected call")
		})
	}
}

func verbs(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

func TestTryAcquire(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	holderInPod := held(claim("h", "api", "main", "7"), t0)
	holderInPod.Pod = &record.PodRef{Namespace: "ci", Name: "build-7", UID: "pod-uid"}
	holderInPod.Expires = nil
	expired := held(claim("h", "api", "main", "7"), t0.Add(-2*time.Hour))

	tests := []struct {
		name      string
		objs      []runtime.Object
		reactors  func(*testing.T) func(*fake.Clientset)
		wantHeld  bool
		wantPos   int
		wantErr   error
		wantCalls []string
	}{
		{
			name:      "free lock is created",
			reactors:  func(t *testing.T) func(*fake.Clientset) { return onlyVerbs(t, "get", "create") },
			wantHeld:  true,
			wantCalls: []string{"get configmaps", "create configmaps"},
		},
		{
			name:      "held lock: join the queue",
			objs:      []runtime.Object{lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0)))},
			reactors:  func(t *testing.T) func(*fake.Clientset) { return onlyVerbs(t, "get", "update") },
			wantPos:   1,
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "expired lock is taken over",
			objs:      []runtime.Object{lockObject(t, recordOf(expired))},
			reactors:  func(t *testing.T) func(*fake.Clientset) { return onlyVerbs(t, "get", "update") },
			wantHeld:  true,
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "holder pod running: wait",
			objs:      []runtime.Object{lockObject(t, recordOf(holderInPod)), pod("build-7", corev1.PodRunning)},
			wantPos:   1,
			wantCalls: []string{"get configmaps", "get pods", "update configmaps"},
		},
		{
			name:      "holder pod gone: take over",
			objs:      []runtime.Object{lockObject(t, recordOf(holderInPod))},
			wantHeld:  true,
			wantCalls: []string{"get configmaps", "get pods", "update configmaps"},
		},
		{
			name:      "holder pod finished: take over",
			objs:      []runtime.Object{lockObject(t, recordOf(holderInPod)), pod("build-7", corev1.PodSucceeded)},
			wantHeld:  true,
			wantCalls: []string{"get configmaps", "get pods", "update configmaps"},
		},
		{
			name: "holder pod replaced by another with the same name: take over",
			objs: []runtime.Object{lockObject(t, recordOf(holderInPod)), func() *corev1.Pod {
				p := pod("build-7", corev1.PodRunning)
				p.UID = "other"
				return p
			}()},
			wantHeld:  true,
			wantCalls: []string{"get configmaps", "get pods", "update configmaps"},
		},
		{
			name: "lost race: conflict, read again, then queue",
			objs: []runtime.Object{lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0)))},
			reactors: func(t *testing.T) func(*fake.Clientset) {
				return func(cs *fake.Clientset) {
					first := true
					cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
						if first {
							first = false
							return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
						}
						return false, nil, nil
					})
				}
			},
			wantPos:   1,
			wantCalls: []string{"get configmaps", "update configmaps", "get configmaps", "update configmaps"},
		},
		{
			name: "missing lock namespace: one error, no retry",
			reactors: func(t *testing.T) func(*fake.Clientset) {
				return func(cs *fake.Clientset) {
					cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
						return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, lockNS)
					})
				}
			},
			wantErr:   &NamespaceError{},
			wantCalls: []string{"get configmaps", "create configmaps"},
		},
		{
			name: "corrupt lock is reported, never written",
			objs: []runtime.Object{func() *corev1.ConfigMap {
				cm := lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0)))
				cm.Annotations[record.RecordAnnotation] = strings.Replace(cm.Annotations[record.RecordAnnotation], `"build":"7"`, `"build":"seven"`, 1)
				return cm
			}()},
			reactors:  func(t *testing.T) func(*fake.Clientset) { return onlyVerbs(t, "get") },
			wantErr:   &record.InvalidError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name: "object without lockctl labels is left alone",
			objs: []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
				Name: record.Name("staging"), Namespace: lockNS, Labels: map[string]string{"app": "mine"},
			}}},
			reactors:  func(t *testing.T) func(*fake.Clientset) { return onlyVerbs(t, "get") },
			wantErr:   &record.NotALockError{},
			wantCalls: []string{"get configmaps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var reactors func(*fake.Clientset)
			if tt.reactors != nil {
				reactors = tt.reactors(t)
			}
			c, cs := newTestClient(t, now, reactors, tt.objs...)
			h, p, err := c.TryAcquire(context.Background(), request("42"))
			calls := verbs(cs)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.IsType(t, tt.wantErr, err, "error type")
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantHeld, h != nil, "held")

				if !tt.wantHeld {
					require.NotNil(t, p)
					assert.Equal(t, tt.wantPos, p.Position, "queue position")
				}
			}
			assert.Equal(t, tt.wantCalls, calls, "API calls")
		})
	}
}

func TestTryAcquireSuperseded(t *testing.T) {
	t.Parallel()
	cur := recordOf(held(claim("h", "api", "main", "7"), t0), queued(claim("w", "web", "main", "50"), t0.Add(time.Minute)))
	c, cs := newTestClient(t, t0.Add(time.Minute), nil, lockObject(t, cur))
	_, _, err := c.TryAcquire(context.Background(), request("42"))
	var sup *SupersededError
	require.ErrorAs(t, err, &sup)
	assert.ErrorIs(t, err, ErrSuperseded)
	assert.Equal(t, "50", sup.By.Build, "superseded by the newer build")
	assert.False(t, sup.holding, "the newer build waits")
	assert.Equal(t, []string{"get configmaps"}, verbs(cs), "nothing written")
}

func TestRelease(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	mine := held(claim("h", "web", "main", "42"), t0)
	theirs := held(claim("h", "api", "main", "7"), t0)
	theirsTokened := theirs
	theirsTokened.Token = "9"
	theirsPending := theirs
	theirsPending.TokenPending = true
	theirsHanded := theirs
	theirsHanded.HandedOver = true
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"}

	tests := []struct {
		name       string
		objs       []runtime.Object
		force      bool
		token      string
		job        record.CIJob
		wantErr    error
		wantDelete bool
		wantFree   string // how the history says the hold ended
		wantHanded string
		wantLeft   bool
		wantCalls  []string
	}{
		{
			name:      "not held: success, nothing written",
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held by me, nobody waits: kept free for its history",
			objs:      []runtime.Object{lockObject(t, recordOf(mine))},
			wantFree:  "released",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:       "held by me, someone waits: handed over in one write",
			objs:       []runtime.Object{lockObject(t, recordOf(mine, queued(claim("w", "api", "main", "1"), now)))},
			wantHanded: "w",
			wantCalls:  []string{"get configmaps", "update configmaps"},
		},
		{
			name: "held by me, first waiter expired: handed to the next live one",
			objs: []runtime.Object{lockObject(t, recordOf(mine,
				queued(claim("dead", "db", "main", "1"), t0.Add(-time.Hour)), queued(claim("w", "api", "main", "1"), now)))},
			wantHanded: "w",
			wantCalls:  []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "held by someone else: refused",
			objs:      []runtime.Object{lockObject(t, recordOf(theirs))},
			wantErr:   &NotHolderError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held by someone else, I wait: I leave the queue",
			objs:      []runtime.Object{lockObject(t, recordOf(theirs, queued(claim("me", "web", "main", "42"), now)))},
			wantLeft:  true,
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "held by someone else, their recorded token given: released",
			objs:      []runtime.Object{lockObject(t, recordOf(theirsTokened))},
			token:     "9",
			wantFree:  "released",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "held by someone else, token pending: the lock's resourceVersion is the token",
			objs:      []runtime.Object{lockObject(t, recordOf(theirsPending))},
			token:     "10",
			wantFree:  "released",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "a wrong token: refused, nothing written",
			objs:      []runtime.Object{lockObject(t, recordOf(theirsTokened))},
			token:     "8",
			wantErr:   &TokenError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "my own lock, a wrong token: refused, the token decides",
			objs:      []runtime.Object{lockObject(t, recordOf(func() record.Claim { c := mine; c.Token = "9"; return c }()))},
			token:     "8",
			wantErr:   &TokenError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "handed over, not confirmed: no token yet, refused",
			objs:      []runtime.Object{lockObject(t, recordOf(theirsHanded))},
			token:     "10",
			wantErr:   &TokenError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held by someone else with --force: broken, by whom in the history",
			objs:      []runtime.Object{lockObject(t, recordOf(theirs))},
			force:     true,
			wantFree:  "broken by acme/web@main#42",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name: "corrupt lock: refused without --force",
			objs: []runtime.Object{func() *corev1.ConfigMap {
				cm := lockObject(t, recordOf(mine))
				cm.Annotations[record.RecordAnnotation] = "{"
				return cm
			}()},
			wantErr:   &record.InvalidError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name: "corrupt lock with --force: deleted",
			objs: []runtime.Object{func() *corev1.ConfigMap {
				cm := lockObject(t, recordOf(mine))
				cm.Annotations[record.RecordAnnotation] = "{"
				return cm
			}()},
			force:      true,
			wantDelete: true,
			wantCalls:  []string{"get configmaps", "delete configmaps"},
		},
		{
			name:      "held by another CI job of my build: refused",
			objs:      []runtime.Object{lockObject(t, recordOf(ofJob(mine, "deploy", "runner-1", 1)))},
			job:       record.CIJob{Job: "cleanup", JobID: "runner-2", Attempt: 1},
			wantErr:   &NotHolderError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held by a matrix sibling, the sibling waits behind me: I leave my own place only",
			objs:      []runtime.Object{lockObject(t, recordOf(ofJob(mine, "deploy", "runner-1", 1), queued(ofJob(claim("me", "web", "main", "42"), "deploy", "runner-2", 1), now)))},
			job:       record.CIJob{Job: "deploy", JobID: "runner-2", Attempt: 1},
			wantLeft:  true,
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "held by an earlier run of my job: released",
			objs:      []runtime.Object{lockObject(t, recordOf(ofJob(mine, "deploy", "runner-1", 1)))},
			job:       record.CIJob{Job: "deploy", JobID: "runner-7", Attempt: 2},
			wantFree:  "released",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "held by my build, written without a job: released by identity",
			objs:      []runtime.Object{lockObject(t, recordOf(mine))},
			job:       record.CIJob{Job: "deploy", JobID: "runner-1", Attempt: 1},
			wantFree:  "released",
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
		{
			name:      "not a lock, even with --force: refused",
			objs:      []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: lockNS}}},
			force:     true,
			wantErr:   &record.NotALockError{},
			wantCalls: []string{"get configmaps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, cs := newTestClient(t, now, nil, tt.objs...)
			res, err := c.Release(context.Background(), "staging", id, ReleaseOptions{Force: tt.force, Token: tt.token, Job: tt.job})
			assert.Equal(t, tt.wantCalls, verbs(cs), "API calls")
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.IsType(t, tt.wantErr, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantLeft, res.LeftQueue, "left queue")
			if tt.wantFree != "" {
				cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(context.Background(), record.Name("staging"), metav1.GetOptions{})
				require.NoError(t, err)
				rec, err := record.Decode(cm)
				require.NoError(t, err)
				assert.True(t, rec.IsFree(), "the lock is free")
				require.Len(t, rec.History, 1)
				assert.Equal(t, tt.wantFree, rec.History[0].Describe())
				assert.Empty(t, cm.OwnerReferences, "a free lock is owned by no pod")
				l, err := c.Get(context.Background(), "staging")
				require.NoError(t, err)
				assert.Nil(t, l, "a free lock reads as no lock")
			}
			if tt.wantHanded != "" {
				require.NotNil(t, res.HandedTo)
				assert.Equal(t, tt.wantHanded, res.HandedTo.ClaimID)
				cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(context.Background(), record.Name("staging"), metav1.GetOptions{})
				require.NoError(t, err)
				rec, err := record.Decode(cm)
				require.NoError(t, err)
				assert.True(t, rec.Holder.HandedOver, "the new holder must confirm")
			}
			for _, a := range cs.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok {
					pre := d.GetDeleteOptions().Preconditions
					require.NotNil(t, pre, "delete has preconditions")
					assert.NotNil(t, pre.UID, "UID precondition")
					assert.NotNil(t, pre.ResourceVersion, "resourceVersion precondition")
				}
			}
		})
	}
}

func TestDecodeInvalid(t *testing.T) {
	t.Parallel()
	good := recordOf(held(claim("h", "web", "main", "42"), t0))
	tests := []struct {
		name      string
		mutate    func(map[string]any)
		wantField string
	}{
		{"non-numeric build", func(m map[string]any) { m["holder"].(map[string]any)["build"] = "abc" }, "holder.build"},
		{"unparsable since", func(m map[string]any) { m["holder"].(map[string]any)["since"] = "yesterday" }, "holder.since"},
		{"unparsable expires", func(m map[string]any) { m["holder"].(map[string]any)["expires"] = "soon" }, "holder.expires"},
		{"unparsable updated", func(m map[string]any) { m["updated"] = 12 }, "updated"},
		{"a time without microseconds", func(m map[string]any) { m["holder"].(map[string]any)["since"] = "2026-12-02T16:00:00Z" }, "holder.since"},
		{"a waiter's time with nanoseconds", func(m map[string]any) {
			m["waiters"] = []any{map[string]any{"owner": "o", "repo": "r", "branch": "b", "build": "1", "session": "w",
				"since": "2026-12-02T16:00:00.000000Z", "expires": "2026-12-02T16:00:00.000000001Z"}}
		}, "waiters[0].expires"},
		{"the zero time for an expiry", func(m map[string]any) { m["holder"].(map[string]any)["expires"] = "0001-01-01T00:00:00.000000Z" }, "holder.expires"},
		{"unknown policy", func(m map[string]any) { m["policy"] = "lifo" }, "policy"},
		{"missing session", func(m map[string]any) { delete(m["holder"].(map[string]any), "session") }, "holder.session"},
		{"no expiry and no pod", func(m map[string]any) { delete(m["holder"].(map[string]any), "expires") }, "holder.expires"},
		{"version not a string", func(m map[string]any) { m["version"] = 1 }, "version"},
		{"version not MAJOR.MINOR", func(m map[string]any) { m["version"] = "one" }, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cm := lockObject(t, good)
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &m))
			tt.mutate(m)
			raw, err := json.Marshal(m)
			require.NoError(t, err)
			cm.Annotations[record.RecordAnnotation] = string(raw)
			_, err = record.Decode(cm)
			var inv *record.InvalidError
			require.ErrorAs(t, err, &inv)
			assert.Equal(t, tt.wantField, inv.Field, "field named")
			assert.Contains(t, err.Error(), cm.Name, "lock named")
		})
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, target, want string }{
		{"short namespace", "staging", "lockctl-lock-staging"},
		{"longest namespace", strings.Repeat("a", 63), "lockctl-lock-" + strings.Repeat("a", 63)},
		{"not a name", "Team/Prod", ""},
		{"very long", strings.Repeat("x", 300), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := record.Name(tt.target)
			if tt.want != "" {
				assert.Equal(t, tt.want, got)
			}
			assert.LessOrEqual(t, len(got), 253, "valid length")
			assert.Regexp(t, `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`, got, "valid object name")
			assert.Equal(t, got, record.Name(tt.target), "stable")
		})
	}
	assert.NotEqual(t, record.Name(strings.Repeat("x", 300)), record.Name(strings.Repeat("x", 301)), "distinct targets, distinct names")
}

func TestJudgePod(t *testing.T) {
	t.Parallel()
	now := t0
	lostSince := func(d time.Duration, reason string, phase corev1.PodPhase) *corev1.Pod {
		p := pod("p", phase)
		p.Status.Reason = reason
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-d))}}
		return p
	}
	onNode := func(p *corev1.Pod) *corev1.Pod { p.Spec.NodeName = "n1"; return p }
	node := func(status corev1.ConditionStatus, since time.Duration) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since)),
			}}},
		}
	}
	taintEvicted := func(deleted time.Duration) *corev1.Pod {
		p := onNode(pod("p", corev1.PodRunning))
		p.DeletionTimestamp = &metav1.Time{Time: now.Add(-deleted)}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"}}
		return p
	}
	tests := []struct {
		name        string
		pod         *corev1.Pod
		node        *corev1.Node
		uid         string
		want        bool
		wantRecheck bool
	}{
		{name: "running", pod: pod("p", corev1.PodRunning), uid: "pod-uid", want: true},
		{name: "pending", pod: pod("p", corev1.PodPending), want: true},
		{name: "succeeded", pod: pod("p", corev1.PodSucceeded)},
		{name: "failed", pod: pod("p", corev1.PodFailed)},
		{name: "gone"},
		{name: "other pod, same name", pod: pod("p", corev1.PodRunning), uid: "old-uid"},
		{name: "unknown, recently", pod: lostSince(time.Minute, "", corev1.PodUnknown), want: true, wantRecheck: true},
		{name: "unknown past the grace", pod: lostSince(10*time.Minute, "", corev1.PodUnknown)},
		{name: "node lost past the grace", pod: lostSince(10*time.Minute, "NodeLost", corev1.PodRunning)},
		{name: "node Unknown for 6 minutes", pod: onNode(pod("p", corev1.PodRunning)), node: node(corev1.ConditionUnknown, 6*time.Minute)},
		{name: "node Unknown for 1 minute: recheck when the grace ends", pod: onNode(pod("p", corev1.PodRunning)), node: node(corev1.ConditionUnknown, time.Minute), want: true, wantRecheck: true},
		{name: "node ready", pod: onNode(pod("p", corev1.PodRunning)), node: node(corev1.ConditionTrue, time.Hour), want: true},
		{name: "taint-evicted, still in its grace period", pod: taintEvicted(-20 * time.Second), want: true, wantRecheck: true},
		{name: "taint-evicted, left terminating", pod: taintEvicted(time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := judgePod(tt.pod, typesUID(tt.uid), tt.node, now, defaultLostPodGrace)
			assert.Equal(t, tt.want, v.Alive, "alive: %s", v.Message)
			assert.Equal(t, tt.wantRecheck, !v.Recheck.IsZero(), "recheck %s", v.Recheck)
		})
	}
}

func typesUID(s string) types.UID { return types.UID(s) }

func TestNextWriteRecordsPendingToken(t *testing.T) {
	t.Parallel()
	h := held(claim("h", "api", "main", "7"), t0)
	h.TokenPending = true
	c, _ := newTestClient(t, t0.Add(time.Minute), nil, lockObject(t, recordOf(h)))
	_, p, err := c.TryAcquire(context.Background(), request("42"))
	require.NoError(t, err)
	require.NotNil(t, p, "queued")
	got, err := c.Get(context.Background(), "staging")
	require.NoError(t, err)
	assert.Equal(t, "10", got.Status.Holder.Token, "the version the take-over wrote")
	assert.False(t, got.Status.Holder.TokenPending)
}

// TestAcquireNoWait: with NoWait, Acquire takes a free lock at once and
// otherwise says who holds it, writing nothing.
func TestAcquireNoWait(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	theirs := held(claim("h", "api", "main", "7"), t0)
	tests := []struct {
		name      string
		objs      []runtime.Object
		wantErr   error
		wantCalls []string
	}{
		{
			name:      "free: created",
			wantCalls: []string{"get configmaps", "create configmaps"},
		},
		{
			name:      "held by another build: held error, nothing written",
			objs:      []runtime.Object{lockObject(t, recordOf(theirs))},
			wantErr:   &HeldError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held, others waiting: held error, not queued",
			objs:      []runtime.Object{lockObject(t, recordOf(theirs, queued(claim("w", "db", "main", "1"), now)))},
			wantErr:   &HeldError{},
			wantCalls: []string{"get configmaps"},
		},
		{
			name:      "held by a stale holder: taken over",
			objs:      []runtime.Object{lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0.Add(-2*time.Hour))))},
			wantCalls: []string{"get configmaps", "update configmaps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, cs := newTestClient(t, now, onlyVerbs(t, "get", "create", "update"), tt.objs...)
			req := request("42")
			req.NoWait = true
			h, err := c.Acquire(t.Context(), req)
			assert.Equal(t, tt.wantCalls, verbs(cs), "API calls")
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.IsType(t, tt.wantErr, err)
				assert.ErrorIs(t, err, ErrHeld)
				assert.Contains(t, err.Error(), "held by acme/api@main#7")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "me", h.ClaimID)
		})
	}
}

// TestAcquireTimeoutBeforeJoiningNamesHolder: a wait whose deadline passes
// in the back-off after a lost first write (the create of a lock that
// exists), before it joined the queue, still says who holds the lock: the
// read that found it held told. (On a slow API server the back-off after a
// slow first round can outlast a short --timeout.)
func TestAcquireTimeoutBeforeJoiningNamesHolder(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	theirs := held(claim("h", "api", "main", "7"), t0)
	c, cs := newTestClient(t, now, nil, lockObject(t, recordOf(theirs)))
	// NOTE: each read takes 100 ms of the fake clock, so the back-off after
	// the lost create has a window; the fake clock never fires its timer,
	// so the wait ends by the deadline, in the back-off.
	clock := c.clk.(*testingclock.FakeClock)
	cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		clock.Step(100 * time.Millisecond)
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Acquire(ctx, request("42"))
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "api", te.Holder.Repo, "the holder the read found")
	assert.Contains(t, err.Error(), "held by acme/api@main#7")
}

// TestAcquireDeadlineIsTimeout: whatever call the caller's deadline cuts
// short, Acquire reports a timed-out wait, not the bare context error.
func TestAcquireDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, t0, func(cs *fake.Clientset) {
		cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, context.DeadlineExceeded
		})
	})
	ctx, cancel := context.WithDeadline(t.Context(), time.Unix(0, 0))
	defer cancel()
	_, err := c.Acquire(ctx, request("42"))
	var te *TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "staging", te.Target)
	assert.Contains(t, err.Error(), `waiting for lock on "staging", before the lock could be read`)
}
