package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
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

			# The locks of several clusters, a page each
			lockctl dashboard --contexts prod-us,prod-eu,prod-ap
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
	o.AddContextsFlag(fs)
	return c
}

func (o *dashboardOptions) validate() error {
	if err := cli.ValidateDashboardAddress(o.Address, o.AllowRemote); err != nil {
		return err
	}
	return o.ValidateClusters()
}

func runDashboard(ctx context.Context, o *dashboardOptions) error {
	cli.ServeRuntime(o.f.Getenv)
	return cli.ServeDashboard(ctx, o.f, &o.LockFlags, &o.ClusterFlags, o.AllNamespaces, o.Address, o.listening)
}
