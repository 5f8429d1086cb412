package lock

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// apiAnnotationLimit is the API server's limit on an object's annotations,
// keys and values together.
const apiAnnotationLimit = 256 << 10

// refuseLargeAnnotations makes the fake clientset refuse what the API server
// refuses: a ConfigMap whose annotations add up to more than 256 KiB.
func refuseLargeAnnotations(t *testing.T) func(*fake.Clientset) {
	return func(cs *fake.Clientset) {
		cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			obj, ok := a.(interface{ GetObject() runtime.Object })
			if !ok {
				return false, nil, nil
			}
			cm, ok := obj.GetObject().(*corev1.ConfigMap)
			if !ok {
				return false, nil, nil
			}
			n := 0
			for k, v := range cm.Annotations {
				n += len(k) + len(v)
			}
			if n > apiAnnotationLimit {
				t.Errorf("%s of a lock record of %d bytes: the API server refuses it", a.GetVerb(), n)
				return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, cm.Name, field.ErrorList{
					field.TooLong(field.NewPath("metadata", "annotations"), "", apiAnnotationLimit),
				})
			}
			return false, nil, nil
		})
	}
}

// long returns an identity field of the longest length allowed, told apart
// by i.
func long(prefix string, i int) string {
	s := fmt.Sprintf("%s-%d-", prefix, i)
	return s + strings.Repeat("x", record.MaxIdentityFieldLen-len(s))
}

// longWaiters returns the waiters of identities of the longest length
// allowed that make a record of holder about bytes long.
func longWaiters(t *testing.T, holder record.Claim, bytes int) []record.Claim {
	t.Helper()
	w := func(i int) record.Claim {
		c := queued(claim(fmt.Sprintf("claim-%d", i), long("repo", i), long("branch", i), "1"), t0.Add(time.Minute))
		c.Owner = long("owner", i)
		return c
	}
	base, err := json.Marshal(recordOf(holder))
	require.NoError(t, err)
	one, err := json.Marshal(w(0))
	require.NoError(t, err)
	n := (bytes - len(base)) / (len(one) + 1)
	out := make([]record.Claim, n)
	for i := range out {
		out[i] = w(i + 1)
	}
	return out
}

// TestAcquireQueueFull: a contender that would make the record larger than
// MaxQueueBytes is refused with a *QueueFullError before writing anything,
// and one that fits joins; the waiters of a full queue then drain through
// hand-overs that all fit, each of which writes a history entry, even with
// identities of the longest length (a fake API server that refuses what the
// real one refuses checks each write).
func TestAcquireQueueFull(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	holder := held(claim("h", "api", "main", "7"), t0)
	holder.Owner, holder.Repo, holder.Branch = long("owner", 0), long("repo", 0), long("branch", 0)
	waiters := longWaiters(t, holder, record.MaxQueueBytes-512)
	c, cs := newTestClient(t, now, refuseLargeAnnotations(t), lockObject(t, recordOf(holder, waiters...)))
	long := Request{Target: "staging", ClaimID: "late", Policy: record.PolicyFIFO,
		Identity: record.Identity{Owner: long("owner", 9999), Repo: long("repo", 9999), Branch: long("branch", 9999), Build: "1"}}

	_, _, err := c.TryAcquire(t.Context(), long)
	var full *QueueFullError
	require.ErrorAs(t, err, &full)
	assert.ErrorIs(t, err, ErrHeld, "exits as a lock held that the caller does not wait for")
	assert.Equal(t, []string{"get configmaps"}, verbs(cs), "nothing written for a contender refused")
	assert.Equal(t, len(waiters), full.Waiters)
	assert.Greater(t, full.Bytes, record.MaxQueueBytes)
	assert.Contains(t, full.Error(), fmt.Sprintf("its queue is full: %d waiting", len(waiters)))
	assert.Contains(t, full.Error(), "try again when the queue is shorter")

	short := request("42")
	_, p, err := c.TryAcquire(t.Context(), short)
	require.NoError(t, err, "a short identity still fits")
	require.NotNil(t, p)

	// The queue drains: each release hands the lock over and writes a
	// history entry. At the longest identities the record reaches
	// MaxRecordBytes before the history is full (MaxHistory): each
	// hand-over then drops the oldest holds, never one of the newest
	// KeptHistory, and is never refused.
	id := holder.Identity
	for i := range record.MaxHistory + 5 {
		_, err := c.Release(t.Context(), "staging", id, ReleaseOptions{})
		require.NoError(t, err, "release %d", i)
		id = waiters[i].Identity
	}
	cm, err := c.store.Get(t.Context(), "staging")
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(rec.History), record.KeptHistory)
	assert.LessOrEqual(t, len(rec.History), record.MaxHistory)
	assert.Equal(t, waiters[record.MaxHistory+4].ClaimID, rec.Holder.ClaimID)
}

// TestEncodeDropsOldestHistoryOverLimit: a record that would be larger than
// MaxRecordBytes is written with its oldest history entries dropped, never
// refused; the caller's record is not changed.
func TestEncodeDropsOldestHistoryOverLimit(t *testing.T) {
	t.Parallel()
	holder := held(claim("h", "api", "main", "7"), t0)
	waiters := longWaiters(t, holder, maxRecordBytes-10<<10)
	rec := recordOf(holder, waiters...)
	for i := range record.MaxHistory {
		rec.History = append(rec.History, record.HistoryEntry{
			Identity: record.Identity{Owner: long("owner", i), Repo: long("repo", i), Branch: long("branch", i), Build: fmt.Sprint(i)},
			Since:    rec.Updated, Until: rec.Updated, Ended: record.EndHandedOver, By: long("by", i),
		})
	}
	cm := &corev1.ConfigMap{}
	require.NoError(t, record.Encode(cm, rec))
	assert.Len(t, rec.History, record.MaxHistory, "the caller's record unchanged")
	raw := cm.Annotations[record.RecordAnnotation]
	assert.LessOrEqual(t, len(raw), maxRecordBytes)
	out := &record.Record{}
	require.NoError(t, out.UnmarshalJSON([]byte(raw)))
	require.NotEmpty(t, out.History)
	assert.Less(t, len(out.History), record.MaxHistory, "some history dropped")
	assert.Equal(t, rec.History[record.MaxHistory-1].Build, out.History[len(out.History)-1].Build, "the newest kept")
	assert.Len(t, out.Waiters, len(waiters), "no waiter dropped")
}
