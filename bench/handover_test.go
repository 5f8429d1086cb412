package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// leSettings is one configuration of client-go's leader election.
type leSettings struct {
	name                string
	lease, renew, retry time.Duration
	// release is ReleaseOnCancel: true makes a cancelled leader clear the
	// Lease; client-go's default, false, leaves it to expire.
	release bool
}

var (
	// leCommon is what most controllers use (controller-runtime's and
	// client-go's example defaults).
	leCommon = leSettings{name: "common", lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}
	// leFast is an aggressive setting, ten times faster.
	leFast = leSettings{name: "fast", lease: 2 * time.Second, renew: time.Second, retry: 200 * time.Millisecond}
)

// withRelease returns s with ReleaseOnCancel set as given, named for it.
func (s leSettings) withRelease(release bool) leSettings {
	s.release = release
	if release {
		s.name += "-release"
	} else {
		s.name += "-norelease"
	}
	return s
}

// leRun is one leader-election configuration with its sample size.
type leRun struct {
	s         leSettings
	n, chains int
}

// leRuns are the leader-election configurations measured, with how many
// hand-overs and Leases each gets: without ReleaseOnCancel a hand-over
// waits for the Lease to expire, so those runs spread fewer hand-overs over
// more Leases to bound the wall time.
func leRuns(n, chains int) []leRun {
	slow := envInt("LOCKCTL_BENCH_LE_NORELEASE_HANDOVERS", 50)
	return []leRun{
		{leFast.withRelease(true), n, chains},
		{leFast.withRelease(false), slow, min(slow, 5*chains)},
		{leCommon.withRelease(true), n, chains},
		{leCommon.withRelease(false), slow, min(slow, 5*chains)},
	}
}

// BenchmarkHandover measures how long a lock takes to change hands: from
// just before the holder releases (or its pod is told to finish) to the
// next waiter holding it, for lockctl and, in the same run, for client-go's
// tools/leaderelection on a Lease (holder cancels, with and without
// ReleaseOnCancel, until the next candidate's OnStartedLeading). Every
// contender and every elector has a clientset of its own, as separate
// processes do. The same run measures the physical floor: one client
// updates a ConfigMap, a second client's watch sees it; the hand-over is
// reported as a multiple of it.
//
// LOCKCTL_BENCH_HANDOVERS sets the number of hand-overs per mechanism
// (default 200; LOCKCTL_BENCH_LE_NORELEASE_HANDOVERS, default 50, for leader
// election without ReleaseOnCancel, which waits for the Lease to expire).
// Leader election hand-overs run on LOCKCTL_BENCH_LE_CHAINS independent
// Leases at once (default 10; five times as many without ReleaseOnCancel)
// to bound the wall time; their latency is set by the timers, not by load.
func BenchmarkHandover(b *testing.B) {
	env := testenv.Get(b)
	n := envInt("LOCKCTL_BENCH_HANDOVERS", 200)
	chains := envInt("LOCKCTL_BENCH_LE_CHAINS", 10)
	results := map[string]Sample{}
	var mu sync.Mutex
	record := func(name string, s Sample) {
		mu.Lock()
		defer mu.Unlock()
		results[name] = append(results[name], s...)
	}

	b.Run("floor", func(b *testing.B) {
		var all Sample
		for range b.N {
			all = append(all, watchFloor(b, env, n)...)
		}
		record("floor", all)
		report(b, "", all)
		b.ReportMetric(0, "ns/op")
		b.Logf("physical floor, one client's ConfigMap update -> a second client's watch sees it: %s", all)
	})
	b.Run("lockctl-release", func(b *testing.B) {
		var all, releases Sample
		for range b.N {
			h, r := lockReleaseHandovers(b, env, n)
			all, releases = append(all, h...), append(releases, r...)
		}
		record("lockctl-release", all)
		report(b, "", all)
		b.ReportMetric(MS(releases.Percentile(50)), "release-call-p50-ms")
		b.ReportMetric(float64(len(all)), "handovers")
		b.ReportMetric(0, "ns/op")
		b.Logf("lockctl, release -> next waiter holds: %s (Release call itself: %s)", all, releases)
	})
	b.Run("lockctl-releaseheld", func(b *testing.B) {
		var all, releases, seen, after Sample
		for range b.N {
			h, r, s, a := lockReleaseHeldHandovers(b, env, n)
			all, releases, seen, after = append(all, h...), append(releases, r...), append(seen, s...), append(after, a...)
		}
		record("lockctl-releaseheld", all)
		report(b, "", all)
		report(b, "watch-", seen)
		report(b, "waiter-", after)
		b.ReportMetric(MS(releases.Percentile(50)), "release-call-p50-ms")
		b.ReportMetric(float64(len(all)), "handovers")
		b.ReportMetric(0, "ns/op")
		b.Logf("lockctl, ReleaseHeld (as lockctl run releases) -> next waiter holds: %s (ReleaseHeld call itself: %s)", all, releases)
		b.Logf("  of which the hand-over write until a watch in this process sees it: %s", seen)
		b.Logf("  of which the waiter, from then until its Acquire returns: %s", after)
	})
	b.Run("lockctl-pod-finished", func(b *testing.B) {
		var all, kwok, after Sample
		for range b.N {
			h, k, a := lockPodHandovers(b, env, n)
			all, kwok, after = append(all, h...), append(kwok, k...), append(after, a...)
		}
		record("lockctl-pod-finished", all)
		record("lockctl-after-pod-phase", after)
		report(b, "", all)
		report(b, "kwok-", kwok)
		report(b, "after-phase-", after)
		b.ReportMetric(float64(len(all)), "handovers")
		b.ReportMetric(0, "ns/op")
		b.Logf("lockctl, pod told to finish -> next waiter holds: %s", all)
		b.Logf("  of which kwok, annotation -> pod Succeeded seen by a watch: %s", kwok)
		b.Logf("  of which lockctl, pod Succeeded seen -> next waiter holds: %s", after)
	})
	runs := leRuns(n, chains)
	for _, r := range runs {
		b.Run("leaderelection-"+r.s.name, func(b *testing.B) {
			var all Sample
			for range b.N {
				all = append(all, leaderElectionHandovers(b, env, r.s, r.n, r.chains)...)
			}
			record("leaderelection-"+r.s.name, all)
			report(b, "", all)
			b.ReportMetric(float64(len(all)), "handovers")
			b.ReportMetric(0, "ns/op")
			b.Logf("leaderelection %s (lease %s, renew %s, retry %s, ReleaseOnCancel %t, %d Leases), cancel -> next OnStartedLeading: %s",
				r.s.name, r.s.lease, r.s.renew, r.s.retry, r.s.release, r.chains, all)
		})
	}
	b.Run("summary", func(b *testing.B) {
		mu.Lock()
		defer mu.Unlock()
		b.Logf("hand-over latency on %s", serverVersion(env.Client))
		b.Logf("%-34s %6s %10s %10s %10s", "mechanism", "n", "p50", "p99", "max")
		names := []string{"floor", "lockctl-release", "lockctl-releaseheld", "lockctl-pod-finished", "lockctl-after-pod-phase"}
		for _, r := range runs {
			names = append(names, "leaderelection-"+r.s.name)
		}
		for _, name := range names {
			s, ok := results[name]
			if !ok {
				continue
			}
			b.Logf("%-34s %6d %10s %10s %10s", name, len(s), FormatMS(s.Percentile(50)), FormatMS(s.Percentile(99)), FormatMS(s.Max()))
		}
		lk, ok := results["lockctl-release"]
		if !ok || lk.Percentile(99) == 0 {
			b.Skip("run lockctl-release to compare")
		}
		if fl, ok := results["floor"]; ok && fl.Percentile(99) > 0 {
			p50 := float64(lk.Percentile(50)) / float64(fl.Percentile(50))
			p99 := float64(lk.Percentile(99)) / float64(fl.Percentile(99))
			b.ReportMetric(p50, "lockctl/floor-p50-ratio")
			b.ReportMetric(p99, "lockctl/floor-p99-ratio")
			b.Logf("lockctl-release / floor: %.1fx at p50, %.1fx at p99", p50, p99)
			if rh, ok := results["lockctl-releaseheld"]; ok && rh.Percentile(99) > 0 {
				p50 := float64(rh.Percentile(50)) / float64(fl.Percentile(50))
				p99 := float64(rh.Percentile(99)) / float64(fl.Percentile(99))
				b.ReportMetric(p50, "lockctl-held/floor-p50-ratio")
				b.ReportMetric(p99, "lockctl-held/floor-p99-ratio")
				b.Logf("lockctl-releaseheld / floor: %.1fx at p50, %.1fx at p99", p50, p99)
			}
		}
		for _, r := range runs {
			s, ok := results["leaderelection-"+r.s.name]
			if !ok {
				continue
			}
			p50 := float64(s.Percentile(50)) / float64(lk.Percentile(50))
			p99 := float64(s.Percentile(99)) / float64(lk.Percentile(99))
			b.ReportMetric(p50, "le-"+r.s.name+"/lockctl-p50-ratio")
			b.ReportMetric(p99, "le-"+r.s.name+"/lockctl-p99-ratio")
			b.Logf("leaderelection-%s / lockctl-release: %.1fx at p50, %.1fx at p99", r.s.name, p50, p99)
		}
		b.ReportMetric(0, "ns/op")
	})
}

// lockReleaseHandovers hands one lock n times between two contenders, each
// with its own client, and returns the hand-over latencies (just before
// Release until the waiter's Acquire returns) and the duration of the
// Release calls.
func lockReleaseHandovers(b *testing.B, env *testenv.Env, n int) (handovers, releases Sample) {
	ctx := within(b, 10*time.Minute)
	ns := env.Namespace(b)
	clients := []*lock.Client{newLockClient(b, env.RESTConfig, ns), newLockClient(b, env.RESTConfig, ns)}
	repos := []string{"web", "api"}
	const target = "staging"

	holder := clitest.Identity(repos[0], 1)
	_, err := clients[0].Acquire(ctx, lock.Request{Target: target, Identity: holder, Policy: record.PolicyFIFO})
	require.NoError(b, err)
	for i := range n {
		cur := clients[i%2]
		next := clitest.Identity(repos[(i+1)%2], i+2)
		done := clitest.AcquireQueued(ctx, b, clients[(i+1)%2], lock.Request{Target: target, Identity: next})
		start := time.Now()
		res, err := cur.Release(ctx, target, holder, lock.ReleaseOptions{})
		releases = append(releases, time.Since(start))
		require.NoError(b, err, "release %s", holder)
		require.NotNil(b, res.HandedTo, "handed to the waiter")
		r := <-done
		require.NoError(b, r.Err, "acquire %s", next)
		handovers = append(handovers, r.At.Sub(start))
		holder = next
	}
	_, err = clients[n%2].Release(ctx, target, holder, lock.ReleaseOptions{})
	require.NoError(b, err)
	return handovers, releases
}

// lockReleaseHeldHandovers hands one lock n times between two contenders,
// each with its own client, as lockctl run does: the holder releases the
// Held its Acquire returned (ReleaseHeld, which writes on the version its
// watch brought, without a read). A watch with a client of its own times
// when the hand-over write is seen. It returns the hand-over latencies
// (just before ReleaseHeld until the waiter's Acquire returns), the
// ReleaseHeld calls, the part until the watch sees the hand-over and the
// waiter's part after it.
func lockReleaseHeldHandovers(b *testing.B, env *testenv.Env, n int) (handovers, releases, seen, after Sample) {
	ctx := within(b, 10*time.Minute)
	ns := env.Namespace(b)
	clients := []*lock.Client{newLockClient(b, env.RESTConfig, ns), newLockClient(b, env.RESTConfig, ns)}
	repos := []string{"web", "api"}
	const target = "staging"

	h, err := clients[0].Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity(repos[0], 1), Policy: record.PolicyFIFO})
	require.NoError(b, err)
	handedAt := watchHandOvers(ctx, b, newClientset(b, env.RESTConfig), ns, record.Name(target))
	type timed struct {
		claim     string
		start, at time.Time
	}
	var all []timed
	for i := range n {
		next := clitest.Identity(repos[(i+1)%2], i+2)
		done := clitest.AcquireQueued(ctx, b, clients[(i+1)%2], lock.Request{Target: target, Identity: next})
		// NOTE: a run's waiters queue long before its holder releases:
		// the holder's watch has brought the queue by then.
		time.Sleep(20*time.Millisecond + rand.N(10*time.Millisecond))
		start := time.Now()
		_, err := clients[i%2].ReleaseHeld(ctx, h, lock.ReleaseOptions{})
		releases = append(releases, time.Since(start))
		require.NoError(b, err, "release %s", h.Holder.Identity)
		r := <-done
		require.NoError(b, r.Err, "acquire %s", next)
		handovers = append(handovers, r.At.Sub(start))
		all = append(all, timed{r.Held.ClaimID, start, r.At})
		h = r.Held
	}
	_, err = clients[n%2].ReleaseHeld(ctx, h, lock.ReleaseOptions{})
	require.NoError(b, err)
	// NOTE: the waiter may see a hand-over before this process's watch.
	time.Sleep(time.Second)
	for _, t := range all {
		if at, ok := handedAt.at(t.claim); ok {
			seen = append(seen, at.Sub(t.start))
			after = append(after, t.at.Sub(at))
		}
	}
	return handovers, releases, seen, after
}

// watchHandOvers records when a watch first sees each claim handed the
// lock name over (by its claim ID).
func watchHandOvers(ctx context.Context, b *testing.B, c kubernetes.Interface, ns, name string) *phaseTimes {
	b.Helper()
	w, err := c.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(b, err)
	pt := &phaseTimes{seen: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			at := time.Now()
			rec, err := record.Decode(cm)
			if err != nil || !rec.Holder.HandedOver {
				continue
			}
			pt.mu.Lock()
			if _, dup := pt.seen[rec.Holder.ClaimID]; !dup {
				pt.seen[rec.Holder.ClaimID] = at
			}
			pt.mu.Unlock()
		}
	}()
	return pt
}

// lockPodHandovers hands one lock n times from a holder living in a kwok pod
// to a waiter, by annotating the holder's pod to finish. It returns the
// hand-over latencies (just before the annotation until the waiter holds),
// kwok's share (until a watch in this process sees the pod Succeeded) and
// lockctl's share (from then until the waiter holds).
func lockPodHandovers(b *testing.B, env *testenv.Env, n int) (handovers, kwok, after Sample) {
	ctx := within(b, 15*time.Minute)
	ns := env.Namespace(b)
	pods := runningPods(ctx, b, env.Client, ns, n+1)
	succeeded := watchSucceeded(ctx, b, env.Client, ns)
	clients := []*lock.Client{newLockClient(b, env.RESTConfig, ns), newLockClient(b, env.RESTConfig, ns)}
	repos := []string{"web", "api"}
	const target = "staging"
	podRef := func(i int) *record.PodRef { return &record.PodRef{Namespace: ns, Name: pods[i].Name, UID: pods[i].UID} }

	_, err := clients[0].Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity(repos[0], 1), Pod: podRef(0), Policy: record.PolicyFIFO})
	require.NoError(b, err)
	for i := range n {
		next := clitest.Identity(repos[(i+1)%2], i+2)
		done := clitest.AcquireQueued(ctx, b, clients[(i+1)%2], lock.Request{Target: target, Identity: next, Pod: podRef(i + 1)})
		start := time.Now()
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"0"}}}`, testenv.AnnotationExitCode)
		_, err := env.Client.CoreV1().Pods(ns).Patch(ctx, pods[i].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		require.NoError(b, err, "finish pod %s", pods[i].Name)
		r := <-done
		require.NoError(b, r.Err, "acquire %s", next)
		handovers = append(handovers, r.At.Sub(start))
		if at, ok := succeeded.at(pods[i].Name); ok {
			kwok = append(kwok, at.Sub(start))
			after = append(after, r.At.Sub(at))
		}
	}
	return handovers, kwok, after
}

// runningPods creates n pods on the fake node and waits until all run.
func runningPods(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, n int) []*corev1.Pod {
	b.Helper()
	pods := make([]*corev1.Pod, n)
	for i := range n {
		p, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("holder-%04d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(b, err)
		pods[i] = p
	}
	for {
		list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(b, err)
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		if running == n {
			return pods
		}
		select {
		case <-ctx.Done():
			b.Fatalf("%d of %d pods running: %v", running, n, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// phaseTimes records when a watch first saw each pod Succeeded.
type phaseTimes struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (p *phaseTimes) at(name string) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.seen[name]
	return t, ok
}

func watchSucceeded(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string) *phaseTimes {
	b.Helper()
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(b, err)
	pt := &phaseTimes{seen: map[string]time.Time{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || pod.Status.Phase != corev1.PodSucceeded {
				continue
			}
			pt.mu.Lock()
			if _, dup := pt.seen[pod.Name]; !dup {
				pt.seen[pod.Name] = time.Now()
			}
			pt.mu.Unlock()
		}
	}()
	return pt
}

// leaderElectionHandovers runs n leader-election hand-overs with settings s,
// spread over `chains` Leases at once, and returns their latencies.
func leaderElectionHandovers(b *testing.B, env *testenv.Env, s leSettings, n, chains int) Sample {
	ctx := within(b, 30*time.Minute)
	ns := env.Namespace(b)
	chains = min(chains, n)
	var (
		mu  sync.Mutex
		all Sample
		wg  sync.WaitGroup
	)
	errs := make(chan error, chains)
	for k := range chains {
		count := n / chains
		if k < n%chains {
			count++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := leaderChain(ctx, env.RESTConfig, ns, fmt.Sprintf("bench-%s-%d", s.name, k), s, count)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			all = append(all, got...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return all
}

// candidate is one LeaderElector run.
type candidate struct {
	cancel context.CancelFunc
	tried  chan struct{}  // closed after its first read of the Lease
	led    chan time.Time // receives when OnStartedLeading runs
	done   chan struct{}  // closed when Run returned
}

var _ resourcelock.Interface = (*triedLock)(nil)

// triedLock signals its first Get, which is the candidate's first attempt.
type triedLock struct {
	resourcelock.Interface
	once  sync.Once
	tried chan struct{}
}

func (l *triedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	l.once.Do(func() { close(l.tried) })
	return rec, raw, err
}

// startCandidate runs a LeaderElector with a clientset of its own (its own
// rate limiter, as a separate process has) built from cfg.
func startCandidate(ctx context.Context, cfg *rest.Config, ns, lease, id string, s leSettings) (*candidate, error) {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &candidate{cancel: cancel, tried: make(chan struct{}), led: make(chan time.Time, 1), done: make(chan struct{})}
	rl := &triedLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: lease},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		tried: c.tried,
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            rl,
		LeaseDuration:   s.lease,
		RenewDeadline:   s.renew,
		RetryPeriod:     s.retry,
		ReleaseOnCancel: s.release,
		Name:            lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { c.led <- time.Now() },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	return c, nil
}

// leaderChain hands one Lease n times between successive candidates. Each
// hand-over starts a new candidate, lets it try once and then wait a random
// part of its longest retry interval (so the release falls at a random point
// of its retry cycle, as for a candidate that has waited a long time), then
// cancels the leader and times until the candidate leads.
func leaderChain(ctx context.Context, cfg *rest.Config, ns, lease string, s leSettings, n int) (Sample, error) {
	wait := func(what string, ch <-chan struct{}) error {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("lease %s: %s: %w", lease, what, context.Cause(ctx))
		}
	}
	cur, err := startCandidate(ctx, cfg, ns, lease, lease+"-0", s)
	if err != nil {
		return nil, err
	}
	defer func() { cur.cancel(); <-cur.done }()
	select {
	case <-cur.led:
	case <-ctx.Done():
		return nil, fmt.Errorf("lease %s: first leader: %w", lease, context.Cause(ctx))
	}
	maxRetry := time.Duration(float64(s.retry) * (1 + leaderelection.JitterFactor))
	var out Sample
	for i := range n {
		next, err := startCandidate(ctx, cfg, ns, lease, fmt.Sprintf("%s-%d", lease, i+1), s)
		if err != nil {
			return nil, err
		}
		if err := wait("candidate's first try", next.tried); err != nil {
			next.cancel()
			return nil, err
		}
		time.Sleep(rand.N(maxRetry))
		start := time.Now()
		cur.cancel()
		select {
		case at := <-next.led:
			out = append(out, at.Sub(start))
		case <-next.done:
			return nil, errors.New("candidate stopped without leading")
		case <-ctx.Done():
			next.cancel()
			return nil, fmt.Errorf("lease %s: hand-over %d: %w", lease, i, context.Cause(ctx))
		}
		if err := wait("old leader to stop", cur.done); err != nil {
			return nil, err
		}
		cur = next
	}
	return out, nil
}

// watchFloor measures the physical floor of any hand-over n times: one
// client updates a ConfigMap, a second client (own clientset) watching it
// sees the change. It returns the time from just before the update until
// the watch delivers it.
func watchFloor(b *testing.B, env *testenv.Env, n int) Sample {
	ctx := within(b, 10*time.Minute)
	ns := env.Namespace(b)
	writer, watcher := newClientset(b, env.RESTConfig), newClientset(b, env.RESTConfig)
	cm, err := writer.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "floor"},
		Data:       map[string]string{"n": "0"},
	}, metav1.CreateOptions{})
	require.NoError(b, err)
	w, err := watcher.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		FieldSelector: "metadata.name=floor", ResourceVersion: cm.ResourceVersion,
	})
	require.NoError(b, err)
	defer w.Stop()
	var out Sample
	for i := range n {
		next := cm.DeepCopy()
		next.Data["n"] = fmt.Sprint(i + 1)
		start := time.Now()
		cm, err = writer.CoreV1().ConfigMaps(ns).Update(ctx, next, metav1.UpdateOptions{})
		require.NoError(b, err)
		for seen := false; !seen; {
			select {
			case ev, ok := <-w.ResultChan():
				require.True(b, ok, "watch closed")
				if got, ok := ev.Object.(*corev1.ConfigMap); ok && got.ResourceVersion == cm.ResourceVersion {
					out = append(out, time.Since(start))
					seen = true
				}
			case <-ctx.Done():
				b.Fatalf("floor: %v", context.Cause(ctx))
			}
		}
		time.Sleep(rand.N(10 * time.Millisecond)) // not in lock-step with anything periodic
	}
	return out
}
