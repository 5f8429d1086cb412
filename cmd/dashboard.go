package cmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/base/kubeclient"
	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
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
			what they may read, to whoever can open the page: it listens on
			127.0.0.1 and a free port unless --address says otherwise, and
			prints the URL on stdout. It changes nothing in the cluster.

			Stop it with Ctrl-C. docs/dashboard.md shows the page and says who
			can see what; lockctl reconcile --dashboard-address serves the same
			page in the cluster.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Open the page of the current namespace's locks and jobs
			lockctl dashboard

			# Every lock namespace, on a fixed port
			lockctl dashboard -A --address 127.0.0.1:8080

			# Jobs whose pods run in another cluster
			lockctl dashboard -n ci --build-cluster gpu=gpu-context
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runDashboard, nil),
	}
	fs := c.Flags()
	o.AddLockNamespaceFlag(fs)
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "show the locks of every lock namespace (--lock-namespace is then ignored)")
	fs.StringVar(&o.Address, "address", o.Address, "host:port to listen on; port 0 picks a free one")
	o.AddClusterFlags(fs)
	return c
}

func (o *dashboardOptions) validate() error {
	if _, _, err := net.SplitHostPort(o.Address); err != nil {
		return cmdutil.FlagErrorf("invalid --address %q: give host:port, such as 127.0.0.1:8080", o.Address)
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
	hub := dashboard.NewHub(locks, kubeclient.CoreV1(cs), dashboard.Options{
		Jobs: store, PodsFor: podsFor, Log: o.f.Log,
	})
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Address)
	if err != nil {
		return fmt.Errorf("serve the dashboard: %w", err)
	}
	host, _, _ := net.SplitHostPort(o.Address)
	return serveDashboard(ctx, hub, ln, o.f.IOStreams, o.listening, host)
}

// podsFor returns how the page reads a job's pod logs: in its build
// cluster, as lockctl logs does.
func (o *dashboardOptions) podsFor(jobNS string) (func(*job.Job) (kubeclient.PodsGetter, string, error), error) {
	cfg, err := o.LoadConfig()
	if err != nil {
		return nil, err
	}
	contexts, err := o.ClusterContexts(cfg)
	if err != nil {
		return nil, err
	}
	podNS := cmp.Or(o.PodNamespace, cfg.PodNamespace, jobNS)
	return func(j *job.Job) (kubeclient.PodsGetter, string, error) {
		name, err := cli.JobContext(contexts, j)
		if err != nil {
			return nil, "", err
		}
		cs, err := o.f.ClientsetFor(name)
		if err != nil {
			return nil, "", err
		}
		return kubeclient.CoreV1(cs), podNS, nil
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

// dashboardURL is the URL of the page served on addr; an unspecified
// address (0.0.0.0, ::) is shown as 127.0.0.1.
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

// validateDashboardAddress checks lockctl reconcile's --dashboard-address:
// empty (no dashboard) or a loopback host:port. In the cluster the page
// shows what the reconciler's ServiceAccount may read; on loopback only
// those allowed pods/portforward on its pod reach it.
func validateDashboardAddress(addr string) error {
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return cmdutil.FlagErrorf("invalid --dashboard-address %q: give a loopback host:port, such as 127.0.0.1:8081", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return cmdutil.FlagErrorf("--dashboard-address %q is not a loopback address: the page shows what this ServiceAccount may read, "+
			"so it listens on 127.0.0.1 only; use 127.0.0.1:8081 and reach it with kubectl port-forward", addr)
	}
	return nil
}

// startDashboard serves the dashboard of lockctl reconcile in the
// background, on --dashboard-address: the locks of the lock namespace and
// the job records of jobNS, whose pods run in clusters (alias →
// clientset) in podNS (jobNS when empty). stop ends it.
func (o *reconcileOptions) startDashboard(ctx context.Context, jobs kubeclient.Interface, jobNS string, clusters map[string]scheduler.Clientset, podNS string) (stop func(), err error) {
	// NOTE: a lock client of its own: the hub sets its freeze windows.
	locks, err := cli.NewLockClient(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return nil, err
	}
	store := job.NewStore(kubeclient.CoreV1(jobs), jobNS, job.StoreOptions{Clock: o.f.Clock})
	podNS = cmp.Or(podNS, jobNS)
	hub := dashboard.NewHub(locks, kubeclient.CoreV1(jobs), dashboard.Options{
		Jobs: store, Log: o.f.Log,
		PodsFor: func(j *job.Job) (kubeclient.PodsGetter, string, error) {
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
