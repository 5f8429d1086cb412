package lock_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/lock/record"
)

// newerWriter plays a lockctl of a newer minor record version: it rewrites
// the record with fields today's lockctl does not know (a top-level
// "notes", a holder's "note"), with a compare-and-swap on resourceVersion
// as every writer must.
func newerWriter(t *testing.T, c kubernetes.Interface, ns, target string) {
	t.Helper()
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err, "newer writer reads the lock")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	rec["version"] = "1.99"
	rec["notes"] = []any{map[string]any{"owner": "acme", "build": "0", "released": "2026-12-03T09:59:00.000000Z"}}
	holder, ok := rec["holder"].(map[string]any)
	require.True(t, ok, "record has a holder: %v", rec)
	holder["note"] = "written by a newer lockctl"
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[record.RecordAnnotation] = string(raw)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err, "newer writer's compare-and-swap")
}

// recordOf reads the lock's record as plain JSON.
func recordOf(t *testing.T, c kubernetes.Interface, ns, target string) map[string]any {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	return rec
}

// TestIntegrationMixedVersionsShareALock: a writer of a newer minor record
// version adds fields, and today's lockctl keeps working with the lock
// through a queue and a hand-over, keeping those fields and the version.
func TestIntegrationMixedVersionsShareALock(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)

	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	newerWriter(t, env.Client, ns, "staging")

	st, err := l.Get(t.Context(), "staging")
	require.NoError(t, err, "today's lockctl reads the newer record")
	assert.Equal(t, "acme/web@main#1", st.Status.Holder.Identity.String())

	done, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 2)})
	p := awaitQueued(t, queued, "api#2")
	assert.Equal(t, 1, p.Position, "queued behind the holder")
	rec := recordOf(t, env.Client, ns, "staging")
	assert.Equal(t, "1.99", rec["version"], "joining the queue keeps the newer version")
	assert.Contains(t, rec, "notes", "joining the queue keeps the newer top-level field")
	assert.Equal(t, "written by a newer lockctl", rec["holder"].(map[string]any)["note"], "and the holder's field")

	_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err, "today's holder releases the newer record")
	r := await(t, done, "api#2")
	require.NoError(t, r.err, "the waiter takes the lock handed over")
	_, err = r.held.Confirm(t.Context())
	require.NoError(t, err, "and confirms it")

	rec = recordOf(t, env.Client, ns, "staging")
	assert.Equal(t, "1.99", rec["version"], "the hand-over keeps the newer version")
	assert.Contains(t, rec, "notes", "the hand-over keeps the newer top-level field")
	holder := rec["holder"].(map[string]any)
	assert.Equal(t, "api", holder["repo"], "the new holder")
	assert.NotContains(t, holder, "note", "the old holder's fields leave with it")

	// The newer writer touches it again; today's holder still releases it.
	newerWriter(t, env.Client, ns, "staging")
	res, err := l.Release(t.Context(), "staging", clitest.Identity("api", 2), lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.Previous, "released by its holder")
}

// rawUpdate plays a lockctl of record version 1.6 from before hand-overs
// were held early (docs/adr/0074-hold-on-hand-over.md): it changes the
// record as plain JSON, with a compare-and-swap on resourceVersion, and
// returns the version written.
func rawUpdate(t *testing.T, c kubernetes.Interface, ns, target string, change func(rec map[string]any)) string {
	t.Helper()
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	change(rec)
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[record.RecordAnnotation] = string(raw)
	out, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err, "the older lockctl's compare-and-swap")
	return out.ResourceVersion
}

// microJSON renders t as a record stores it.
func microJSON(t *testing.T, at time.Time) any {
	t.Helper()
	b, err := json.Marshal(metav1.NewMicroTime(at))
	require.NoError(t, err)
	var s any
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// TestIntegrationOlderWaiterTakesAHandOver: today's holder hands the lock
// to a waiter of an older lockctl, which confirms it as it always did (a
// take-over with a token of its own); until then and after, today's
// contenders judge the hold by its expiry and leave it alone.
func TestIntegrationOlderWaiterTakesAHandOver(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	h := mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})

	// The older waiter joins the queue.
	now := time.Now()
	rawUpdate(t, env.Client, ns, "staging", func(rec map[string]any) {
		rec["waiters"] = []any{map[string]any{
			"owner": "acme", "repo": "old", "branch": "main", "build": "2", "session": "older",
			"since": microJSON(t, now), "expires": microJSON(t, now.Add(time.Minute)), "ttl": "1h0m0s",
		}}
	})

	res, err := l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.HandedTo, "handed to the older waiter")
	rec := recordOf(t, env.Client, ns, "staging")
	holder := rec["holder"].(map[string]any)
	assert.Equal(t, "older", holder["session"])
	assert.Equal(t, true, holder["handedOver"], "marked handed over, as older lockctls expect")
	assert.Equal(t, true, holder["tokenPending"], "the hand-over's version is the token")

	_, err = l.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("api", 3), NoWait: true})
	var heldErr *lock.HeldError
	require.ErrorAs(t, err, &heldErr, "the unconfirmed hold stands on the waiter's expiry")
	assert.Equal(t, "older", heldErr.Holder.ClaimID)

	// The older waiter confirms: a take-over, as it did before.
	confirmed := rawUpdate(t, env.Client, ns, "staging", func(rec map[string]any) {
		holder := rec["holder"].(map[string]any)
		delete(holder, "handedOver")
		delete(holder, "token")
		holder["tokenPending"] = true
		holder["since"] = microJSON(t, time.Now())
		holder["expires"] = microJSON(t, time.Now().Add(time.Hour))
	})
	st, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, confirmed, st.Status.Token, "the older holder's token is its confirmation's version, as it believes")
	_, err = l.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("api", 3), NoWait: true})
	require.ErrorAs(t, err, &heldErr, "the confirmed hold stands")
	_, err = l.Release(t.Context(), "staging", record.Identity{Owner: "acme", Repo: "old", Branch: "main", Build: "2"}, lock.ReleaseOptions{Token: confirmed})
	require.NoError(t, err, "released by its token")
}

// TestIntegrationOlderReleaserHandsOver: a lockctl from before hand-overs
// were held early releases to today's waiter, leaving no token pending;
// the waiter holds with the version that shows the hand-over as its token
// and its confirmation records it.
func TestIntegrationOlderReleaserHandsOver(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	done, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 2), TTL: time.Hour})
	awaitQueued(t, queued, "api#2")

	// The older releaser: the first waiter becomes the holder, handed over,
	// without a token.
	handedAt := rawUpdate(t, env.Client, ns, "staging", func(rec map[string]any) {
		waiters := rec["waiters"].([]any)
		next := waiters[0].(map[string]any)
		next["handedOver"] = true
		next["since"] = microJSON(t, time.Now())
		rec["holder"] = next
		delete(rec, "waiters")
	})
	r := await(t, done, "api#2")
	require.NoError(t, r.err)
	assert.Equal(t, handedAt, r.held.Token, "the hand-over's version")
	assert.True(t, r.held.Holder.HandedOver, "held before the confirmation")
	got, err := r.held.Confirm(t.Context())
	require.NoError(t, err)
	assert.Equal(t, handedAt, got.Token)
	st, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, handedAt, st.Status.Token, "recorded by the confirmation")
	assert.False(t, st.Status.Holder.HandedOver)
	res, err := l.ReleaseHeld(t.Context(), r.held, lock.ReleaseOptions{Token: handedAt})
	require.NoError(t, err)
	require.NotNil(t, res.Previous, "released by its token")
}
