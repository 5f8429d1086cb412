package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationHandOverHeldOneAtATime: contenders, each with a client of
// its own, hand one lock over again and again with ReleaseHeld, as lockctl
// run does, and each holds as soon as it sees the hand-over: never two
// holders at once, every hold's token above the one before it, and every
// hand-over confirmed with the token its hold began with.
func TestIntegrationHandOverHeldOneAtATime(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const contenders, rounds = 8, 3
	var (
		mu              sync.Mutex
		holding, most   int
		lastToken       uint64
		early, acquired int
	)
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for i := range contenders {
		wg.Go(func() {
			cs, err := kube.NewForConfig(rest.CopyConfig(env.RESTConfig))
			if err != nil {
				errs <- err
				return
			}
			l := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
			for r := range rounds {
				id := record.Identity{Owner: "acme", Repo: fmt.Sprintf("repo-%d", i), Branch: "main", Build: fmt.Sprint(r + 1)}
				ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
				h, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: id, Policy: record.PolicyFIFO, TTL: time.Minute})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				tok := tokenOf(t, h)
				mu.Lock()
				holding++
				acquired++
				most = max(most, holding)
				if tok <= lastToken {
					errs <- fmt.Errorf("%s: token %d not above the last hold's %d", id, tok, lastToken)
				}
				lastToken = tok
				if h.Holder.HandedOver {
					early++
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // hold it a moment
				confirmed, err := h.Confirm(t.Context())
				mu.Lock()
				holding--
				mu.Unlock()
				if err != nil {
					errs <- fmt.Errorf("%s: confirm: %w", id, err)
					return
				}
				if confirmed.Token != "" && confirmed.Token != h.Token {
					errs <- fmt.Errorf("%s: confirmed with token %s, held with %s", id, confirmed.Token, h.Token)
				}
				if _, err := l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{}); err != nil {
					errs <- fmt.Errorf("%s: release: %w", id, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1, most, "never two holders at once")
	assert.Equal(t, contenders*rounds, acquired, "every contender held the lock every round")
	assert.Positive(t, early, "hand-overs were held before they were confirmed")
	t.Logf("%d of %d holds began with a hand-over held before its confirmation", early, acquired)
}

// TestIntegrationCutOffNewHolderLosesItsHold: the lock is handed over to a
// waiter whose requests go unanswered from then on; it holds on the
// hand-over its watch brought, cannot confirm it, and reports the hold
// lost before the waiter's expiry it stood on; only after that does the
// next waiter take the lock, on the API server's judgement of that expiry.
func TestIntegrationCutOffNewHolderLosesItsHold(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	holder := newClient(t, env.Kube, ns)
	h := mustAcquire(t, holder, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})

	cut := &testenv.SilentAfterCut{}
	cs, err := kube.NewForConfig(cut.Config(env.RESTConfig))
	require.NoError(t, err)
	const waiterTTL = 6 * time.Second
	cutOff := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{WaiterTTL: waiterTTL})
	done, queued := acquireAsync(t.Context(), cutOff, lock.Request{Target: "staging", Identity: clitest.Identity("api", 2), TTL: time.Minute})
	awaitQueued(t, queued, "api#2")
	nextDone, nextQueued := acquireAsync(t.Context(), newClient(t, env.Kube, ns), lock.Request{Target: "staging", Identity: clitest.Identity("db", 3)})
	awaitQueued(t, nextQueued, "db#3")

	cut.Cut()
	res, err := holder.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.HandedTo)
	require.Equal(t, "api", res.HandedTo.Repo, "handed to the waiter about to be cut off")

	r := await(t, done, "api#2")
	require.NoError(t, r.err, "held on the hand-over its watch brought")
	require.True(t, r.held.Holder.HandedOver, "before any confirmation")
	expires := r.held.Holder.Expires.Time
	_, err = r.held.Confirm(t.Context())
	lostAt := time.Now()
	require.ErrorIs(t, err, lock.ErrUnconfirmed, "the hold is lost")
	assert.True(t, lostAt.Before(expires), "lost at %s, before the waiter's expiry %s", lostAt.Format(time.StampMicro), expires.Format(time.StampMicro))

	next := await(t, nextDone, "db#3")
	require.NoError(t, next.err)
	assert.True(t, lostAt.Before(next.held.Holder.Since.Time), "the next holder took over (%s) after the cut-off one gave up (%s)",
		next.held.Holder.Since.Time.Format(time.StampMicro), lostAt.Format(time.StampMicro))
	assert.False(t, next.held.Holder.Since.Time.Before(expires), "and not before the expiry the hand-over stood on")
	r.held.StopWatching()
}
