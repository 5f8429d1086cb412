package run

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestHoldCheckerCheck judges a run's job by the run's hold on its lock.
func TestHoldCheckerCheck(t *testing.T) {
	t.Parallel()
	const ended = "the lockctl run that started it ended without cleaning up: "
	tests := []struct {
		name        string
		session     string // annotation value; "" means none
		setup       func(t *testing.T, te *fakeEnv)
		advance     time.Duration
		wantEnded   string
		wantRecheck time.Duration
	}{
		{
			name:    "not started by run",
			session: "",
		},
		{
			name:        "holder with time left: look again just after it would expire",
			session:     "default/staging/s1",
			setup:       hold("s1"),
			advance:     10 * time.Second,
			wantRecheck: 21 * time.Second,
		},
		{
			name:      "holder whose hold expired",
			session:   "default/staging/s1",
			setup:     hold("s1"),
			advance:   31 * time.Second,
			wantEnded: ended + `its hold on lock "staging" expired`,
		},
		{
			name:      "another session holds the lock",
			session:   "default/staging/s1",
			setup:     hold("s2"),
			wantEnded: ended + `it no longer holds lock "staging"`,
		},
		{
			name:      "no lock",
			session:   "default/staging/s1",
			wantEnded: ended + `lock "staging" is gone`,
		},
		{
			name:    "the lock's name taken by an object lockctl did not write",
			session: "default/staging/s1",
			setup: func(t *testing.T, te *fakeEnv) {
				_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: "default"}}, metav1.CreateOptions{})
				require.NoError(t, err)
			},
			wantEnded: ended + `lock "staging" was replaced by an object lockctl did not write`,
		},
		{
			name:    "a damaged record is given the benefit of the doubt",
			session: "default/staging/s1",
			setup: func(t *testing.T, te *fakeEnv) {
				hold("s1")(t, te)
				cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
				require.NoError(t, err)
				cm.Annotations[record.RecordAnnotation] = "{not json"
				_, err = te.cs.CoreV1().ConfigMaps("default").Update(t.Context(), cm, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
			wantRecheck: HoldRecheck,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newFakeEnv(t)
			if tt.setup != nil {
				tt.setup(t, te)
			}
			te.clock.Step(tt.advance)
			j := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}}
			if tt.session != "" {
				j.Annotations = map[string]string{AnnotationHoldRef: tt.session}
			}

			gotEnded, gotRecheck, err := NewHoldChecker(kubetest.CoreV1(te.cs.CoreV1()), HoldCheckerOptions{Clock: te.clock}).Check(t.Context(), j)

			require.NoError(t, err)
			assert.Equal(t, tt.wantEnded, gotEnded)
			assert.Equal(t, tt.wantRecheck, gotRecheck)
		})
	}
}

// hold makes session the holder of lock "staging" in namespace default for
// 30s, as lockctl run does.
func hold(session string) func(*testing.T, *fakeEnv) {
	return func(t *testing.T, te *fakeEnv) {
		t.Helper()
		c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
		_, _, err := c.TryAcquire(t.Context(), lock.Request{
			Target: "staging", ClaimID: session, TTL: 30 * time.Second,
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
		})
		require.NoError(t, err)
	}
}

// testNow is the fake clock's start.
var testNow = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// fakeEnv is a fake cluster and clock.
type fakeEnv struct {
	cs    *fake.Clientset
	clock *testingclock.FakeClock
}

func newFakeEnv(t *testing.T) *fakeEnv {
	t.Helper()
	return &fakeEnv{cs: fake.NewClientset(), clock: testingclock.NewFakeClock(testNow)}
}

// TestHoldCheckerLockClients: the lock clients of HoldChecker judge on the
// clock given (the API server's, in lockctl) and read holder pods' nodes.
func TestHoldCheckerLockClients(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakeClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	c := NewHoldChecker(kubetest.CoreV1(fake.NewClientset().CoreV1()), HoldCheckerOptions{Clock: clk}).client("locks")
	assert.Same(t, clk, c.Clock(), "the clock given")
	assert.NotNil(t, c.Options().Nodes, "nodes are read")
	assert.Equal(t, "locks", c.Namespace())
}
