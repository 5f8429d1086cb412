package reliability

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

// soakEnv sets the soak's length (make soak: LOCKCTL_SOAK=10m); unset, a
// short variant runs with the suite.
const soakEnv = "LOCKCTL_SOAK"

// soakShort is the length of the soak that runs with the suite.
const soakShort = 60 * time.Second

// soakLocks are the locks every process of the soak contends for.
var soakLocks = []string{"alpha", "beta"}

// TestIntegrationSoak runs lockctl as a fleet would, for soakShort (or
// LOCKCTL_SOAK), on loopback only, and stops by itself: two `lockctl
// reconcile` replicas; a steady stream of `lockctl run -- CMD` and `run -f`
// processes on two shared locks, some of them connected through a proxy
// that is frozen (a partition) at random times; acquire/release
// pipelines; the API server restarted at random times. A checker outside
// lockctl records every hold (each command's and pipeline's ticks, this
// machine's clock, and its fencing token) and every pod, and asserts:
// never two holders running under one lock, tokens strictly increasing
// from one hold to the next, no job with two live pods, every job
// terminal at the end, no lock left held, and the reconcilers' goroutines
// and memory flat (first against last part of the soak).
//
// It runs alone (not in parallel): the API server restarts would fail
// other tests.
func TestIntegrationSoak(t *testing.T) {
	length := soakShort
	if v := os.Getenv(soakEnv); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err, "%s=%q", soakEnv, v)
		length = d
	}
	env := testenv.Get(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	s := &soak{t: t, env: env, ns: ns, dir: dir, holds: filepath.Join(dir, "holds.log"), tokens: map[string]holdToken{}}
	s.proxy, s.via = env.ProxiedKubeconfig(t, dir)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var metricsAddrs []string
	var reconcilers []*lockctlProcess
	for range 2 {
		a := freeAddr(t)
		metricsAddrs = append(metricsAddrs, a)
		reconcilers = append(reconcilers, startLockctl(t, dir, "KUBECONFIG="+env.Kubeconfig,
			"reconcile", "-n", ns, "--metrics-addr", a, "--workers", "4"))
	}
	var bg sync.WaitGroup
	bg.Go(func() { s.watchPods(ctx) })
	bg.Go(func() { s.scrape(ctx, metricsAddrs) })

	end := time.Now().Add(length)
	var workers sync.WaitGroup
	for i := range 3 { // commands; the first two through the proxy
		workers.Go(func() { s.loop(end, func(n int) { s.runCommand(i, n, i < 2) }) })
	}
	for i := range 2 { // jobs; the first through the proxy
		workers.Go(func() { s.loop(end, func(n int) { s.runJob(i, n, i == 0) }) })
	}
	workers.Go(func() { s.loop(end, func(n int) { s.pipeline(n) }) })
	workers.Go(func() { s.chaos(end) })
	workers.Wait()
	s.proxy.Thaw()

	// Every job ends and every lock is freed, with the reconcilers running.
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	require.Eventually(t, func() bool {
		jobs, err := store.List(t.Context(), job.ListOptions{})
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if !j.IsTerminal() {
				return false
			}
		}
		s.jobs = len(jobs)
		return true
	}, 3*time.Minute, time.Second, "every job terminal at the end")
	direct := lockClient(t, env.RESTConfig, ns)
	require.Eventually(t, func() bool {
		for _, target := range soakLocks {
			st, err := direct.Get(t.Context(), target)
			if err != nil || (st != nil && st.Status.Holder != nil && st.Status.Alive) {
				return false
			}
		}
		return true
	}, time.Minute, time.Second, "no lock left held (a hold whose release failed expires)")
	cancel()
	bg.Wait()
	for _, r := range reconcilers {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		o := r.wait(t, time.Minute)
		assert.Equal(t, 0, o.Code, "a reconciler ends cleanly on SIGTERM:\n%s", clitestLast(o.Stderr))
	}
	s.check(length)
}

// clitestLast is the end of a process's stderr, for failure messages.
func clitestLast(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// soak is the state of one soak run.
type soak struct {
	t         *testing.T
	env       *testenv.Env
	ns, dir   string
	holds     string // the ticks of every hold: "LOCK ID tick UNIXNANO"
	proxy     *testenv.Proxy
	via       string
	restarts  atomic.Int64
	freezes   atomic.Int64
	frozenFor atomic.Int64

	mu      sync.Mutex
	tokens  map[string]holdToken // by hold ID
	codes   map[string]int       // exit codes by kind, "run 0"
	maxLive int                  // most live pods of one job at once
	pods    map[string]bool
	samples map[string][]metricSample
	jobs    int
}

// holdToken is the lock and the fencing token of a hold.
type holdToken struct {
	lock  string
	token int64
}

type metricSample struct {
	at                   time.Time
	goroutines, rssBytes float64
}

// loop calls f with 1, 2, … until end.
func (s *soak) loop(end time.Time, f func(n int)) {
	for n := 1; time.Now().Before(end); n++ {
		f(n)
		time.Sleep(rand.N(500 * time.Millisecond))
	}
}

func (s *soak) code(kind string, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.codes == nil {
		s.codes = map[string]int{}
	}
	s.codes[fmt.Sprintf("%s exit %d", kind, code)]++
}

var tokenRE = regexp.MustCompile(`lock "([a-z]+)" acquired by .* fencing token (\d+)`)

// recordTokens keeps the fencing tokens a run printed for hold id.
func (s *soak) recordTokens(id, stderr string) {
	for _, m := range tokenRE.FindAllStringSubmatch(stderr, -1) {
		tok, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			continue
		}
		s.mu.Lock()
		s.tokens[id] = holdToken{lock: m[1], token: tok}
		s.mu.Unlock()
	}
}

// soakIdentity returns the identity flags of worker w's build n.
func soakIdentity(kind string, w, n int) []string {
	return []string{"--owner", "soak", "--repo", fmt.Sprintf("%s%d", kind, w), "--branch", "main", "--build", strconv.Itoa(n)}
}

// runCommand runs `lockctl run -- CMD` on a random lock; the command ticks
// for up to 3s.
func (s *soak) runCommand(w, n int, viaProxy bool) {
	target := soakLocks[rand.N(len(soakLocks))]
	id := fmt.Sprintf("cmd%d-%d", w, n)
	kubeconfig := s.env.Kubeconfig
	if viaProxy {
		kubeconfig = s.via
	}
	script := `end=$(($(date +%s%N) + $2)); while [ "$(date +%s%N)" -lt "$end" ]; do echo "$1 tick $(date +%s%N)" >> "$3"; sleep 0.05; done`
	args := append([]string{"run", "--lock", target, "--lock-namespace", s.ns, "-n", s.ns, "--ttl", "10s", "--timeout", "60s", "--progress", "plain"},
		soakIdentity("cmd", w, n)...)
	args = append(args, "--", "sh", "-c", script, "sh", target+" "+id, strconv.FormatInt(int64(rand.N(3*time.Second)), 10), s.holds)
	p := startLockctl(s.t, s.dir, "KUBECONFIG="+kubeconfig, args...)
	o := p.wait(s.t, 5*time.Minute)
	s.recordTokens(id, o.Stderr)
	s.code("run", o.Code)
}

// runJob runs `lockctl run -f` on a random lock; the job's pod succeeds
// after 1-3s.
func (s *soak) runJob(w, n int, viaProxy bool) {
	target := soakLocks[rand.N(len(soakLocks))]
	kubeconfig := s.env.Kubeconfig
	if viaProxy {
		kubeconfig = s.via
	}
	file := filepath.Join(s.dir, fmt.Sprintf("job%d-%d.yaml", w, n))
	doc := fmt.Sprintf(`apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  generateName: soak-
  annotations: {%s: "0", %s: %ds}
spec:
  job: soak-%d
  type: postsubmit
  refs: {org: soak, repo: web, baseRef: main}
  podSpec:
    containers: [{name: main, image: alpine}]
    tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
`, testenv.AnnotationExitCode, testenv.AnnotationDuration, 1+rand.N(3), w)
	require.NoError(s.t, os.WriteFile(file, []byte(doc), 0o600))
	args := append([]string{"run", "--lock", target, "--lock-namespace", s.ns, "-n", s.ns, "--ttl", "10s", "--timeout", "60s", "--progress", "plain", "-f", file},
		soakIdentity("job", w, n)...)
	o := startLockctl(s.t, s.dir, "KUBECONFIG="+kubeconfig, args...).wait(s.t, 5*time.Minute)
	s.code("run -f", o.Code)
}

// pipeline acquires a random lock, ticks for up to 3s as a pipeline's
// deploy step would, and releases it (tried three times, as a finally
// block would).
func (s *soak) pipeline(n int) {
	target := soakLocks[rand.N(len(soakLocks))]
	id := fmt.Sprintf("pipe-%d", n)
	base := append([]string{"--lock-namespace", s.ns, "-n", s.ns}, soakIdentity("pipe", 0, n)...)
	kc := "KUBECONFIG=" + s.env.Kubeconfig
	o := startLockctl(s.t, s.dir, kc, append([]string{"acquire", target, "--ttl", "30s", "--timeout", "60s", "--progress", "plain"}, base...)...).wait(s.t, 3*time.Minute)
	s.code("acquire", o.Code)
	if o.Code != 0 {
		return
	}
	tok, err := strconv.ParseInt(strings.TrimSpace(o.Stdout), 10, 64)
	if err == nil {
		s.mu.Lock()
		s.tokens[id] = holdToken{lock: target, token: tok}
		s.mu.Unlock()
	}
	f, err := os.OpenFile(s.holds, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(s.t, err)
	for end := time.Now().Add(rand.N(3 * time.Second)); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		_, _ = fmt.Fprintf(f, "%s %s tick %d\n", target, id, time.Now().UnixNano())
	}
	_, _ = fmt.Fprintf(f, "%s %s tick %d\n", target, id, time.Now().UnixNano())
	_ = f.Close()
	for range 3 {
		r := startLockctl(s.t, s.dir, kc, append([]string{"release", target}, base...)...).wait(s.t, 3*time.Minute)
		s.code("release", r.Code)
		if r.Code == 0 {
			return
		}
		time.Sleep(time.Second)
	}
}

// chaos restarts the API server or freezes the proxy at random times
// until end. The first fault is a partition longer than the runs' TTL, so
// that every soak has holds expire under partitioned runs.
func (s *soak) chaos(end time.Time) {
	for i := 0; ; i++ {
		time.Sleep(5*time.Second + rand.N(15*time.Second))
		if !time.Now().Before(end) {
			return
		}
		if i > 0 && rand.N(2) == 0 {
			down := rand.N(2 * time.Second)
			if err := s.env.RestartAPIServer(s.t.Context(), down); err != nil {
				s.t.Errorf("restart the API server: %v", err)
				return
			}
			s.restarts.Add(1)
			continue
		}
		// A partition of 2-12s: shorter and longer than the runs' renew
		// deadline (10s TTL: 7.34s).
		d := 2*time.Second + rand.N(10*time.Second)
		if i == 0 {
			d = 12 * time.Second
		}
		s.proxy.Freeze()
		time.Sleep(d)
		s.proxy.Thaw()
		s.freezes.Add(1)
		s.frozenFor.Add(int64(d))
	}
}

// watchPods records how many pods of one job are live at once.
func (s *soak) watchPods(ctx context.Context) {
	for ctx.Err() == nil {
		pods, err := s.env.Client.CoreV1().Pods(s.ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			live := map[string]int{}
			s.mu.Lock()
			if s.pods == nil {
				s.pods = map[string]bool{}
			}
			for _, p := range pods.Items {
				s.pods[string(p.UID)] = true
				if p.DeletionTimestamp == nil && (p.Status.Phase == corev1.PodPending || p.Status.Phase == corev1.PodRunning) {
					live[p.Labels[job.LabelRecord]]++
				}
			}
			for _, n := range live {
				s.maxLive = max(s.maxLive, n)
			}
			s.mu.Unlock()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape samples the reconcilers' goroutines and resident memory every 5s.
func (s *soak) scrape(ctx context.Context, addrs []string) {
	client := &http.Client{Timeout: 5 * time.Second}
	for ctx.Err() == nil {
		for _, a := range addrs {
			resp, err := client.Get("http://" + a + "/metrics")
			if err != nil {
				continue
			}
			sample := metricSample{at: time.Now()}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				f := strings.Fields(sc.Text())
				if len(f) != 2 {
					continue
				}
				v, _ := strconv.ParseFloat(f[1], 64)
				switch f[0] {
				case "go_goroutines":
					sample.goroutines = v
				case "process_resident_memory_bytes":
					sample.rssBytes = v
				}
			}
			_ = resp.Body.Close()
			s.mu.Lock()
			if s.samples == nil {
				s.samples = map[string][]metricSample{}
			}
			s.samples[a] = append(s.samples[a], sample)
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
	}
}

// check asserts the invariants on what was recorded.
func (s *soak) check(length time.Duration) {
	t := s.t
	type interval struct {
		id         string
		start, end time.Time
	}
	byLock := map[string]map[string]*interval{}
	data, err := os.ReadFile(s.holds)
	require.NoError(t, err, "no hold ran")
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[2] != "tick" {
			continue
		}
		ns, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, ns)
		if byLock[f[0]] == nil {
			byLock[f[0]] = map[string]*interval{}
		}
		iv := byLock[f[0]][f[1]]
		if iv == nil {
			byLock[f[0]][f[1]] = &interval{id: f[1], start: at, end: at}
			continue
		}
		if at.Before(iv.start) {
			iv.start = at
		}
		if at.After(iv.end) {
			iv.end = at
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	holds, handovers := 0, 0
	for target, ivs := range byLock {
		list := make([]*interval, 0, len(ivs))
		for _, iv := range ivs {
			list = append(list, iv)
		}
		slices.SortFunc(list, func(a, b *interval) int { return a.start.Compare(b.start) })
		holds += len(list)
		for i := 1; i < len(list); i++ {
			prev, cur := list[i-1], list[i]
			assert.True(t, prev.end.Before(cur.start), "lock %q: %s ran until %s, after %s started at %s: two holders at once",
				target, prev.id, prev.end.Format(time.StampMicro), cur.id, cur.start.Format(time.StampMicro))
			pt, pok := s.tokens[prev.id]
			ct, cok := s.tokens[cur.id]
			if pok && cok {
				handovers++
				assert.Less(t, pt.token, ct.token, "lock %q: token of %s (%d) then %s (%d): tokens grow from one hold to the next",
					target, prev.id, pt.token, cur.id, ct.token)
			}
		}
	}
	assert.Greater(t, holds, 1, "holds ran")
	assert.LessOrEqual(t, s.maxLive, 1, "no job with two live pods")

	window := min(time.Minute, length/3)
	for a, samples := range s.samples {
		first, last := meanOver(samples, samples[0].at, window), meanOver(samples, samples[len(samples)-1].at.Add(-window), window)
		t.Logf("reconciler %s: goroutines %.0f (first %s) -> %.0f (last %s); resident memory %.1f -> %.1f MiB",
			a, first.goroutines, window, last.goroutines, window, first.rssBytes/(1<<20), last.rssBytes/(1<<20))
		// NOTE: flat, not equal: the last window may catch a pass under way.
		assert.LessOrEqual(t, last.goroutines, first.goroutines*1.5+20, "reconciler %s: goroutines flat", a)
		assert.LessOrEqual(t, last.rssBytes, first.rssBytes*1.5+32<<20, "reconciler %s: memory flat", a)
	}
	codes := make([]string, 0, len(s.codes))
	for k, v := range s.codes {
		codes = append(codes, fmt.Sprintf("%s: %d", k, v))
		// NOTE: 2 is a usage error, and what a Go panic exits with.
		assert.False(t, strings.HasSuffix(k, " exit 2"), "no process exits 2 (%s: %d)", k, v)
	}
	slices.Sort(codes)
	t.Logf("soak %s: %d holds of commands and pipelines (%d hand-overs with both tokens), %d jobs, %d pods, max live pods of one job %d; "+
		"%d API server restarts, %d partitions (%s in all); exits: %s",
		length, holds, handovers, s.jobs, len(s.pods), s.maxLive, s.restarts.Load(), s.freezes.Load(),
		time.Duration(s.frozenFor.Load()).Round(time.Second), strings.Join(codes, ", "))
}

// meanOver averages the samples taken in [from, from+d].
func meanOver(samples []metricSample, from time.Time, d time.Duration) metricSample {
	var sum metricSample
	n := 0
	for _, m := range samples {
		if m.at.Before(from) || m.at.After(from.Add(d)) {
			continue
		}
		sum.goroutines += m.goroutines
		sum.rssBytes += m.rssBytes
		n++
	}
	if n == 0 {
		return sum
	}
	return metricSample{goroutines: sum.goroutines / float64(n), rssBytes: sum.rssBytes / float64(n)}
}

// freeAddr returns a free loopback address.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := l.Addr().String()
	require.NoError(t, l.Close())
	return a
}
