package lock

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestHistory(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	mine := held(claim("a", "web", "main", "42"), t0)
	expired := held(claim("b", "api", "main", "7"), t0.Add(-2*time.Hour))
	gone := inPod(held(claim("b", "api", "main", "7"), t0), "build-7", "uid-7")
	waiter := queued(claim("w", "db", "main", "1"), now)
	freed := recordOf(mine)
	freed.Ended(freed.Holder, metav1.NewMicroTime(t0), record.EndReleased, "", "")
	freed.Free(metav1.NewMicroTime(t0))
	full := recordOf(mine)
	for i := range record.MaxHistory {
		full.History = append(full.History, record.HistoryEntry{Identity: record.Identity{Owner: "acme", Repo: "old", Branch: "main", Build: fmt.Sprint(i)}, Ended: record.EndReleased})
	}
	tests := []struct {
		name       string
		objs       []runtime.Object
		do         func(ctx context.Context, c *Client) error
		wantHolder string // "" when free
		want       []string
		wantLen    int
	}{
		{
			name:       "released, nobody waiting",
			objs:       []runtime.Object{lockObject(t, recordOf(mine))},
			do:         releaseAs("42", ReleaseOptions{}),
			wantHolder: "",
			want:       []string{"acme/web@main#42 released"},
		},
		{
			name:       "released, handed over",
			objs:       []runtime.Object{lockObject(t, recordOf(mine, waiter))},
			do:         releaseAs("42", ReleaseOptions{}),
			wantHolder: "acme/db@main#1",
			want:       []string{"acme/web@main#42 handed over to acme/db@main#1"},
		},
		{
			name:       "broken with --force, handed over: by whom",
			objs:       []runtime.Object{lockObject(t, recordOf(expired, waiter))},
			do:         releaseAs("42", ReleaseOptions{Force: true, By: "alice@laptop"}),
			wantHolder: "acme/db@main#1",
			want:       []string{"acme/api@main#7 broken by alice@laptop"},
		},
		{
			name:       "expired holder removed",
			objs:       []runtime.Object{lockObject(t, recordOf(expired))},
			do:         acquireAs("42"),
			wantHolder: "acme/web@main#42",
			want:       []string{"acme/api@main#7 expired: expired at 2026-12-02T09:00:00Z"},
		},
		{
			name:       "holder pod gone",
			objs:       []runtime.Object{lockObject(t, recordOf(gone, waiter))},
			do:         acquireAs("42"),
			wantHolder: "acme/db@main#1",
			want:       []string{"acme/api@main#7 lost: pod ci/build-7 is gone"},
		},
		{
			name:       "a free lock is taken with its history",
			objs:       []runtime.Object{lockObject(t, freed)},
			do:         acquireAs("43"),
			wantHolder: "acme/web@main#43",
			want:       []string{"acme/web@main#42 released"},
		},
		{
			name:       "bounded: the oldest entry goes",
			objs:       []runtime.Object{lockObject(t, full)},
			do:         releaseAs("42", ReleaseOptions{}),
			wantHolder: "",
			want:       []string{"acme/web@main#42 released", fmt.Sprintf("acme/old@main#%d released", record.MaxHistory-1)},
			wantLen:    record.MaxHistory,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, now, nil, tt.objs...)
			require.NoError(t, tt.do(t.Context(), c))
			h, err := c.History(t.Context(), "staging")
			require.NoError(t, err)
			if tt.wantHolder == "" {
				assert.Nil(t, h.Holder, "free")
			} else if assert.NotNil(t, h.Holder) {
				assert.Equal(t, tt.wantHolder, h.Holder.Identity.String())
			}
			var got []string
			for _, e := range h.Entries {
				got = append(got, e.Identity.String()+" "+e.Describe())
			}
			if tt.wantLen > 0 {
				assert.Len(t, got, tt.wantLen)
				got = got[:len(tt.want)]
			}
			assert.Equal(t, tt.want, got, "newest first")
		})
	}
}

func TestHistoryOfNoLock(t *testing.T) {
	t.Parallel()
	c, _ := newTestClient(t, t0, nil)
	h, err := c.History(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, &record.History{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: record.KindLockHistory},
		ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: "locks"},
		Target:     "staging", Entries: []record.HistoryEntry{},
	}, h, "an object -o name and templates read")
}
