package lock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// newContextClient is newTestClient for the cluster of a kubeconfig
// context, as a hold across clusters has one client per cluster.
func newContextClient(t *testing.T, name string, reactors func(*fake.Clientset)) (*Client, *fake.Clientset) {
	t.Helper()
	c, cs := newTestClient(t, t0.Add(time.Minute), reactors)
	c.opts.Context = name
	return c, cs
}

// progressLog records the Progress reports of several goroutines.
type progressLog struct {
	mu  sync.Mutex
	got []Progress
}

func (l *progressLog) add(p Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, p)
}

func (l *progressLog) unreachable() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, p := range l.got {
		if p.Unreachable != "" {
			out = append(out, p.Where())
		}
	}
	return out
}

func TestAcquireAcross(t *testing.T) {
	t.Parallel()
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	otherHolds := func(target string) *record.Record {
		rec := recordOf(held(claim("h", "api", "main", "7"), t0))
		rec.Target = target
		return rec
	}
	unavailable := func(cs *fake.Clientset) {
		cs.PrependReactor("*", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
		})
	}
	tests := []struct {
		name string
		// held are the records of locks another build holds, by context.
		held map[string][]*record.Record
		// down are the contexts whose API server fails every request.
		down    []string
		noWait  bool
		timeout time.Duration
		// wantHeld are the locks held, in the global order; wantErr the
		// error's text otherwise.
		wantHeld        []string
		wantErr         string
		wantErrIs       error
		wantUnreachable []string
	}{
		{
			name:     "free locks in every cluster are held, context then target",
			wantHeld: []string{"eu/db", "eu/staging", "us/db", "us/staging"},
		},
		{
			name: "one held with --no-wait: nothing kept", noWait: true,
			held:    map[string][]*record.Record{"us": {otherHolds("db")}},
			wantErr: `lock "us/db" (3 of 4; the 2 taken before it given back): lock on "db" is held by acme/api@main#7`, wantErrIs: ErrHeld,
		},
		{
			name: "the first held: the later ones taken at once are given back while it waits", timeout: 300 * time.Millisecond,
			held:    map[string][]*record.Record{"eu": {otherHolds("db")}},
			wantErr: `lock "eu/db" (1 of 4): timed out after`, wantErrIs: ErrTimeout,
		},
		{
			name: "a cluster that does not answer: reported, then a timeout", timeout: 300 * time.Millisecond,
			down:    []string{"us"},
			wantErr: `lock "us/db" (3 of 4; the 2 taken before it given back): timed out after`, wantErrIs: ErrTimeout,
			wantUnreachable: []string{"us/db"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clients := map[string]*Client{}
			var all []*Client
			for _, name := range []string{"us", "eu"} {
				var reactors func(*fake.Clientset)
				for _, d := range tt.down {
					if d == name {
						reactors = unavailable
					}
				}
				c, cs := newContextClient(t, name, reactors)
				for _, rec := range tt.held[name] {
					err := cs.Tracker().Add(lockObject(t, rec))
					require.NoError(t, err)
				}
				clients[name] = c
				all = append(all, c)
			}
			var progress progressLog
			base := Request{Identity: id, TTL: time.Hour, NoWait: tt.noWait, Callbacks: Callbacks{OnProgress: progress.add}}
			ctx := t.Context()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			got, err := AcquireAcross(ctx, PartsFor(all, base, []string{"staging", "db"}))
			if tt.wantErr == "" {
				require.NoError(t, err)
				var where []string
				for _, h := range got {
					// NOTE: the fake clientset keeps no resourceVersion, so
					// no token: the integration test checks them.
					where = append(where, h.Where())
				}
				assert.Equal(t, tt.wantHeld, where, "held, in the global order")
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			require.ErrorIs(t, err, tt.wantErrIs)
			assert.Equal(t, tt.wantUnreachable, progress.unreachable(), "locks reported unreachable")
			for name, c := range clients {
				if len(tt.down) > 0 && tt.down[0] == name {
					continue
				}
				for _, target := range []string{"staging", "db"} {
					l, err := c.Get(context.Background(), target)
					require.NoError(t, err)
					if l != nil {
						assert.NotEqual(t, "web", l.Status.Holder.Repo, "%s/%s given back", name, target)
					}
				}
			}
		})
	}
}

// TestAcquireAcrossUnreachable: a cluster whose API server fails with a
// transient error is tried again and reported, and the wait that ends on
// it is an *unreachableError naming its context.
func TestAcquireAcrossUnreachable(t *testing.T) {
	t.Parallel()
	eu, _ := newContextClient(t, "eu", nil)
	us, _ := newContextClient(t, "us", func(cs *fake.Clientset) {
		cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("the API server is restarting")
		})
	})
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var progress progressLog
	_, err := AcquireAcross(ctx, PartsFor([]*Client{us, eu}, Request{
		Target: "staging", Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}, TTL: time.Hour, Callbacks: Callbacks{OnProgress: progress.add},
	}, []string{"staging"}))
	var unreachable *unreachableError
	require.ErrorAs(t, err, &unreachable)
	assert.Equal(t, "us", unreachable.Context)
	assert.Contains(t, err.Error(), `lock "us/staging" (2 of 2; the 1 taken before it given back): timed out after`)
	assert.Contains(t, err.Error(), `the API server of context "us" did not answer`)
	assert.Equal(t, []string{"us/staging"}, progress.unreachable())
	l, err := eu.Get(context.Background(), "staging")
	require.NoError(t, err)
	assert.Nil(t, l, "eu's lock given back")
}

func TestAcquireAcrossNamedTwice(t *testing.T) {
	t.Parallel()
	eu, _ := newContextClient(t, "eu", nil)
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	_, err := AcquireAcross(t.Context(), []Part{{Locks: eu, Request: Request{Target: "a", Identity: id}}, {Locks: eu, Request: Request{Target: "a", Identity: id}}})
	assert.EqualError(t, err, `lock "eu/a" is named twice`)
}

func TestTokens(t *testing.T) {
	t.Parallel()
	held := []*Held{{Context: "us", Token: "12"}, {Context: "eu", Token: "7"}}
	tokens := TokensOf(held)
	assert.Equal(t, "eu=7,us=12", tokens.String(), "in context order")
	assert.True(t, IsComposite(tokens.String()))
	assert.False(t, IsComposite("12"))
	back, err := ParseTokens(tokens.String())
	require.NoError(t, err)
	assert.Equal(t, tokens, back)
	tok, ok := back.For("us")
	assert.True(t, ok)
	assert.Equal(t, "12", tok)
	_, ok = back.For("ap")
	assert.False(t, ok)

	arn, err := ParseTokens("arn:aws:eks:eu-west-1:1:cluster/prod=5")
	require.NoError(t, err)
	assert.Equal(t, Tokens{"arn:aws:eks:eu-west-1:1:cluster/prod": "5"}, arn, "a context may hold \"=\"-free punctuation")

	for _, tc := range []struct{ in, want string }{
		{"eu=7,12", `"12" is not CONTEXT=TOKEN`},
		{"eu=7,us=", `"us=" is not CONTEXT=TOKEN`},
		{"=7", `"=7" is not CONTEXT=TOKEN`},
		{"eu=7,eu=8", `context "eu" is named twice`},
	} {
		_, err := ParseTokens(tc.in)
		assert.ErrorContains(t, err, tc.want, tc.in)
	}
}

func TestWhere(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "staging", Where("", "staging"))
	assert.Equal(t, "prod-eu/staging", Where("prod-eu", "staging"))
	p := Progress{Context: "prod-eu", Target: "staging"}
	assert.Equal(t, "prod-eu/staging", p.Where())
	assert.True(t, errors.Is(&unreachableError{}, ErrTimeout))
}
