package clitest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// Acquisition is what an Acquire returned, and when.
type Acquisition struct {
	At   time.Time
	Held *lock.Held
	Err  error
	// All are the locks of a hold of several (lock.AcquireAcross); Held
	// is the first.
	All []*lock.Held
}

// AcquireQueued starts l.Acquire(req) and returns once the contender waits
// in the queue, or already holds the lock, with the channel its result
// arrives on. An Acquire that fails before it queues fails the test, as
// does ctx ending first.
func AcquireQueued(ctx context.Context, t testing.TB, l *lock.Client, req lock.Request) <-chan Acquisition {
	t.Helper()
	queued := make(chan struct{})
	var once sync.Once
	req.Callbacks.OnProgress = func(lock.Progress) { once.Do(func() { close(queued) }) }
	done := make(chan Acquisition, 1)
	go func() {
		h, err := l.Acquire(ctx, req)
		done <- Acquisition{At: time.Now(), Held: h, Err: err}
	}()
	select {
	case <-queued:
		return done
	case r := <-done:
		if r.Err != nil {
			t.Fatalf("%s not queued: %v", req.Identity, r.Err)
		}
		result := make(chan Acquisition, 1)
		result <- r
		return result
	case <-ctx.Done():
		t.Fatalf("%s not queued: %v", req.Identity, context.Cause(ctx))
	}
	return nil
}

// Await returns the result of an acquisition, or fails the test after d.
func Await(t testing.TB, done <-chan Acquisition, d time.Duration, what string) Acquisition {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("%s: no result after %s", what, d)
	}
	return Acquisition{}
}

// LastLines returns the last n lines of s, for a log in a failure message.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Identity is the holder acme/REPO@main#BUILD that the tests driving locks
// use.
func Identity(repo string, build int) record.Identity {
	return record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: strconv.Itoa(build)}
}
