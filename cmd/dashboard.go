package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/scheduler"
)

// DefaultDashboardAddress is where lockctl dashboard listens: loopback, on
// a free port.
const DefaultDashboardAddress = "127.0.0.1:0"

// dashboardOptions configure `lockctl dashboard`.
type dashboardOptions struct {
	f *Factory

	cli.LockFlags
	cli.ClusterFlags
	AllNamespaces bool
	Address       string
	// AllowRemote serves the page on an address other than loopback.
	AllowRemote bool

	// listening, when set, is told the page's URL once it is served (tests).
	listening func(url string)
}

func newDashboardCmd(f *Factory, runF func(*dashboardOptions) error) *cobra.Command {
	o := &dashboardOptions{f: f, Address: DefaultDashboardAddress}
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Serve a read-only live web page of locks, queues, freezes and jobs",
		Long: cli.Doc(`
			Serve a web page of the deploy locks of the lock namespace (with
			-A, of every namespace this user may list): holder, fencing token,
			since when, liveness, the queue in order with priorities and how
			long each has waited, freezes and upcoming freeze windows, and
			each lock's last holds. Below them, the job records of the job
			namespace (-n) with their state, pod and build ID; each job's pod
			logs stream on a page of their own, as lockctl logs -f streams
			them.

			The page updates itself: this process watches the locks and the
			job records once, however many browsers look, and pushes every
			change to them. It reads with this user's credentials and shows
			what they may read, to whoever can open the page, with no
			authentication: it listens on 127.0.0.1 and a free port unless
			--address says otherwise, and prints the URL on stdout (for
			every interface, the URL on this machine, and a warning on
			stderr). --address takes a loopback address only (127.0.0.1,
			::1, localhost); another address, every interface (:8080,
			0.0.0.0:8080, [::]:8080) or a host name is refused unless
			--allow-remote says to serve there, and then a warning says
			what the page exposes. It changes nothing in the cluster.

			Stop it with Ctrl-C. docs/dashboard.md shows the page and says who
			can see what; lockctl reconcile --dashboard-address serves the same
			page in the cluster.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Open the page of the current namespace's locks and jobs
			lockctl dashboard

			# Every lock namespace, on a fixed port
			lockctl dashboard -A --address 127.0.0.1:8080

			# Show the page to the whole network (no authentication: anyone
			# who reaches port 8080 reads what this user may read)
			lockctl dashboard --address 0.0.0.0:8080 --allow-remote

			# Jobs whose pods run in another cluster
			lockctl dashboard -n ci --build-cluster gpu=gpu-context
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runDashboard, nil),
	}
	fs := c.Flags()
	o.AddLockNamespaceFlag(fs)
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "show the locks of every lock namespace (--lock-namespace is then ignored)")
	fs.StringVar(&o.Address, "address", o.Address, "loopback host:port to listen on; port 0 picks a free one")
	fs.BoolVar(&o.AllowRemote, "allow-remote", o.AllowRemote, "allow an --address other than loopback: anyone who reaches it reads the page, with no authentication")
	o.AddClusterFlags(fs)
	return c
}

func (o *dashboardOptions) validate() error {
	loopback, err := isLoopbackAddress("--address", o.Address)
	if err != nil {
		return err
	}
	if !loopback && !o.AllowRemote {
		return cmdutil.FlagErrorf("--address %q is not a loopback address: the page shows the locks, the jobs and the job pods' logs "+
			"this user may read, with no authentication, to anyone who reaches it; use 127.0.0.1:PORT, or add --allow-remote to serve it there", o.Address)
	}
	return o.ValidateClusters()
}

func runDashboard(ctx context.Context, o *dashboardOptions) error {
	cli.ServeRuntime(o.f.Getenv)
	locks, err := cli.NewLockClient(o.f, &o.LockFlags, cli.LockClientOptions{AllNamespaces: o.AllNamespaces})
	if err != nil {
		return err
	}
	cs, err := o.f.Clientset()
	if err != nil {
		return err
	}
	store, err := o.f.JobStore()
	if err != nil {
		return err
	}
	podsFor, err := o.podsFor(store.Namespace())
	if err != nil {
		return err
	}
	hub := dashboard.NewHub(locks, kube.CoreV1(cs), dashboard.Options{
		Jobs: store, PodsFor: podsFor, Log: o.f.Log,
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Address)
	if err != nil {
		return fmt.Errorf("serve the dashboard: %w", err)
	}
	if warning := exposedWarning(ln.Addr()); warning != "" {
		fmt.Fprintln(o.f.IOStreams.ErrOut, warning)
	}
	host, _, _ := net.SplitHostPort(o.Address)
	return serveDashboard(ctx, hub, ln, o.f.IOStreams, o.listening, host)
}

// podsFor returns how the page reads a job's pod logs: in its build
// cluster, as lockctl logs does.
func (o *dashboardOptions) podsFor(jobNS string) (func(*job.Job) (kube.PodsGetter, string, error), error) {
	cfg, err := o.LoadConfig()
	if err != nil {
		return nil, err
	}
	contexts, err := o.ClusterContexts(cfg)
	if err != nil {
		return nil, err
	}
	podNS := cmp.Or(o.PodNamespace, cfg.PodNamespace, jobNS)
	return func(j *job.Job) (kube.PodsGetter, string, error) {
		name, err := cli.JobContext(contexts, j)
		if err != nil {
			return nil, "", err
		}
		cs, err := o.f.ClientsetFor(name)
		if err != nil {
			return nil, "", err
		}
		return kube.CoreV1(cs), podNS, nil
	}, nil
}

// serveDashboard runs hub and serves its page on ln until ctx ends,
// printing the URL on streams.Out (and telling listening, when set). host
// is the name the address was given as, which requests may name.
func serveDashboard(ctx context.Context, hub *dashboard.Hub, ln net.Listener, streams IOStreams, listening func(string), host string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = hub.Run(ctx)
	}()
	url := dashboardURL(ln.Addr())
	fmt.Fprintln(streams.Out, url)
	fmt.Fprintln(streams.ErrOut, "serving the dashboard until interrupted (Ctrl-C)")
	if listening != nil {
		listening(url)
	}
	var hosts []string
	if host != "" && net.ParseIP(host) == nil {
		hosts = append(hosts, host)
	}
	return dashboard.Serve(ctx, ln, hub.Handler(hosts...))
}

// exposedWarning is the warning of a dashboard listening on addr other
// than loopback: what it shows, and to whom; "" on loopback.
func exposedWarning(addr net.Addr) string {
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

// dashboardURL is the URL of the page served on addr, with the port it
// really listens on; an unspecified address (every interface: 0.0.0.0,
// ::) is shown as 127.0.0.1, its URL on this machine.
func dashboardURL(addr net.Addr) string {
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

// validateDashboardAddress checks lockctl reconcile's --dashboard-address:
// empty (no dashboard) or a loopback host:port. In the cluster the page
// shows what the reconciler's ServiceAccount may read; on loopback only
// those allowed pods/portforward on its pod reach it.
func validateDashboardAddress(addr string) error {
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

// startDashboard serves the dashboard of lockctl reconcile in the
// background, on --dashboard-address: the locks of the lock namespace and
// the job records of jobNS, whose pods run in clusters (alias →
// clientset) in podNS (jobNS when empty). stop ends it.
func (o *reconcileOptions) startDashboard(ctx context.Context, jobs kube.Interface, jobNS string, clusters map[string]scheduler.Clientset, podNS string) (stop func(), err error) {
	// NOTE: a lock client of its own: the hub sets its freeze windows.
	locks, err := cli.NewLockClient(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return nil, err
	}
	store := job.NewStore(kube.CoreV1(jobs), jobNS, job.StoreOptions{Clock: o.f.Clock})
	podNS = cmp.Or(podNS, jobNS)
	hub := dashboard.NewHub(locks, kube.CoreV1(jobs), dashboard.Options{
		Jobs: store, Log: o.f.Log,
		PodsFor: func(j *job.Job) (kube.PodsGetter, string, error) {
			cs, ok := clusters[j.ClusterAlias()]
			if !ok {
				return nil, "", fmt.Errorf("job %q runs in build cluster %q, which this reconciler does not know", j.Name, j.ClusterAlias())
			}
			return cs.CoreV1(), podNS, nil
		},
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.DashboardAddress)
	if err != nil {
		return nil, fmt.Errorf("serve the dashboard: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = serveDashboard(ctx, hub, ln, IOStreams{Out: o.f.IOStreams.ErrOut, ErrOut: io.Discard}, o.dashboardListening, "")
	}()
	return func() { cancel(); <-done }, nil
}
