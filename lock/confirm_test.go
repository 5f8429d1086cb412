package lock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

// handedOverTo returns the lock, of resourceVersion rv, just handed over
// by api#7 to the waiter me (web#42, session "me") whose place expires at
// expires.
func handedOverTo(t *testing.T, expires time.Time, rv string) *corev1.ConfigMap {
	t.Helper()
	me := queued(claim("me", "web", "main", "42"), t0)
	me.Expires = microPtr(expires)
	rec := recordOf(held(claim("h", "api", "main", "7"), t0), me)
	rec.HandOver(me, metav1.NewMicroTime(t0), t0)
	cm := lockObject(t, rec)
	cm.ResourceVersion = rv
	return cm
}

// storedRecord reads the lock's record from the fake clientset.
func storedRecord(t *testing.T, cs *fake.Clientset) *record.Record {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	return rec
}

// waiterOn returns a waiter of request("42") (session "me") that has seen
// the lock cm.
func waiterOn(c *Client, cm *corev1.ConfigMap, stopBefore time.Duration) *waiter {
	req := request("42")
	req.StopBefore = stopBefore
	me := claim("me", "web", "main", "42")
	w := newWaiter(c, req, me)
	w.st.start(c.clk.Now())
	w.st.queued(cm)
	return w
}

// TestHandOverHeldOnTheEvent: a waiter holds the lock as soon as its watch
// brings the hand-over, with the hand-over's version as its token and
// without a request of its own; the confirmation follows in the background
// (at once when waited for) and records that token.
func TestHandOverHeldOnTheEvent(t *testing.T) {
	t.Parallel()
	_, cs, h := heldOnHandOver(t)
	assert.Empty(t, verbs(cs), "held without a request: the waiter had nothing to renew")
	assert.True(t, h.Holder.HandedOver, "held before it is confirmed")
	assert.Equal(t, "11", h.Token, "the hand-over's version is the token")
	assert.True(t, t0.Add(waiterTTL).Equal(h.Holder.Expires.Time), "until then it stands on the waiter's expiry")

	got, err := h.Confirm(t.Context())
	require.NoError(t, err)
	assert.False(t, got.HandedOver)
	assert.Equal(t, "11", got.Token)
	assert.Equal(t, []string{"update configmaps"}, verbs(cs), "one write after the event: the confirmation, on the version the watch brought")
	rec := storedRecord(t, cs)
	assert.False(t, rec.Holder.HandedOver, "confirmed in the background")
	assert.Equal(t, "11", rec.Holder.Token, "with the token the hold began with")
	assert.True(t, t0.Add(time.Hour).Equal(rec.Holder.Expires.Time), "and the holder's TTL")
}

// heldOnHandOver returns a client and its fake clientset, and the hold of
// the waiter me (web#42, session "me") behind api#7, taken on the watch
// event that brings the hand-over to it in version "11" (handedOverTo),
// its confirmation started.
func heldOnHandOver(t *testing.T) (*Client, *fake.Clientset, *Held) {
	t.Helper()
	me := queued(claim("me", "web", "main", "42"), t0)
	waiting := lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0), me))
	c, cs := newTestClient(t, t0, nil, waiting)
	w := waiterOn(c, waiting, 0)
	fw := watch.NewFake()
	w.lockEvents = fw
	handed := handedOverTo(t, t0.Add(waiterTTL), "11")
	require.NoError(t, cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, handed, lockNS))
	go fw.Modify(handed)
	for {
		h, err := w.turn(t.Context())
		require.NoError(t, err)
		if h != nil {
			c.confirmInBackground(t.Context(), h)
			return c, cs, h
		}
	}
}

// TestHandOverReleasedBeforeConfirmationDue: a hold released before its
// confirmation was due (Options.ConfirmAfter) is never confirmed: the
// release is its one write, on the hand-over's version, and the Event of
// the acquisition still comes before the release's.
func TestHandOverReleasedBeforeConfirmationDue(t *testing.T) {
	t.Parallel()
	c, cs, h := heldOnHandOver(t)
	events := &eventLog{}
	c.events = events
	require.True(t, h.Holder.HandedOver)

	res, err := c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.Previous)
	assert.Equal(t, "me", res.Previous.ClaimID)
	assert.Equal(t, []string{"update configmaps"}, verbs(cs), "one write: the release, on the hand-over's version; no confirmation")
	assert.True(t, storedRecord(t, cs).IsFree(), "released")
	_, err = h.Confirm(t.Context())
	require.ErrorIs(t, err, errConfirmStopped, "the confirmation was skipped")
	events.mu.Lock()
	defer events.mu.Unlock()
	require.Len(t, events.events, 2)
	assert.Contains(t, events.events[0], "Acquired", "the acquisition first")
	assert.Contains(t, events.events[0], "fencing token 11, released before its confirmation was due")
	assert.Contains(t, events.events[1], "Released")
}

// TestHandOverConfirmedWhenDue: nobody waiting for it, the confirmation
// is written once the hold has run for Options.ConfirmAfter, not before.
func TestHandOverConfirmedWhenDue(t *testing.T) {
	t.Parallel()
	c, cs, h := heldOnHandOver(t)
	fc := c.clk.(*testingclock.FakeClock)
	const step = defaultConfirmAfter / 10
	var stepped time.Duration
	require.Eventually(t, func() bool {
		select {
		case <-h.ConfirmDone():
			return true
		default:
			fc.Step(step)
			stepped += step
			return false
		}
	}, 10*time.Second, 5*time.Millisecond)
	assert.GreaterOrEqual(t, stepped, defaultConfirmAfter, "not confirmed before it was due")
	got, err := h.Confirm(t.Context())
	require.NoError(t, err)
	assert.False(t, got.HandedOver)
	assert.Equal(t, []string{"update configmaps"}, verbs(cs))
	assert.False(t, storedRecord(t, cs).Holder.HandedOver, "confirmed")
}

// TestHandOverConfirmFailsUntilExpiry: a new holder whose confirmation
// keeps failing loses the hold StopBefore before the waiter's expiry it
// stands on, on the client's clock, so before anyone else may take it.
func TestHandOverConfirmFailsUntilExpiry(t *testing.T) {
	t.Parallel()
	expires := t0.Add(40 * time.Second)
	const stopBefore = 6 * time.Second
	handed := handedOverTo(t, expires, "11")
	c, cs := newTestClient(t, t0, func(cs *fake.Clientset) {
		cs.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		})
	}, handed)
	clk := c.clk.(*testingclock.FakeClock)

	w := waiterOn(c, handed, stopBefore)
	h, err := w.turn(t.Context())
	require.NoError(t, err)
	require.NotNil(t, h, "held on the hand-over")
	require.True(t, h.Holder.HandedOver)
	c.confirmInBackground(t.Context(), h)

	var lostAt time.Time
	for lostAt.IsZero() {
		require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
		select {
		case <-h.ConfirmDone():
			lostAt = clk.Now()
			continue
		default:
		}
		clk.Step(500 * time.Millisecond)
		select {
		case <-h.ConfirmDone():
			lostAt = clk.Now()
		case <-time.After(50 * time.Millisecond):
		}
	}
	_, err = h.Confirm(t.Context())
	require.ErrorIs(t, err, errUnconfirmed)
	var ue *unconfirmedError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Error(), "etcd is away", "the last attempt's error is named")
	assert.False(t, lostAt.After(expires.Add(-stopBefore-confirmMargin)), "lost by %s, StopBefore and a margin before the expiry %s (at %s)", expires.Add(-stopBefore-confirmMargin), expires, lostAt)
	assert.True(t, lostAt.After(t0), "after retrying")
	assert.True(t, storedRecord(t, cs).Holder.HandedOver, "nothing confirmed")
}

// TestHandOverConfirmAfterConflict: a confirmation that loses a write to
// another (a waiter joining) decides again on a fresh read and confirms;
// one that finds the lock someone else's reports it lost.
func TestHandOverConfirmAfterConflict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// meanwhile is the record the lost write lost to.
		meanwhile func(*record.Record)
		wantErr   error
	}{
		{
			name:      "a waiter joined: confirmed on the next version",
			meanwhile: func(r *record.Record) { r.Waiters = append(r.Waiters, queued(claim("w", "db", "main", "3"), t0)) },
		},
		{
			name: "broken with --force and taken: lost",
			meanwhile: func(r *record.Record) {
				r.Holder = held(claim("x", "ops", "main", "9"), t0)
			},
			wantErr: record.ErrLost,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			handed := handedOverTo(t, t0.Add(waiterTTL), "11")
			lost := false
			c, cs := newTestClient(t, t0, nil, handed)
			cs.PrependReactor("update", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
				if lost {
					return false, nil, nil
				}
				lost = true
				rec, err := record.Decode(handed)
				require.NoError(t, err)
				tt.meanwhile(rec)
				next := handed.DeepCopy()
				require.NoError(t, record.Encode(next, rec))
				next.ResourceVersion = "12"
				require.NoError(t, cs.Tracker().Update(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, next, lockNS))
				return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, handed.Name, errors.New("changed"))
			})
			w := waiterOn(c, handed, 0)
			h, err := w.turn(t.Context())
			require.NoError(t, err)
			require.NotNil(t, h)
			c.confirmInBackground(t.Context(), h)
			got, err := h.Confirm(t.Context())
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, "ops", storedRecord(t, cs).Holder.Repo, "the other's hold left alone")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "11", got.Token, "the token of the hand-over, not of the version written on")
			assert.Equal(t, []string{"update configmaps", "get configmaps", "update configmaps"}, verbs(cs))
			rec := storedRecord(t, cs)
			assert.False(t, rec.Holder.HandedOver)
			assert.Equal(t, "11", rec.Holder.Token)
			assert.Len(t, rec.Waiters, 1, "the waiter that joined stays")
		})
	}
}

// TestHandOverNearlyExpiredConfirmedFirst: a hand-over seen with less than
// StopBefore, a second and a sixth of the waiter TTL left of the waiter's
// expiry is confirmed before the hold is returned, keeping the hand-over's
// token.
func TestHandOverNearlyExpiredConfirmedFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		left       time.Duration
		stopBefore time.Duration
		wantEarly  bool
	}{
		{name: "most of the place left: held at once", left: 50 * time.Second, wantEarly: true},
		{name: "5s left: confirmed first", left: 5 * time.Second},
		{name: "17s left, 6s to stop: held at once", left: 17 * time.Second, stopBefore: 6 * time.Second, wantEarly: true},
		{name: "15s left, 8s to stop: confirmed first", left: 15 * time.Second, stopBefore: 8 * time.Second},
		{name: "expired already: confirmed first", left: -time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			handed := handedOverTo(t, t0.Add(tt.left), "11")
			c, cs := newTestClient(t, t0, nil, handed)
			w := waiterOn(c, handed, tt.stopBefore)
			h, err := w.turn(context.Background())
			require.NoError(t, err)
			require.NotNil(t, h)
			assert.Equal(t, "11", h.Token, "the hand-over's version is the token either way")
			if tt.wantEarly {
				assert.True(t, h.Holder.HandedOver, "held before the confirmation")
				assert.Empty(t, verbs(cs), "no request before holding")
				return
			}
			assert.False(t, h.Holder.HandedOver, "confirmed before returning")
			assert.Equal(t, []string{"update configmaps"}, verbs(cs))
			rec := storedRecord(t, cs)
			assert.False(t, rec.Holder.HandedOver)
			assert.Equal(t, "11", rec.Holder.Token)
			_, err = h.Confirm(t.Context())
			assert.NoError(t, err, "nothing left to confirm")
		})
	}
}

// TestHandOverBeforeTokensPending: a hand-over written by a lockctl that
// left no token pending is held with the version that shows it as token,
// and the confirmation records that token.
func TestHandOverBeforeTokensPending(t *testing.T) {
	t.Parallel()
	handed := handedOverTo(t, t0.Add(waiterTTL), "11")
	rec, err := record.Decode(handed)
	require.NoError(t, err)
	rec.Holder.TokenPending = false
	require.NoError(t, record.Encode(handed, rec))
	c, cs := newTestClient(t, t0, nil, handed)
	w := waiterOn(c, handed, 0)
	h, err := w.turn(t.Context())
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Equal(t, "11", h.Token)
	c.confirmInBackground(t.Context(), h)
	_, err = h.Confirm(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "11", storedRecord(t, cs).Holder.Token)
}

// TestRenewConfirmsHandOver: a renewal of a hold not confirmed yet is its
// confirmation, with the hold's token.
func TestRenewConfirmsHandOver(t *testing.T) {
	t.Parallel()
	handed := handedOverTo(t, t0.Add(waiterTTL), "11")
	rec, err := record.Decode(handed)
	require.NoError(t, err)
	require.NoError(t, record.DecideRenew(rec, "me", "11", 30*time.Second, t0))
	assert.False(t, rec.Holder.HandedOver)
	assert.Equal(t, "11", rec.Holder.Token)
	assert.False(t, rec.Holder.TokenPending)
	assert.True(t, t0.Add(30*time.Second).Equal(rec.Holder.Expires.Time))
}

// TestHandOverWriteLeavesTokenPending: the write that hands the lock over
// is the new holder's take-over: its token is pending on that write, never
// the version the release decided on, even when the last holder's own
// token was still pending there.
func TestHandOverWriteLeavesTokenPending(t *testing.T) {
	t.Parallel()
	mine := held(claim("h", "web", "main", "42"), t0)
	mine.TokenPending = true
	c, cs := newTestClient(t, t0, nil, lockObject(t, recordOf(mine, queued(claim("w", "api", "main", "1"), t0))))
	res, err := c.Release(t.Context(), "staging", mine.Identity, ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.HandedTo)
	rec := storedRecord(t, cs)
	assert.Equal(t, "w", rec.Holder.ClaimID)
	assert.True(t, rec.Holder.HandedOver)
	assert.True(t, rec.Holder.TokenPending, "the hand-over's version is the token")
	assert.Empty(t, rec.Holder.Token, "not the version released on (10)")
}

// TestHandOverRunJobsAccount: a run that keeps the account of run jobs
// holds a hand-over early only when the record vouches for its job
// namespace and it submits no job; otherwise its namespace is marked by the
// confirmation, written first (ADR 0075).
func TestHandOverRunJobsAccount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		swept       bool
		submits     bool
		wantEarly   bool
		wantVouched bool
	}{
		{name: "vouched, a command: held at once, nothing to look at", swept: true, wantEarly: true, wantVouched: true},
		{name: "vouched, submits a job: marked first, nothing to look at", swept: true, submits: true, wantVouched: true},
		{name: "not vouched: marked first, then looks", swept: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			me := queued(claim("me", "web", "main", "42"), t0)
			me.Cancelable = true
			prev := held(claim("h", "api", "main", "7"), t0)
			prev.LedgerKept = true
			rec := recordOf(prev, me)
			rj := &account{}
			if tt.swept {
				rj.Swept = []string{"ci"}
			}
			rec = kept(rec, rj)
			rec.HandOver(me, metav1.NewMicroTime(t0), t0)
			handed := lockObject(t, rec)
			handed.ResourceVersion = "11"
			c, cs := newTestClient(t, t0, nil, handed)
			w := waiterOn(c, handed, 0)
			w.req.Cancelable = true
			w.req.Ledger = keeper("ci", tt.submits)
			w.me.Cancelable = true
			h, err := w.turn(t.Context())
			require.NoError(t, err)
			require.NotNil(t, h)
			assert.Equal(t, "11", h.Token)
			assert.Equal(t, tt.wantVouched, h.Vouched)
			if tt.wantEarly {
				assert.True(t, h.Holder.HandedOver, "held before the confirmation")
				assert.Empty(t, verbs(cs))
				return
			}
			assert.False(t, h.Holder.HandedOver, "confirmed first")
			stored := storedRecord(t, cs)
			require.NotNil(t, accountOf(t, stored))
			assert.True(t, accountOf(t, stored).PendingIn("ci"), "the confirmation marked the run's namespace")
			assert.True(t, stored.Holder.LedgerKept)
		})
	}
}
