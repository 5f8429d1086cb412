// Command leasepeer runs a command under a coordination.k8s.io Lease with
// client-go's tools/leaderelection, as klock (berquerant/k8s-lease) does: one
// process per contender, the Lease taken before the command starts and given
// up (ReleaseOnCancel) when it ends, the process exiting with the command's
// status. It is the peer lockctl is measured against in the benchmarks of
// processes (BenchmarkRunUncontended, BenchmarkRunContention); klock itself
// cannot be built from the module proxy.
//
// Like klock it reads the kubeconfig with clientcmd and builds client-go's
// full clientset, so its process start and memory are what a user of
// leaderelection pays. Timings are klock's defaults (lease 15 s, renew
// deadline 10 s, retry 2 s) or, with -fast, the bench's fast setting (2 s,
// 1 s, 200 ms).
//
//	leasepeer -n NAMESPACE -l LEASE [-i ID] [-fast] -- COMMAND [ARGS...]
//
// Exit status: the command's; 1 when the Lease could not be used or the
// command not started; 2 for bad arguments.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// timings are leader election's three durations.
type timings struct {
	lease, renew, retry time.Duration
}

var (
	// klockTimings are klock's defaults, client-go's usual ones.
	klockTimings = timings{lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second}
	// fastTimings are ten times faster, the bench's "fast" setting.
	fastTimings = timings{lease: 2 * time.Second, renew: time.Second, retry: 200 * time.Millisecond}
)

// options are leasepeer's arguments.
type options struct {
	kubeconfig, namespace, lease, identity string
	timings                                timings
	command                                []string
}

// parse reads args: flags, then "--" and the command.
func parse(args []string, errOut io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("leasepeer", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means $KUBECONFIG, else ~/.kube/config")
	fs.StringVar(&o.namespace, "n", "default", "namespace of the Lease")
	fs.StringVar(&o.lease, "l", "leasepeer", "name of the Lease")
	fs.StringVar(&o.identity, "i", "", "holder identity; empty means a random one")
	fast := fs.Bool("fast", false, "lease 2s, renew deadline 1s, retry 200ms instead of 15s, 10s, 2s")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	o.command = fs.Args()
	if len(o.command) == 0 {
		return nil, errors.New("no command given: leasepeer [flags] -- COMMAND [ARGS...]")
	}
	o.timings = klockTimings
	if *fast {
		o.timings = fastTimings
	}
	if o.identity == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		o.identity = hex.EncodeToString(b[:])
	}
	return o, nil
}

// run runs the command under the Lease and returns the exit status.
func run(args []string, out, errOut io.Writer) int {
	o, err := parse(args, errOut)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			_, _ = fmt.Fprintln(errOut, "error:", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := runUnderLease(ctx, o, out, errOut)
	if err != nil {
		_, _ = fmt.Fprintln(errOut, "error:", err)
	}
	return code
}

// runUnderLease takes the Lease, runs the command while it holds it, gives
// the Lease up and returns the command's exit status.
func runUnderLease(ctx context.Context, o *options, out, errOut io.Writer) (int, error) {
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	loading.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return 1, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 1, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	started, finished := make(chan struct{}), make(chan struct{})
	code, runErr := 1, error(nil)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.namespace, Name: o.lease},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: o.identity},
		},
		LeaseDuration:   o.timings.lease,
		RenewDeadline:   o.timings.renew,
		RetryPeriod:     o.timings.retry,
		ReleaseOnCancel: true,
		Name:            o.lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				close(started)
				defer close(finished)
				defer cancel() // the command's end gives the Lease up
				code, runErr = runCommand(ctx, o.command, out, errOut)
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return 1, err
	}
	// Run returns once the command has ended and the Lease is released, or
	// when ctx ends first (a signal) without the Lease.
	le.Run(ctx)
	select {
	case <-started:
		<-finished
		return code, runErr
	default:
		return 1, fmt.Errorf("lease %s/%s not acquired: %w", o.namespace, o.lease, context.Cause(ctx))
	}
}

// runCommand runs command to its end, or until ctx ends (the Lease lost, a
// signal), and returns its exit status.
func runCommand(ctx context.Context, command []string, out, errOut io.Writer) (int, error) {
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, out, errOut
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), nil
	case err != nil:
		return 1, err
	}
	return 0, nil
}
