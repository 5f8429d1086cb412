package lock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// queueTurns queues one waiter for each client of cs on target, held by
// holder's hold h, in order (each joins once the one before is in the
// queue); each takes the lock, holds it a moment and releases it. It
// returns the order they held it in, and fails if two ever held it at
// once.
func queueTurns(ctx context.Context, t *testing.T, holder *Client, h *Held, cs []*Client, target string, afterJoins func()) []string {
	t.Helper()
	var (
		mu      sync.Mutex
		order   []string
		holding atomic.Int32
		wg      sync.WaitGroup
	)
	for i, c := range cs {
		repo := fmt.Sprintf("repo-%02d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: "1"}, Policy: record.PolicyFIFO, TTL: time.Minute}
			got, err := c.Acquire(ctx, req)
			if !assert.NoError(t, err, "%s acquires", repo) {
				return
			}
			assert.Equal(t, int32(1), holding.Add(1), "%s holds alone", repo)
			mu.Lock()
			order = append(order, repo)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			holding.Add(-1)
			_, err = c.ReleaseHeld(ctx, got, ReleaseOptions{})
			assert.NoError(t, err, "%s releases", repo)
		}()
		require.Eventually(t, func() bool {
			cm, err := holder.get(ctx, target)
			if err != nil || cm == nil {
				return false
			}
			rec, err := holder.decode(cm, target)
			return err == nil && len(rec.Waiters) == i+1
		}, 30*time.Second, 10*time.Millisecond, "%s joins", repo)
	}
	if afterJoins != nil {
		afterJoins()
	}
	_, err := holder.ReleaseHeld(ctx, h, ReleaseOptions{})
	require.NoError(t, err)
	wg.Wait()
	return order
}

func repos(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("repo-%02d", i)
	}
	return out
}

// TestIntegrationLongQueueTakesTurns: with more waiters than watch the
// record, the writers publish the turn object (the holder and the first
// waiters), the waiters behind them follow it, and every waiter takes the
// lock in its turn, one at a time; once the queue is short again the lock
// carries no turn any more.
func TestIntegrationLongQueueTakesTurns(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	client := func() *Client { return New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, Options{}) }
	holder := client()
	h, err := holder.Acquire(ctx, Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: "first", Branch: "main", Build: "1"}, Policy: record.PolicyFIFO, TTL: time.Minute})
	require.NoError(t, err)

	const n = record.HeadWatchers + 5
	cs := make([]*Client, n)
	for i := range cs {
		cs[i] = client()
	}
	order := queueTurns(ctx, t, holder, h, cs, "staging", func() {
		turnCM, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, record.TurnName("staging"), metav1.GetOptions{})
		require.NoError(t, err, "the turn object is published")
		tu, ok := readTurn(turnCM)
		require.True(t, ok)
		cm, err := holder.get(ctx, "staging")
		require.NoError(t, err)
		rec, err := holder.decode(cm, "staging")
		require.NoError(t, err)
		assert.Equal(t, turnOf(rec), turn{holder: tu.holder, head: tu.head}, "names the holder and the head of the queue")
		assert.Equal(t, turnOf(rec).key(), cm.Annotations[turnAnnotation])
		assert.Equal(t, cm.Name, turnCM.OwnerReferences[0].Name, "owned by the lock")
	})
	assert.Equal(t, repos(n), order, "every waiter in its turn")

	cm, err := holder.get(ctx, "staging")
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, turnAnnotation, "a short queue has no turn")
	turnCM, err := env.Kube.CoreV1().ConfigMaps(ns).Get(ctx, record.TurnName("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	tu, _ := readTurn(turnCM)
	assert.Len(t, tu.head, record.HeadWatchers, "the last publication named everyone left, at the head")
}

// TestIntegrationTurnlessWritersServeTheWaitersBehind: writers from before
// turn objects (turnless) hand the lock over without publishing the turn;
// a waiter behind the head still reads the record once the turn has been
// quiet for a waiter TTL, finds itself at the head, and takes its turn.
func TestIntegrationTurnlessWritersServeTheWaitersBehind(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	older := func() *Client {
		c := New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, Options{})
		c.turnless = true
		return c
	}
	holder := older()
	h, err := holder.Acquire(ctx, Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: "first", Branch: "main", Build: "1"}, Policy: record.PolicyFIFO, TTL: time.Minute})
	require.NoError(t, err)

	cs := make([]*Client, record.HeadWatchers+2)
	for i := range record.HeadWatchers {
		cs[i] = older()
	}
	for i := record.HeadWatchers; i < len(cs); i++ {
		// Today's lockctl, behind the head; a short waiter TTL so the
		// quiet turn is read past in seconds.
		cs[i] = New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, Options{WaiterTTL: 3 * time.Second})
	}
	order := queueTurns(ctx, t, holder, h, cs, "staging", nil)
	assert.Equal(t, repos(len(cs)), order, "every waiter in its turn, the ones behind the head too")
}
