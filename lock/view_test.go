package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestGetView(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	micro := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(d)); return &m }
	holder := func(mod func(*record.Claim)) *record.Record {
		rec := &record.Record{Target: "staging", Policy: record.PolicyNewest, Holder: record.Claim{
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"},
			ClaimID:  "s", Since: *micro(-time.Minute), Expires: micro(time.Hour),
		}}
		mod(&rec.Holder)
		return rec
	}
	tests := []struct {
		name      string
		objs      []runtime.Object
		wantState LockState
		wantToken string
		wantAlive bool
	}{
		{
			name:      "token recorded",
			objs:      []runtime.Object{lockObject(t, holder(func(c *record.Claim) { c.Token = "7" }))},
			wantState: StateHeld, wantToken: "7", wantAlive: true,
		},
		{
			name:      "token pending is the object's version",
			objs:      []runtime.Object{lockObject(t, holder(func(c *record.Claim) { c.TokenPending = true }))},
			wantState: StateHeld, wantToken: "10", wantAlive: true,
		},
		{
			name:      "expired",
			objs:      []runtime.Object{lockObject(t, holder(func(c *record.Claim) { c.Token, c.Expires = "7", micro(-time.Second) }))},
			wantState: StateStale, wantToken: "7",
		},
		{
			name: "pod gone",
			objs: []runtime.Object{lockObject(t, holder(func(c *record.Claim) {
				c.Token, c.Expires, c.Pod = "7", nil, &record.PodRef{Namespace: "ci", Name: "build-7"}
			}))},
			wantState: StateStale, wantToken: "7",
		},
		{
			name: "pod running",
			objs: []runtime.Object{lockObject(t, holder(func(c *record.Claim) {
				c.Token, c.Expires, c.Pod = "7", nil, &record.PodRef{Namespace: "ci", Name: "build-7"}
			})), pod("build-7", corev1.PodRunning)},
			wantState: StateHeld, wantToken: "7", wantAlive: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, now, onlyVerbs(t, "get"), tt.objs...)
			l, err := c.Get(t.Context(), "staging")
			require.NoError(t, err)
			require.NotNil(t, l)
			assert.Equal(t, tt.wantState, l.Status.State, "state")
			assert.Equal(t, tt.wantToken, l.Status.Token, "token")
			assert.Equal(t, tt.wantAlive, l.Status.Alive, "alive")
		})
	}
}

func TestFree(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, time.Now(), onlyVerbs(t))
	l := c.FreeLockView("staging")
	assert.Equal(t, LockView{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: kindLock},
		ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: lockNS},
		Spec:       LockViewSpec{Target: "staging"},
		Status:     LockViewStatus{State: StateFree, Liveness: "free"},
	}, l)
}
