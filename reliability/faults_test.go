package reliability

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"k8s.io/utils/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// fault is one kind of API failure injected at the client.
type fault string

const (
	// faultConflict answers a write with 409 Conflict without sending it.
	faultConflict fault = "conflict"
	// faultServerError answers with 500 or 503 without sending the request.
	faultServerError fault = "5xx"
	// faultTimeout sends the request, lets the server apply it, and loses
	// the response: the caller cannot tell whether its write happened.
	faultTimeout fault = "timeout"
)

// faultyTransport injects faults into a fraction of the requests.
type faultyTransport struct {
	next http.RoundTripper
	rate float64 // fraction of requests that fail, 0..1
	on   *atomic.Bool
	mu   sync.Mutex
	hits map[fault]int
}

var _ http.RoundTripper = (*faultyTransport)(nil)

var _ net.Error = timeoutError{}

// timeoutError is what a lost response looks like to the caller.
type timeoutError struct{}

func (timeoutError) Error() string   { return "injected: response lost (i/o timeout)" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !f.on.Load() || rand.Float64() >= f.rate {
		return f.next.RoundTrip(req)
	}
	write := req.Method != http.MethodGet
	kinds := []fault{faultServerError, faultTimeout}
	if write {
		kinds = append(kinds, faultConflict)
	}
	kind := kinds[rand.N(len(kinds))]
	f.mu.Lock()
	f.hits[kind]++
	f.mu.Unlock()
	switch kind {
	case faultConflict:
		return statusResponse(req, http.StatusConflict, "Conflict", "injected conflict: the object has been modified"), nil
	case faultServerError:
		code := []int{http.StatusInternalServerError, http.StatusServiceUnavailable}[rand.N(2)]
		return statusResponse(req, code, "InternalError", "injected server error"), nil
	}
	resp, err := f.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if req.URL.Query().Get("watch") != "true" {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	return nil, timeoutError{}
}

func statusResponse(req *http.Request, code int, reason, msg string) *http.Response {
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":%q,"reason":%q,"code":%d}`, msg, reason, code)
	return &http.Response{
		StatusCode: code,
		Status:     fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(bytes.NewBufferString(body)),
		Request:    req,
		ProtoMajor: 1, ProtoMinor: 1,
	}
}

// faulty returns a copy of cfg whose requests fail at rate while on is set.
func faulty(cfg *rest.Config, rate float64, on *atomic.Bool) (*rest.Config, *faultyTransport) {
	ft := &faultyTransport{rate: rate, on: on, hits: map[fault]int{}}
	out := rest.CopyConfig(cfg)
	out.Timeout = 10 * time.Second
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		ft.next = rt
		return ft
	})
	return out, ft
}

// TestIntegrationInjectedFaults runs contenders whose every API request may
// fail (conflicts, server errors, lost responses) at a set rate, as a
// pipeline would: acquire, hold, release, retrying a failed command a few
// times. Invariants: never two holders at once; every failure is an error
// that names the lock; once the faults stop, the lock is free again within
// the short TTLs used here, and a clean client takes it.
func TestIntegrationInjectedFaults(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	contenders, turns, rate := 6, 3, 0.10
	if heavy() {
		contenders, turns, rate = 12, 6, 0.25
	}
	const (
		target = "staging"
		ttl    = 4 * time.Second
		hold   = 20 * time.Millisecond
	)
	var on atomic.Bool
	on.Store(true)

	var (
		holding, doubled, held, failed atomic.Int32
		mu                             sync.Mutex
		messages                       = map[string]int{}
		transports                     []*faultyTransport
		wg                             sync.WaitGroup
	)
	fail := func(err error) {
		failed.Add(1)
		msg := err.Error()
		mu.Lock()
		messages[firstLine(msg)]++
		mu.Unlock()
		assert.NotEmpty(t, msg)
		assert.True(t, strings.Contains(msg, record.Name(target)) || strings.Contains(msg, `"`+target+`"`),
			"the error names the lock: %q", msg)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rounds(2, 6))*time.Minute)
	defer cancel()
	for i := range contenders {
		cfg, ft := faulty(env.RESTConfig, rate, &on)
		transports = append(transports, ft)
		cs, err := kube.NewForConfig(cfg)
		require.NoError(t, err)
		l := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{WaiterTTL: ttl})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := range turns {
				id := clitest.Identity(fmt.Sprintf("repo-%d", i), turn+1)
				var err error
				for try := 0; try < 3; try++ {
					actx, acancel := context.WithTimeout(ctx, 30*time.Second)
					_, err = l.Acquire(actx, lock.Request{Target: target, Identity: id, TTL: ttl, Policy: record.PolicyFIFO})
					acancel()
					if err == nil {
						break
					}
					fail(err)
				}
				if err != nil {
					continue
				}
				held.Add(1)
				if holding.Add(1) > 1 {
					doubled.Add(1)
				}
				time.Sleep(hold)
				holding.Add(-1)
				for try := 0; try < 3; try++ {
					_, err = l.Release(ctx, target, id, lock.ReleaseOptions{})
					if err == nil || errors.Is(err, lock.ErrNotHolder) {
						break // NotHolder: an earlier try released it and lost the answer
					}
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
	on.Store(false)

	hits := map[fault]int{}
	for _, ft := range transports {
		ft.mu.Lock()
		for k, v := range ft.hits {
			hits[k] += v
		}
		ft.mu.Unlock()
	}
	t.Logf("%d contenders x %d turns at fault rate %.0f%%: injected %v; %d held, %d commands failed", contenders, turns, rate*100, hits, held.Load(), failed.Load())
	for msg, n := range messages {
		t.Logf("  %3d x %s", n, msg)
	}
	assert.Zero(t, doubled.Load(), "never two holders at once")
	assert.Positive(t, held.Load(), "some contenders held the lock despite the faults")

	// Whatever the faults left behind (a holder that never learnt it held
	// the lock, a waiter that lost its answer) expires within the TTLs.
	clean := lockClient(t, env.RESTConfig, ns)
	cctx, ccancel := context.WithTimeout(t.Context(), 3*ttl+takeoverSlack)
	defer ccancel()
	_, err := clean.Acquire(cctx, lock.Request{Target: target, Identity: clitest.Identity("clean", 1)})
	require.NoError(t, err, "the lock is free again once the faults stop")
	got, err := clean.Get(t.Context(), target)
	require.NoError(t, err)
	assert.Equal(t, "clean", got.Status.Holder.Repo)
	assert.Empty(t, got.Status.Invalid, "the record is valid")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
