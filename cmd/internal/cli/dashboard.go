package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/metrics"
	"github.com/lockctl/lockctl/scheduler"
)

// ServeDashboard serves lockctl dashboard's page on addr (--address)
// until ctx ends: the locks of l's lock namespace (of every namespace with
// all) and the job records of the job namespace, their pods' logs read in
// their build clusters (cf). It warns on f's ErrOut when addr is not
// loopback, prints the page's URL on its Out and tells listening (tests),
// when set.
func ServeDashboard(ctx context.Context, f *Factory, l *LockFlags, cf *ClusterFlags, all bool, addr string, listening func(url string)) error {
	if len(l.Contexts) > 0 {
		return serveDashboardAcross(ctx, f, l, all, addr, listening)
	}
	locks, err := NewLockClient(f, l, LockClientOptions{AllNamespaces: all})
	if err != nil {
		return err
	}
	cs, err := f.Clientset()
	if err != nil {
		return err
	}
	store, err := f.JobStore()
	if err != nil {
		return err
	}
	podsFor, err := cf.PodsFor(f, store.Namespace())
	if err != nil {
		return err
	}
	// NOTE: the page's server serves the locks' metrics at /metrics too.
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewGoCollector(), metrics.NewProcessCollector())
	exporter, err := NewLockExporter(f, reg)
	if err != nil {
		return err
	}
	hub := dashboard.NewHub(locks, kube.CoreV1(cs), dashboard.Options{Jobs: store, PodsFor: podsFor, Log: f.Logger(), Metrics: reg.Handler()})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("serve the dashboard: %w", err)
	}
	stopWatch, err := ObserveLocks(ctx, f, locks.Namespace(), exporter)
	if err != nil {
		return err
	}
	defer stopWatch()
	if warning := ExposedWarning(ln.Addr()); warning != "" {
		fmt.Fprintln(f.IOStreams.ErrOut, warning)
	}
	host, _, _ := net.SplitHostPort(addr)
	return serveDashboard(ctx, hub, ln, f.IOStreams, listening, host)
}

// LoopDashboard is the dashboard of lockctl reconcile
// (--dashboard-address): the locks of the lock namespace and the job
// records of JobNamespace, whose pods run in Clusters (alias → clientset)
// in PodNamespace (JobNamespace when empty).
type LoopDashboard struct {
	Address      string
	Jobs         kube.Interface
	JobNamespace string
	Clusters     map[string]scheduler.Clientset
	PodNamespace string
	// Listening, when set, is told the page's URL (tests).
	Listening func(url string)
}

// StartLoopDashboard serves d in the background, its URL printed on f's
// ErrOut (stdout is the loop's), until stop.
func StartLoopDashboard(ctx context.Context, f *Factory, l *LockFlags, d LoopDashboard) (stop func(), err error) {
	// NOTE: a lock client of its own: the hub sets its freeze windows.
	locks, err := NewLockClient(f, l, LockClientOptions{})
	if err != nil {
		return nil, err
	}
	store := job.NewStore(kube.CoreV1(d.Jobs), d.JobNamespace, job.StoreOptions{Clock: f.Clock})
	podNS := cmp.Or(d.PodNamespace, d.JobNamespace)
	hub := dashboard.NewHub(locks, kube.CoreV1(d.Jobs), dashboard.Options{
		Jobs: store, Log: f.Logger(),
		PodsFor: func(j *job.Job) (kube.PodsGetter, string, error) {
			cs, ok := d.Clusters[j.ClusterAlias()]
			if !ok {
				return nil, "", fmt.Errorf("job %q runs in build cluster %q, which this reconciler does not know", j.Name, j.ClusterAlias())
			}
			return cs.CoreV1(), podNS, nil
		},
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", d.Address)
	if err != nil {
		return nil, fmt.Errorf("serve the dashboard: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serveDashboard(ctx, hub, ln, IOStreams{Out: f.IOStreams.ErrOut, ErrOut: io.Discard}, d.Listening, "")
	}()
	return func() { cancel(); <-done }, nil
}

// serveDashboard runs hub and serves its page on ln until ctx ends,
// printing the URL on streams.Out (and telling listening, when set). host
// is the name the address was given as, which requests may name.
func serveDashboard(ctx context.Context, hub *dashboard.Hub, ln net.Listener, streams IOStreams, listening func(string), host string) error {
	return serveHubs(ctx, []*dashboard.Hub{hub}, hub.Handler, ln, streams, listening, host)
}

// serveDashboardAcross serves the dashboard of the clusters of --contexts
// (lockctl dashboard --contexts): each context's locks on a page of its
// own, under /c/N (N its place in --contexts), and at / a page that lists
// them. Job records, which live in one cluster, are not shown.
func serveDashboardAcross(ctx context.Context, f *Factory, l *LockFlags, all bool, addr string, listening func(url string)) error {
	sites, err := NewSites(f, l, LockClientOptions{AllNamespaces: all})
	if err != nil {
		return err
	}
	var (
		clusters []dashboard.Cluster
		hubs     []*dashboard.Hub
	)
	for i, locks := range sites.Locks {
		cs, _, err := f.ContextClient(locks.Context())
		if err != nil {
			return fmt.Errorf("context %q: %w", locks.Context(), err)
		}
		hub := dashboard.NewHub(locks, kube.CoreV1(cs), dashboard.Options{Base: fmt.Sprintf("/c/%d", i+1), Context: locks.Context(), Log: f.Logger()})
		clusters = append(clusters, dashboard.Cluster{Context: locks.Context(), Hub: hub})
		hubs = append(hubs, hub)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("serve the dashboard: %w", err)
	}
	if warning := ExposedWarning(ln.Addr()); warning != "" {
		fmt.Fprintln(f.IOStreams.ErrOut, warning)
	}
	host, _, _ := net.SplitHostPort(addr)
	handler := func(hosts ...string) http.Handler { return dashboard.Across(clusters, hosts...) }
	return serveHubs(ctx, hubs, handler, ln, f.IOStreams, listening, host)
}

// serveHubs runs hubs and serves handler on ln until ctx ends, printing
// the page's URL.
func serveHubs(ctx context.Context, hubs []*dashboard.Hub, handler func(hosts ...string) http.Handler, ln net.Listener, streams IOStreams, listening func(string), host string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, hub := range hubs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = hub.Run(ctx)
		}()
	}
	url := DashboardURL(ln.Addr())
	fmt.Fprintln(streams.Out, url)
	fmt.Fprintln(streams.ErrOut, "serving the dashboard until interrupted (Ctrl-C)")
	if listening != nil {
		listening(url)
	}
	var hosts []string
	if host != "" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	return dashboard.Serve(ctx, ln, handler(hosts...))
}

// ExposedWarning is the warning of a dashboard listening on addr other
// than loopback: what it shows, and to whom; "" on loopback.
func ExposedWarning(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if ok && tcp.IP.IsLoopback() {
		return ""
	}
	where := fmt.Sprintf("on %s", addr)
	if ok && tcp.IP.IsUnspecified() {
		// NOTE: Go listens on both IPv4 and IPv6 for 0.0.0.0 as for ::.
		where = fmt.Sprintf("on every interface of this machine, port %d,", tcp.Port)
	}
	return fmt.Sprintf("warning: serving the dashboard %s with no authentication (--allow-remote): anyone who reaches it "+
		"reads the locks, the jobs and the job pods' logs that this user's credentials may read", where)
}

// DashboardURL is the URL of the page served on addr, with the port it
// really listens on; an unspecified address (every interface: 0.0.0.0,
// ::) is shown as 127.0.0.1, its URL on this machine.
func DashboardURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String() + "/"
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)) + "/"
}

// isLoopbackAddress reports whether addr, the value of a dashboard's
// address flag, is a host:port on loopback only: a loopback IP or
// localhost. Every interface (":8080", "0.0.0.0:8080", "[::]:8080"),
// another IP and any other host name (which may resolve anywhere) are
// not. An addr that is not host:port is a usage error naming flag.
func isLoopbackAddress(flag, addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, cmdutil.FlagErrorf("invalid %s %q: give a loopback host:port, such as 127.0.0.1:8080", flag, addr)
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// ValidateDashboardAddress checks lockctl dashboard's --address: a
// loopback host:port, or any with allowRemote (--allow-remote).
func ValidateDashboardAddress(addr string, allowRemote bool) error {
	loopback, err := isLoopbackAddress("--address", addr)
	if err != nil {
		return err
	}
	if !loopback && !allowRemote {
		return cmdutil.FlagErrorf("--address %q is not a loopback address: the page shows the locks, the jobs and the job pods' logs "+
			"this user may read, with no authentication, to anyone who reaches it; use 127.0.0.1:PORT, or add --allow-remote to serve it there", addr)
	}
	return nil
}

// ValidateLoopDashboardAddress checks lockctl reconcile's
// --dashboard-address: empty (no dashboard) or a loopback host:port. In
// the cluster the page shows what the reconciler's ServiceAccount may
// read; on loopback only those allowed pods/portforward on its pod reach
// it.
func ValidateLoopDashboardAddress(addr string) error {
	if addr == "" {
		return nil
	}
	loopback, err := isLoopbackAddress("--dashboard-address", addr)
	if err != nil {
		return err
	}
	if !loopback {
		return cmdutil.FlagErrorf("--dashboard-address %q is not a loopback address: the page shows what this ServiceAccount may read, "+
			"so it listens on 127.0.0.1 only; use 127.0.0.1:8081 and reach it with kubectl port-forward", addr)
	}
	return nil
}
