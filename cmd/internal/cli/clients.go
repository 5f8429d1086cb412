package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/metrics"
	"github.com/lockctl/lockctl/scheduler"
)

// LockClientOptions say which locks a command's lock client reaches and
// where it records their Events. The zero value is the lock namespace the
// LockFlags resolve, recording with the command's recorder.
type LockClientOptions struct {
	// AllNamespaces reaches the locks of every lock namespace
	// (metav1.NamespaceAll), to list them; --lock-namespace is then not
	// resolved.
	AllNamespaces bool
	// Events records the locks' Events; nil means the command's recorder
	// (Factory.EventRecorder).
	Events lock.EventRecorder
}

// NewLockClient returns the lock client of a command, the one way cmd
// builds one: judging expiries on the API server's clock (LockClock),
// reading nodes, logging to f.Log. Its freeze windows are loaded by the
// client itself beside its first read of a lock (lock.Client.Get, List and
// every write), so no command loads them first.
func NewLockClient(f *Factory, l *LockFlags, o LockClientOptions) (*lock.Client, error) {
	ns := metav1.NamespaceAll
	if !o.AllNamespaces {
		var err error
		if ns, err = l.ResolveLockNamespace(f); err != nil {
			return nil, err
		}
	}
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	events := o.Events
	if events == nil {
		events = f.EventRecorder(cs)
	}
	return lock.New(cs.CoreV1(), cs.CoreV1(), ns, f.LockClock(), lock.Options{
		Nodes: cs.CoreV1(), Log: f.Logger(), Events: events,
	}), nil
}

// JobStore returns the store of the job records in the -n namespace of the
// current context; the status changes it writes are recorded as Events.
func (f *Factory) JobStore() (*job.Store, error) {
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	return f.JobStoreIn(ns)
}

// JobStoreIn is JobStore for the job records in ns; metav1.NamespaceAll
// ("") reads those of every namespace.
func (f *Factory) JobStoreIn(ns string) (*job.Store, error) {
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	// NOTE: abort's state change is an Event on the job record, as the
	// reconcile loop's are. The client goes through package kube so that
	// Store.Wait's informer knows whether the clientset serves streaming
	// lists (client-go's fakes do not).
	return job.NewStore(kube.CoreV1(cs), ns, job.StoreOptions{Clock: f.Clock, OnChange: f.EventRecorder(cs).JobChanged}), nil
}

// ClusterClients returns a clientset per build-cluster alias. Clusters whose
// context is missing from the kubeconfig are a *cmdutil.UsageError naming them and
// the contexts there are.
func (f *Factory) ClusterClients(contexts map[string]string) (map[string]scheduler.Clientset, error) {
	out := make(map[string]scheduler.Clientset, len(contexts))
	aliases := make([]string, 0, len(contexts))
	for a := range contexts {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var errs []error
	for _, alias := range aliases {
		cs, err := f.ClientsetFor(contexts[alias])
		var unknown *kube.UnknownContextError
		if errors.As(err, &unknown) {
			// A build cluster naming a context that is not there is bad
			// input (--build-cluster or --config): exit 2.
			errs = append(errs, &cmdutil.UsageError{Err: fmt.Errorf("build cluster %q: %w", alias, err)})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("build cluster %q: %w", alias, err))
			continue
		}
		out[alias] = cs
	}
	return out, errors.Join(errs...)
}

// EventRecorder returns the recorder of the audit trail's Events (lock
// changes, job state changes) written through cs; Events it cannot write are
// logged at -v 1 and fail nothing.
func (f *Factory) EventRecorder(cs kube.Interface) *events.Recorder {
	return events.NewRecorder(cs.EventsV1(), events.Options{Clock: f.Clock, Log: f.Logger()})
}

// LoopEventRecorder returns the reconcile loop's recorder of Events (job
// state changes as jobEvents says, lock changes), counted in reg. It writes
// through a client of its own (EventsClientset, a rate limiter of its own
// at the same settings), so Events never take the state machine's
// requests' budget; fallback is the client when EventsClientset is nil.
func (f *Factory) LoopEventRecorder(fallback kube.Interface, jobEvents events.JobEvents, reg metrics.Registerer) (*events.Recorder, error) {
	cs := fallback
	if f.EventsClientset != nil {
		var err error
		if cs, err = f.EventsClientset(); err != nil {
			return nil, err
		}
	}
	metrics, err := events.NewMetrics(reg)
	if err != nil {
		return nil, err
	}
	return events.NewRecorder(cs.EventsV1(), events.Options{Clock: f.Clock, Log: f.Logger(), Jobs: jobEvents, Metrics: metrics}), nil
}

// KubeUser returns a function that tells the caller's authenticated
// Kubernetes user, for the claim a lock records (lock.Request.Callbacks.LookupUser):
// what an enforced lock admits the holder's writes by. It asks the API
// server once, with a SelfSubjectReview, on its first call, which the lock
// makes only on an enforced lock, and remembers the answer. A cluster that
// refuses or does not serve the review (older than 1.28, or RBAC without
// it) yields "": the lock is taken all the same, and at -v 1 the reason is
// logged.
func KubeUser(f *Factory) func(ctx context.Context) record.User {
	if f.WhoAmI == nil {
		return nil
	}
	return askedOnce(f, f.WhoAmI)
}

// askedOnce is KubeUser asking whoAmI.
func askedOnce(f *Factory, whoAmI func(context.Context) (record.User, error)) func(ctx context.Context) record.User {
	var (
		mu    sync.Mutex
		asked bool
		user  record.User
	)
	return func(ctx context.Context) record.User {
		mu.Lock()
		defer mu.Unlock()
		if asked {
			return user
		}
		u, err := whoAmI(ctx)
		if err != nil {
			if ctx.Err() == nil {
				// NOTE: a cancelled ask is asked again by the next decision.
				asked = true
			}
			f.Log.WithField("err", err).Debug("the Kubernetes user is not known: an enforced lock knows this claim by its fencing token only")
			return record.User{}
		}
		asked, user = true, u
		return user
	}
}
