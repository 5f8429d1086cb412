package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

func TestAcquireAll(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	other := func(target string) *record.Record {
		rec := recordOf(held(claim("h", "api", "main", "7"), t0))
		rec.Target = target
		return rec
	}
	mine := func(target string) *record.Record {
		rec := recordOf(held(claim("mine", "web", "main", "1"), t0))
		rec.Target = target
		return rec
	}
	tests := []struct {
		name        string
		targets     []string
		held        []*record.Record
		wantHeld    []string
		wantCreated []string
		wantErr     string
		wantFree    []string
		wantKept    []string
	}{
		{
			name:    "free locks are taken in the global order, whatever the order asked",
			targets: []string{"staging", "db-migrations"}, wantHeld: []string{"db-migrations", "staging"},
			wantCreated: []string{"db-migrations", "staging"},
		},
		{
			name:    "all or nothing: a lock held by another gives back the ones taken",
			targets: []string{"c", "a", "b"}, held: []*record.Record{other("b")},
			wantCreated: []string{"a"}, wantErr: `lock "b" (2 of 3; the 1 taken before it given back): lock on "b" is held by acme/api@main#7`,
			wantFree: []string{"a"},
		},
		{
			name:    "the first lock held: nothing taken",
			targets: []string{"b", "a"}, held: []*record.Record{other("a")},
			wantErr: `lock "a" (1 of 2): lock on "a" is held by acme/api@main#7`,
		},
		{
			name:    "a lock held already (re-entered) is left held when another fails",
			targets: []string{"a", "b"}, held: []*record.Record{mine("a"), other("b")},
			wantErr: `lock "b" (2 of 2; the 1 taken before it given back)`, wantKept: []string{"a"},
		},
		{
			name: "a target named twice", targets: []string{"a", "a"}, wantErr: `lock "a" is named twice`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, cs := newTestClient(t, now, nil)
			for _, rec := range tt.held {
				_, err := cs.CoreV1().ConfigMaps(lockNS).Create(t.Context(), lockObject(t, rec), metav1.CreateOptions{})
				require.NoError(t, err)
			}
			cs.ClearActions()
			var reqs []Request
			for _, target := range tt.targets {
				reqs = append(reqs, Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
					TTL: time.Hour, NoWait: true})
			}
			got, err := c.acquireAll(t.Context(), reqs)
			var created []string
			for _, a := range cs.Actions() {
				if a.GetVerb() == "create" && a.GetResource().Resource == "configmaps" {
					created = append(created, a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName())
				}
			}
			var wantCreated []string
			for _, target := range tt.wantCreated {
				wantCreated = append(wantCreated, record.Name(target))
			}
			assert.Equal(t, wantCreated, created, "locks created, in order")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Nil(t, got)
			} else {
				require.NoError(t, err)
				var targets []string
				for _, h := range got {
					targets = append(targets, h.Target)
				}
				assert.Equal(t, tt.wantHeld, targets, "held, in the global order")
			}
			for _, target := range tt.wantFree {
				l, err := c.Get(t.Context(), target)
				require.NoError(t, err)
				assert.Nil(t, l, "%s given back", target)
			}
			for _, target := range tt.wantKept {
				l, err := c.Get(t.Context(), target)
				require.NoError(t, err)
				require.NotNil(t, l, "%s kept", target)
				assert.Equal(t, "web", l.Status.Holder.Repo, "%s still held by its holder", target)
			}
		})
	}
}

func TestReleaseAll(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	c, cs := newTestClient(t, now, nil)
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	_, err := c.acquireAll(t.Context(), []Request{{Target: "a", Identity: id, TTL: time.Hour}, {Target: "b", Identity: id, TTL: time.Hour}})
	require.NoError(t, err)
	cs.ClearActions()
	res, err := c.ReleaseAll(t.Context(), []string{"a", "b", "c"}, id, ReleaseOptions{})
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.NotNil(t, res[0].Previous, "a released")
	assert.NotNil(t, res[1].Previous, "b released")
	assert.Nil(t, res[2].Previous, "c was not held: nothing to release")
	var order []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" {
			order = append(order, a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName())
		}
	}
	assert.Equal(t, []string{record.Name("b"), record.Name("a")}, order, "released last first")
}

func TestRequestsFor(t *testing.T) {
	t.Parallel()
	pod := &record.PodRef{Namespace: "ci", Name: "runner-1"}
	base := Request{Target: "ignored", Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}, Pod: pod, TTL: time.Minute, Policy: record.PolicyFIFO}
	reqs := requestsFor(base, []string{"staging", "db-migrations"})
	require.Len(t, reqs, 2)
	for i, target := range []string{"staging", "db-migrations"} {
		want := base
		want.Target = target
		assert.Equal(t, want, reqs[i], "base with its target")
	}
	assert.Equal(t, "ignored", base.Target, "base unchanged")
	assert.Empty(t, requestsFor(base, nil))
}
