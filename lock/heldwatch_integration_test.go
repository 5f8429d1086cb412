package lock

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// TestIntegrationKeepWatching: a holder that
// waited keeps the watch of the lock while it holds it, so its release
// writes once on the newest version although a waiter joined meanwhile;
// a holder that took the lock at once (no watch) whose release loses to a
// waiter's join reads the newest version and writes again on it. Either way the lock is handed
// to the first waiter, and the watch ends with the release.
func TestIntegrationKeepWatching(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	newClient := func() (*Client, *testenv.RequestLog) {
		cfg := rest.CopyConfig(env.RESTConfig)
		log := testenv.RecordRequests(cfg)
		cs, err := kube.NewForConfig(cfg)
		require.NoError(t, err)
		c := New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, Options{})
		return c, log
	}
	req := func(repo string) Request {
		return Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: "1"}, Policy: record.PolicyFIFO, TTL: time.Minute}
	}

	first, firstLog := newClient()
	h1, err := first.Acquire(ctx, req("web"))
	require.NoError(t, err)
	assert.Nil(t, h1.watching, "taken at once: nothing watched")

	second, secondLog := newClient()
	queued := make(chan struct{})
	var once sync.Once
	r2 := req("api")
	r2.Callbacks.OnProgress = func(Progress) { once.Do(func() { close(queued) }) }
	done := make(chan *Held, 1)
	go func() {
		h, err := second.Acquire(ctx, r2)
		assert.NoError(t, err)
		done <- h
	}()
	select {
	case <-queued:
	case <-ctx.Done():
		t.Fatal("the second contender did not queue")
	}

	firstLog.Take()
	rel, err := first.ReleaseHeld(ctx, h1, ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, rel.HandedTo)
	assert.Equal(t, "api", rel.HandedTo.Repo)
	assert.Equal(t, []string{http.MethodPut, http.MethodGet, http.MethodPut}, testenv.Verbs(firstLog.Take()),
		"the write on the taken version loses to the join; the next is on the newest version, read")

	var h2 *Held
	select {
	case h2 = <-done:
	case <-ctx.Done():
		t.Fatal("the second contender did not get the lock")
	}
	require.NotNil(t, h2)
	require.NotNil(t, h2.watching, "waited: the watch is kept")
	// NOTE: held on the hand-over; its confirmation is a write of its own
	// (ADR 0074), done before what follows counts the release's.
	_, err = h2.Confirm(ctx)
	require.NoError(t, err)

	// A third contender joins while the second holds the lock.
	third, _ := newClient()
	_, p, err := third.TryAcquire(ctx, req("ops"))
	require.NoError(t, err)
	require.NotNil(t, p, "the third contender waits")
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h2.lastCM().ResourceVersion == cm.ResourceVersion }, time.Minute, 10*time.Millisecond,
		"the holder's watch brings the version of the join")

	secondLog.Take()
	rel, err = second.ReleaseHeld(ctx, h2, ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, rel.HandedTo)
	assert.Equal(t, "ops", rel.HandedTo.Repo)
	var writes []string
	for _, verb := range testenv.Verbs(secondLog.Take()) {
		if verb != "WATCH" {
			writes = append(writes, verb)
		}
	}
	assert.Equal(t, []string{http.MethodPut}, writes, "one write, on the version the watch brought")
	select {
	case <-h2.watching.done:
	case <-ctx.Done():
		t.Fatal("the watch did not end with the release")
	}
	h2.StopWatching() // again: nothing happens
}

// TestIntegrationReleaseAfterManyJoins: a holder that took the lock at once
// (no watch) and releases after ten contenders joined the queue loses its
// first write, reads the newest version and writes once more on it: one
// lost write, not one for each version since its own (a watch from the
// version it lost on brings them one at a time, oldest first).
func TestIntegrationReleaseAfterManyJoins(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cfg := rest.CopyConfig(env.RESTConfig)
	log := testenv.RecordRequests(cfg)
	cs, err := kube.NewForConfig(cfg)
	require.NoError(t, err)
	holder := New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, Options{})
	req := func(repo string) Request {
		return Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: "1"}, Policy: record.PolicyFIFO, TTL: time.Minute}
	}
	h, err := holder.Acquire(ctx, req("web"))
	require.NoError(t, err)
	require.Nil(t, h.watching, "taken at once: nothing watched")

	const joiners = 10
	for i := range joiners {
		c := New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, Options{})
		_, p, err := c.TryAcquire(ctx, req(fmt.Sprintf("repo-%02d", i)))
		require.NoError(t, err)
		require.NotNil(t, p, "contender %d waits", i)
	}

	log.Take()
	rel, err := holder.ReleaseHeld(ctx, h, ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, rel.HandedTo)
	assert.Equal(t, "repo-00", rel.HandedTo.Repo)
	var onLock, onTurn []testenv.Request
	for _, r := range log.Take() {
		switch path.Base(r.URL) {
		case record.Name("staging"):
			onLock = append(onLock, r)
		case record.TurnName("staging"):
			onTurn = append(onTurn, r)
		}
	}
	assert.Equal(t, []string{http.MethodPut, http.MethodGet, http.MethodPut}, testenv.Verbs(onLock),
		"the write on the taken version loses; the next is on the newest version, read")
	assert.Equal(t, []string{http.MethodGet, http.MethodPut}, testenv.Verbs(onTurn),
		"ten waiters: the hand-over publishes the turn, a compare-and-swap")
}
