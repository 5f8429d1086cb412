package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// fleetCase is a test of locks held across the clusters of the package's
// fleet: its lock namespace (one name in every cluster), a directory and
// a lock client per cluster that checks from outside lockctl.
type fleetCase struct {
	t   *testing.T
	fl  *testenv.Fleet
	ns  string
	dir string
	// direct reads each cluster's locks, by context.
	direct map[string]*lock.Client
}

func newFleetCase(t *testing.T) *fleetCase {
	t.Helper()
	fl := testenv.GetFleet(t)
	c := &fleetCase{t: t, fl: fl, ns: fl.Namespace(t), dir: t.TempDir(), direct: map[string]*lock.Client{}}
	for i, name := range fl.Contexts {
		c.direct[name] = lockClient(t, fl.Envs[i].RESTConfig, c.ns)
	}
	return c
}

// start starts lockctl with args against the fleet through kubeconfig,
// in the case's lock namespace.
func (c *fleetCase) start(kubeconfig string, args ...string) *lockctlProcess {
	c.t.Helper()
	at := slices.Index(args, "--")
	if at < 0 {
		at = len(args)
	}
	flags := []string{"--lock-namespace", c.ns}
	if args[0] == "run" || args[0] == "acquire" {
		flags = append(flags, "--progress", "plain")
	}
	return startLockctl(c.t, c.dir, "KUBECONFIG="+kubeconfig, slices.Concat(args[:at], flags, args[at:])...)
}

// holder returns who holds target in the cluster of context name, as the
// API server has it ("" for nobody alive).
func (c *fleetCase) holder(name, target string) string {
	l, err := c.direct[name].Get(context.Background(), target)
	if err != nil || l == nil || l.Status.Holder == nil || !l.Status.Alive {
		return ""
	}
	return l.Status.Holder.Repo
}

// waiting reports whether repo waits in the queue of target in context
// name.
func (c *fleetCase) waiting(name, target, repo string) bool {
	l, err := c.direct[name].Get(context.Background(), target)
	if err != nil || l == nil {
		return false
	}
	return slices.ContainsFunc(l.Status.Waiters, func(w record.Claim) bool { return w.Repo == repo })
}

// assertNoneHeld checks that nobody holds target in any cluster: no hold
// left behind.
func (c *fleetCase) assertNoneHeld(target string) {
	c.t.Helper()
	for _, name := range c.fl.Contexts {
		assert.Empty(c.t, c.holder(name, target), "%s/%s left held", name, target)
	}
}

// tickScript is a command that writes "ID start|tick|end UNIXNANO" lines
// to $2 for $3 nanoseconds, as a deploy step does its work: its first and
// last lines are when it ran, on this machine's clock.
const tickScript = `echo "$1 start $(date +%s%N)" >> "$2"; end=$(($(date +%s%N) + $3)); ` +
	`while [ "$(date +%s%N)" -lt "$end" ]; do echo "$1 tick $(date +%s%N)" >> "$2"; sleep 0.05; done; echo "$1 end $(date +%s%N)" >> "$2"`

// span is when one hold's command ran: its first and last line.
type span struct {
	id          string
	first, last time.Time
}

// spans reads the lines of tickScript in path, one span per ID, by first
// line.
func spans(t *testing.T, path string) []span {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	byID := map[string]*span{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, n)
		s := byID[f[0]]
		if s == nil {
			s = &span{id: f[0], first: at, last: at}
			byID[f[0]] = s
		}
		if at.Before(s.first) {
			s.first = at
		}
		if at.After(s.last) {
			s.last = at
		}
	}
	var out []span
	for _, s := range byID {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first.Before(out[j].first) })
	return out
}

// assertNoOverlap checks, from the outside, that no command started
// before the one before it had ended.
func assertNoOverlap(t *testing.T, ss []span) {
	t.Helper()
	for i := 1; i < len(ss); i++ {
		assert.True(t, ss[i].first.After(ss[i-1].last), "%s started at %s, before %s ended at %s (%s earlier)",
			ss[i].id, ss[i].first.Format(time.RFC3339Nano), ss[i-1].id, ss[i-1].last.Format(time.RFC3339Nano), ss[i-1].last.Sub(ss[i].first))
	}
}

// identity is the identity flags of the tests' builds.
func identity(repo string) []string {
	return []string{"--owner", "acme", "--repo", repo, "--branch", "main", "--build", "1"}
}

// TestIntegrationClustersOppositeOrders: two pipelines name the same two
// clusters in opposite orders ({us, eu} and {eu, us}) while a third build
// holds the lock in us. Both take eu first (the global order), so the
// first holds eu and waits for us, the second waits for eu holding
// nothing; once us is released both run, one after the other. Neither
// deadlocks.
func TestIntegrationClustersOppositeOrders(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	kc := c.fl.Kubeconfig
	o := c.start(kc, append([]string{"acquire", "staging", "--contexts", "us"}, identity("blocker")...)...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.True(t, strings.HasPrefix(o.Stdout, "us="), "a composite token: %s", o.Stdout)

	trace := filepath.Join(c.dir, "trace")
	run := func(repo, contexts string) *lockctlProcess {
		args := append([]string{"run", "--lock", "staging", "--contexts", contexts, "--timeout", "5m"}, identity(repo)...)
		return c.start(kc, append(args, "--", "sh", "-c", tickScript, "sh", repo, trace, "300000000")...)
	}
	first := run("first", "us,eu")
	require.Eventually(t, func() bool { return c.holder("eu", "staging") == "first" && c.waiting("us", "staging", "first") },
		2*time.Minute, 50*time.Millisecond, "the first holds eu and waits for us:\n%s", first.stderr.String())
	second := run("second", "eu,us")
	require.Eventually(t, func() bool { return c.waiting("eu", "staging", "second") },
		2*time.Minute, 50*time.Millisecond, "the second waits for eu:\n%s", second.stderr.String())
	assert.Equal(t, "blocker", c.holder("us", "staging"), "us is still the blocker's")

	o = c.start(kc, append([]string{"release", "staging", "--contexts", "us"}, identity("blocker")...)...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	for _, p := range []*lockctlProcess{first, second} {
		o := p.wait(t, 5*time.Minute)
		require.Equal(t, 0, o.Code, "%v:\n%s", p.cmd.Args, o.Stderr)
	}
	ss := spans(t, trace)
	require.Len(t, ss, 2)
	assert.Equal(t, []string{"first", "second"}, []string{ss[0].id, ss[1].id})
	assertNoOverlap(t, ss)
	assert.Contains(t, first.stderr.String(), `waiting for lock "us/staging": held by acme/blocker@main#1`)
	assert.Contains(t, second.stderr.String(), `waiting for lock "eu/staging": held by acme/first@main#1`)
	c.assertNoneHeld("staging")
}

// TestIntegrationClustersContention: 20 lockctl run processes (the built
// binary) contend at once for one lock in three clusters, each naming the
// clusters in an order of its own. Checked from outside, by the lines
// their commands write: no command starts before the one before it has
// ended; every run ends 0, and no lock is left held.
func TestIntegrationClustersContention(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	trace := filepath.Join(c.dir, "trace")
	const n = 20
	procs := make([]*lockctlProcess, n)
	for i := range n {
		order := slices.Clone(c.fl.Contexts)
		rand.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		id := fmt.Sprintf("p%02d", i)
		args := append([]string{"run", "--lock", "staging", "--contexts", strings.Join(order, ","), "--timeout", "20m"}, identity(id)...)
		procs[i] = c.start(c.fl.Kubeconfig, append(args, "--", "sh", "-c", tickScript, "sh", id, trace, "100000000")...)
	}
	for _, p := range procs {
		o := p.wait(t, 25*time.Minute)
		assert.Equal(t, 0, o.Code, "%v:\n%s", p.cmd.Args, o.Stderr)
	}
	ss := spans(t, trace)
	assert.Len(t, ss, n, "every command ran")
	assertNoOverlap(t, ss)
	c.assertNoneHeld("staging")
}

// TestIntegrationClustersSilenced: lockctl run holds a lock in three
// clusters, reaching ap through a proxy that is then frozen (a partition:
// no byte passes, no connection closes). run stops its command before the
// hold it last wrote in ap can expire (and before the next holder's
// command starts), gives back the locks in us and eu at once, and exits 1
// naming ap; ap's lock lapses after its TTL, and the next holder, which
// reaches every cluster, takes all three.
func TestIntegrationClustersSilenced(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	proxies, via := c.fl.ProxiedKubeconfig(t, c.dir, "ap")
	holderLog, nextLog := filepath.Join(c.dir, "holder"), filepath.Join(c.dir, "next")
	t.Cleanup(func() { _ = os.WriteFile(holderLog+".stop", nil, 0o600) })
	holder := c.start(via, slices.Concat([]string{"run", "--lock", "staging", "--contexts", "us,eu,ap", "--ttl", "6s"}, identity("holder"),
		[]string{"--", "sh", "-c", `while [ ! -e "$1.stop" ]; do echo "holder tick $(date +%s%N)" >> "$1"; sleep 0.05; done`, "sh", holderLog})...)
	require.Eventually(t, func() bool { return len(spans(t, holderLog)) > 0 }, 2*time.Minute, 20*time.Millisecond,
		"the holder's command runs:\n%s", holder.stderr.String())

	// The checker: the last expiry the holder wrote in ap, read straight
	// from ap's API server.
	var (
		mu         sync.Mutex
		lastExpiry time.Time
	)
	watchCtx, stopWatch := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for watchCtx.Err() == nil {
			if l, err := c.direct["ap"].Get(watchCtx, "staging"); err == nil && l != nil && l.Status.Holder != nil {
				h := l.Status.Holder
				mu.Lock()
				if h.Repo == "holder" && h.Expires != nil && h.Expires.After(lastExpiry) {
					lastExpiry = h.Expires.Time
				}
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stopWatch(); <-watched })

	next := c.start(c.fl.Kubeconfig, slices.Concat([]string{"run", "--lock", "staging", "--contexts", "ap,eu,us", "--ttl", "6s", "--timeout", "5m"}, identity("next"),
		[]string{"--", "sh", "-c", `echo "next start $(date +%s%N)" >> "$1"`, "sh", nextLog})...)
	require.Eventually(t, func() bool { return c.waiting("ap", "staging", "next") }, 2*time.Minute, 50*time.Millisecond,
		"the next holder waits:\n%s", next.stderr.String())

	proxies["ap"].Freeze()
	o := holder.wait(t, 2*time.Minute)
	assert.Equal(t, 1, o.Code, o.Stderr)
	assert.Contains(t, o.Stderr, `lock "ap/staging" could not be renewed`)
	assert.Contains(t, o.Stderr, "before the lock could expire")
	assert.Contains(t, o.Stderr, `lock "us/staging" released`, "us given back though ap does not answer")
	assert.Contains(t, o.Stderr, `lock "eu/staging" released`, "eu given back though ap does not answer")
	assert.Contains(t, o.Stderr, `release lock "ap/staging" (it lapses by itself within 6s)`, "what becomes of ap's lock")

	on := next.wait(t, 5*time.Minute)
	require.Equal(t, 0, on.Code, on.Stderr)
	held, nexts := spans(t, holderLog), spans(t, nextLog)
	require.Len(t, held, 1)
	require.Len(t, nexts, 1)
	mu.Lock()
	expiry := lastExpiry
	mu.Unlock()
	require.False(t, expiry.IsZero(), "the holder's expiry in ap was seen")
	last := held[0].last
	t.Logf("command's last tick %s before its hold in ap could expire, %s before the next command started",
		ms(expiry.Sub(last)), ms(nexts[0].first.Sub(last)))
	assert.True(t, last.Before(expiry), "the command ran until %s, past the expiry in ap %s", last, expiry)
	assert.True(t, last.Before(nexts[0].first), "the next command started before the holder's ended")
	c.assertNoneHeld("staging")
}

// TestIntegrationClustersEnforced: lockctl enforce --contexts installs the
// policy in each cluster; while a hold across the three is taken, each
// API server refuses a write from another user to the namespace, naming
// the holder; --uninstall --contexts removes it everywhere.
func TestIntegrationClustersEnforced(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	target := c.fl.Namespace(t)
	kc := c.fl.Kubeconfig
	contexts := strings.Join(c.fl.Contexts, ",")
	o := c.start(kc, "enforce", target, "--contexts", contexts, "--mode", "deny").wait(t, 3*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	for _, name := range c.fl.Contexts {
		assert.Contains(t, o.Stderr, fmt.Sprintf(`context %q: lock %q: the API server refuses writes from anyone but the holder`, name, target))
	}
	o = c.start(kc, append([]string{"acquire", target, "--contexts", contexts}, identity("web")...)...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	tokens, err := lock.ParseTokens(strings.TrimSpace(o.Stdout))
	require.NoError(t, err, o.Stdout)
	for _, name := range c.fl.Contexts {
		err := malloryWrites(t, c.fl.Env(name), target)
		require.Error(t, err, "%s refuses a non-holder", name)
		assert.Contains(t, err.Error(), "is locked by acme/web@main#1", name)
		tok, _ := tokens.For(name)
		assert.Contains(t, err.Error(), "with fencing token "+tok, "%s names its own cluster's token", name)
	}
	o = c.start(kc, append([]string{"release", target, "--contexts", contexts, "--token", tokens.String()}, identity("web")...)...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	o = c.start(kc, "enforce", target, "--contexts", contexts, "--uninstall").wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.Equal(t, len(c.fl.Contexts), strings.Count(o.Stderr, "is no longer enforced"), o.Stderr)
}

// malloryWrites writes a ConfigMap into ns of env's cluster as user
// mallory, whom RBAC lets create them there, and returns the API server's
// answer.
func malloryWrites(t *testing.T, env *testenv.Env, ns string) error {
	t.Helper()
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}
	env.Grant(t, ns, "writer", subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}})
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	mallory, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = mallory.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-"}}, metav1.CreateOptions{})
	return err
}

// TestIntegrationClustersSoak runs lockctl over three clusters for
// soakShort (or LOCKCTL_SOAK) with faults: workers start lockctl run
// processes holding one lock in all three (each naming them in an order
// of its own), reaching every cluster through a proxy; at random times,
// in turn, a lockctl run whose command runs is killed (SIGKILL) or a
// cluster's proxy is
// frozen (a partition of 2-10s, shorter and longer than the runs' renew
// deadline); beside them, acquire/release pipelines reach the clusters
// directly. Checked from outside: no command or pipeline step ran while
// another did, every process ended 0, 1 or 4 (or was killed), and once
// the faults stop and the TTLs pass no lock is held anywhere.
func TestIntegrationClustersSoak(t *testing.T) {
	length := soakShort
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "%s=%q", soakEnv, v)
		length = d
	}
	c := newFleetCase(t)
	proxies, via := c.fl.ProxiedKubeconfig(t, c.dir, c.fl.Contexts...)
	trace := filepath.Join(c.dir, "trace")
	end := time.Now().Add(length)

	var (
		mu     sync.Mutex
		live   = map[*lockctlProcess]bool{}
		codes  = map[string]int{}
		killed int
		frozen time.Duration
	)
	code := func(kind string, p *lockctlProcess, o int) {
		mu.Lock()
		defer mu.Unlock()
		delete(live, p)
		codes[fmt.Sprintf("%s exit %d", kind, o)]++
	}
	order := func() string {
		o := slices.Clone(c.fl.Contexts)
		rand.Shuffle(len(o), func(a, b int) { o[a], o[b] = o[b], o[a] })
		return strings.Join(o, ",")
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for n := 1; time.Now().Before(end); n++ {
				id := fmt.Sprintf("run%d-%d", w, n)
				args := slices.Concat([]string{"run", "--lock", "staging", "--contexts", order(), "--ttl", "6s", "--timeout", "60s"}, identity(id),
					[]string{"--", "sh", "-c", tickScript, "sh", id, trace, strconv.FormatInt(int64(rand.N(2*time.Second)), 10)})
				p := c.start(via, args...)
				mu.Lock()
				live[p] = true
				mu.Unlock()
				code("run", p, p.wait(t, 5*time.Minute).Code)
				time.Sleep(rand.N(300 * time.Millisecond))
			}
		})
	}
	wg.Go(func() {
		for n := 1; time.Now().Before(end); n++ {
			id := fmt.Sprintf("pipe-%d", n)
			ids := identity(id)
			o := c.start(c.fl.Kubeconfig, slices.Concat([]string{"acquire", "staging", "--contexts", order(), "--ttl", "30s", "--timeout", "60s"}, ids)...).wait(t, 3*time.Minute)
			code("acquire", nil, o.Code)
			if o.Code == 0 {
				f, err := os.OpenFile(trace, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				require.NoError(t, err)
				for stop := time.Now().Add(rand.N(2 * time.Second)); time.Now().Before(stop); time.Sleep(50 * time.Millisecond) {
					_, _ = fmt.Fprintf(f, "%s tick %d\n", id, time.Now().UnixNano())
				}
				_, _ = fmt.Fprintf(f, "%s end %d\n", id, time.Now().UnixNano())
				_ = f.Close()
				for range 3 {
					r := c.start(c.fl.Kubeconfig, slices.Concat([]string{"release", "staging", "--contexts", order()}, ids)...).wait(t, 3*time.Minute)
					code("release", nil, r.Code)
					if r.Code == 0 {
						break
					}
				}
			}
			time.Sleep(rand.N(time.Second))
		}
	})
	wg.Go(func() {
		for i := 0; time.Now().Before(end); i++ {
			time.Sleep(2*time.Second + rand.N(4*time.Second))
			if i%2 == 0 {
				mu.Lock()
				var victims []*lockctlProcess
				for p := range live {
					// NOTE: holders, whose command runs: a waiter killed
					// keeps its place until its waiter TTL (a minute) and
					// holds everyone up meanwhile.
					if strings.Contains(p.stderr.String(), "running sh") {
						victims = append(victims, p)
					}
				}
				mu.Unlock()
				if len(victims) > 0 {
					_ = victims[rand.N(len(victims))].cmd.Process.Kill()
					mu.Lock()
					killed++
					mu.Unlock()
				}
				continue
			}
			name := c.fl.Contexts[rand.N(len(c.fl.Contexts))]
			d := 2*time.Second + rand.N(8*time.Second)
			proxies[name].Freeze()
			time.Sleep(d)
			proxies[name].Thaw()
			mu.Lock()
			frozen += d
			mu.Unlock()
		}
	})
	wg.Wait()

	ss := spans(t, trace)
	mu.Lock()
	t.Logf("%d holds ran in %s over %v; %d lockctl killed, proxies frozen %s in all; exits %v", len(ss), length, c.fl.Contexts, killed, frozen, codes)
	for k, n := range codes {
		f := strings.Fields(k)
		switch f[len(f)-1] {
		case "0", "1", "4", "-1":
		default:
			t.Errorf("%d processes ended %q: not a documented status", n, k)
		}
	}
	mu.Unlock()
	assert.NotEmpty(t, ss, "holds ran")
	assertNoOverlap(t, ss)
	// NOTE: a killed holder's locks lapse after its TTL (6s, the
	// pipelines' 30s): then nothing is held anywhere.
	require.Eventually(t, func() bool {
		for _, name := range c.fl.Contexts {
			if c.holder(name, "staging") != "" {
				return false
			}
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "a lock left held")
}

// TestIntegrationClustersUnreachable: a cluster that does not answer
// (its proxy frozen before anything is asked of it) while acquiring
// across three: acquire says on its waiting line which cluster it waits
// for, gives up at --timeout with exit 4, and keeps nothing in the
// others. A release across three that cannot reach one cluster releases
// the others, names it and says its lock stays held until its expiry;
// run again once the cluster answers, it releases that one too.
func TestIntegrationClustersUnreachable(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	proxies, via := c.fl.ProxiedKubeconfig(t, c.dir, "eu")
	contexts := strings.Join(c.fl.Contexts, ",")

	proxies["eu"].Freeze()
	o := c.start(via, slices.Concat([]string{"acquire", "staging", "--contexts", contexts, "--timeout", "12s"}, identity("web"))...).wait(t, 2*time.Minute)
	assert.Equal(t, 4, o.Code, o.Stderr)
	assert.Contains(t, o.Stderr, `waiting for lock "eu/staging": the API server of context "eu" is not reached`)
	assert.Contains(t, o.Stderr, `the API server of context "eu" did not answer`)
	for _, name := range []string{"us", "ap"} {
		assert.Empty(t, c.holder(name, "staging"), "%s given back", name)
	}
	proxies["eu"].Thaw()

	o = c.start(via, slices.Concat([]string{"acquire", "staging", "--contexts", contexts, "--ttl", "10m"}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	proxies["eu"].Freeze()
	o = c.start(via, slices.Concat([]string{"release", "staging", "--contexts", contexts}, identity("web"))...).wait(t, 2*time.Minute)
	assert.Equal(t, 1, o.Code, o.Stderr)
	assert.Contains(t, o.Stderr, `lock "us/staging" released`)
	assert.Contains(t, o.Stderr, `lock "ap/staging" released`)
	assert.Contains(t, o.Stderr, `not released in contexts ["eu"] (said above): each stays held until its expiry`)
	assert.Empty(t, c.holder("us", "staging"))
	assert.Empty(t, c.holder("ap", "staging"))
	assert.Equal(t, "web", c.holder("eu", "staging"), "eu keeps its lock until its expiry, or a release that reaches it")
	proxies["eu"].Thaw()
	o = c.start(via, slices.Concat([]string{"release", "staging", "--contexts", "eu"}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	c.assertNoneHeld("staging")
}

// TestIntegrationClustersSeenAsOne: the reading and freezing commands
// over three clusters: acquire -o yaml and status -o json carry each
// lock's context, status's table has a row per context, history one per
// hold and context; a freeze set across the three holds everyone off in
// each until lifted across the three; stamp writes each cluster's part
// of the composite token.
func TestIntegrationClustersSeenAsOne(t *testing.T) {
	t.Parallel()
	c := newFleetCase(t)
	kc := c.fl.Kubeconfig
	contexts := strings.Join(c.fl.Contexts, ",")
	o := c.start(kc, slices.Concat([]string{"acquire", "staging", "--contexts", "us,eu"}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	tokens, err := lock.ParseTokens(strings.TrimSpace(o.Stdout))
	require.NoError(t, err, o.Stdout)
	assert.Len(t, tokens, 2)

	o = c.start(kc, "status", "staging", "--contexts", contexts).wait(t, time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.Regexp(t, `(?m)^CONTEXT +TARGET +HOLDER`, o.Stdout)
	assert.Regexp(t, `(?m)^us +staging +acme/web@main#1`, o.Stdout)
	assert.Regexp(t, `(?m)^eu +staging +acme/web@main#1`, o.Stdout)
	assert.Regexp(t, `(?m)^ap +staging +-`, o.Stdout)
	assert.Contains(t, o.Stderr, `lock "ap/staging" is free`)
	o = c.start(kc, "status", "staging", "--contexts", contexts, "-o", "jsonpath={range .items[*]}{.spec.context}={.status.state} {end}").wait(t, time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.Equal(t, "us=held eu=held ap=free ", o.Stdout)

	for _, name := range []string{"us", "eu"} {
		tok, _ := tokens.For(name)
		cmd := startLockctlIn(t, c.dir, kc, "kind: ConfigMap\nmetadata: {name: app}\n", "stamp", "--token", tokens.String(), "--context", name)
		assert.Contains(t, cmd.Stdout, "lockctl.dev/fencing-token: \""+tok+"\"", "%s's part", name)
	}

	o = c.start(kc, slices.Concat([]string{"release", "staging", "--contexts", "us,eu", "--token", tokens.String()}, identity("web"))...).wait(t, 2*time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	o = c.start(kc, "history", "staging", "--contexts", contexts).wait(t, time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.Regexp(t, `(?m)^CONTEXT +HOLDER`, o.Stdout)
	assert.Regexp(t, `(?m)^us +acme/web@main#1 .* released`, o.Stdout)
	assert.Regexp(t, `(?m)^eu +acme/web@main#1 .* released`, o.Stdout)

	o = c.start(kc, slices.Concat([]string{"freeze", "staging", "--contexts", contexts, "--for", "1h", "--reason", "release party"}, identity("ops"))...).wait(t, time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	for _, name := range c.fl.Contexts {
		assert.Contains(t, o.Stderr, fmt.Sprintf(`lock "%s/staging" frozen until`, name))
	}
	o = c.start(kc, slices.Concat([]string{"acquire", "staging", "--contexts", contexts, "--no-wait"}, identity("web"))...).wait(t, time.Minute)
	assert.Equal(t, 4, o.Code, "frozen: %s", o.Stderr)
	o = c.start(kc, "unfreeze", "staging", "--contexts", contexts).wait(t, time.Minute)
	require.Equal(t, 0, o.Code, o.Stderr)
	assert.Equal(t, len(c.fl.Contexts), strings.Count(o.Stderr, "unfrozen"), o.Stderr)
	c.assertNoneHeld("staging")
}

// startLockctlIn runs lockctl with args against kubeconfig, stdin in,
// and returns how it ended.
func startLockctlIn(t *testing.T, home, kubeconfig, in string, args ...string) clitest.Outcome {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), clitest.Binary(t), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KUBECONFIG=" + kubeconfig}
	cmd.Stdin = strings.NewReader(in)
	return clitest.RunCmd(t, cmd)
}
