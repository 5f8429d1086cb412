package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/liveness"
	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
)

// Defaults for Client and Request fields left at their zero value.
const (
	// defaultLostPodGrace is how long a holder's pod may sit on a NotReady
	// or Unknown node (or in phase Unknown) before the lock counts as stale.
	defaultLostPodGrace = liveness.DefaultNodeGrace
)

// Client takes, waits for and releases namespace locks kept as ConfigMaps
// in one lock namespace.
type Client struct {
	cms       kube.ConfigMapsGetter
	pods      kube.PodsGetter
	namespace string

	// clk judges expiries and stamps records (see New).
	clk clock.WithTicker
	// log, nodes, events and the durations of opts are Options, with
	// their defaults filled in.
	log    *slog.Logger
	nodes  kube.NodesGetter
	events EventRecorder
	opts   Options

	// store is where the locks live: every read and write of a lock goes
	// through it (see update).
	store store
	// windows are the recurring freezes of the lock namespace (see
	// windowCache).
	windows windowCache
	// marks are the marks the API server asked locks to carry, by target
	// (learnMark).
	marks       sync.Map
	nodesDenied atomic.Bool
	// lastDecoded is the record of the version of a lock decoded last,
	// which a waiter decides on twice (a hand-over to it, then its turn).
	lastDecoded atomic.Pointer[decodedLock]
	// turnless plays, in tests, a lockctl from before turn objects: it
	// neither publishes the turn nor touches turnAnnotation.
	turnless bool
}

// decodedLock is the record of one version of a lock object: the object as
// given (informers and reads hand out objects nobody changes) and its
// resourceVersion.
type decodedLock struct {
	cm  *corev1.ConfigMap
	rv  string
	rec *record.Record
}

// Options tunes a Client; a zero field takes its default.
type Options struct {
	// Log receives what the client does, with stable keys "lock", "holder"
	// and "err"; nil means a logger that discards.
	Log *slog.Logger
	// WaiterTTL is how long a waiter's place lasts between renewals;
	// 0 means DefaultWaiterTTL.
	WaiterTTL time.Duration
	// LostPodGrace is how long a holder pod's node may be NotReady or
	// Unknown (liveness.Options.NodeGrace) before the lock is stale; 0 means
	// defaultLostPodGrace.
	LostPodGrace time.Duration
	// Nodes, when set, reads the node of a holder's pod, so a dead node is
	// seen from the node itself; nil, or a Forbidden answer, means the
	// pod's conditions alone are judged.
	Nodes kube.NodesGetter
	// Events, when set, records every change of a lock as an Event on its
	// ConfigMap (the Reason constants); nil records none. Recording is
	// best effort and never fails an operation.
	Events EventRecorder
	// ConfirmAfter is how long a hold that began with a hand-over runs
	// before its confirmation is written (see Held.Confirm); 0 means
	// defaultConfirmAfter, a negative value confirms at once.
	ConfirmAfter time.Duration
	// Context is the kubeconfig context naming the client's cluster when
	// it is one of several a caller holds locks in (AcquireAcross): its
	// locks' Held, Progress and views carry it, and its messages name the
	// lock CONTEXT/TARGET (Where). "" means one cluster, unnamed.
	Context string
}

// New returns a Client for locks in namespace, reading and writing
// ConfigMaps through cms and judging holder pods through pods.
//
// clk judges expiries and stamps records, and is required: give it the
// API server's clock (a servertime.Clock wired into the transport of the
// clients above, as cmd does), so contenders with skewed clocks agree on
// expiries (see the package doc); such a clock is asked to hear from the
// API server before the first decision. A test passes a fake clock, and a
// program that means the local clock says so with clock.RealClock{}. New
// panics when clk is nil: no Client silently judges on the local clock.
func New(cms kube.ConfigMapsGetter, pods kube.PodsGetter, namespace string, clk clock.WithTicker, o Options) *Client {
	if clk == nil {
		panic("lock.New: no clock given; pass the API server's clock (servertime.Clock), or clock.RealClock{} to mean the local one")
	}
	o.Log = logutil.OrDiscard(o.Log)
	if o.WaiterTTL <= 0 {
		o.WaiterTTL = record.DefaultWaiterTTL
	}
	if o.LostPodGrace <= 0 {
		o.LostPodGrace = defaultLostPodGrace
	}
	if o.ConfirmAfter == 0 {
		o.ConfirmAfter = defaultConfirmAfter
	}
	return &Client{
		cms:       cms,
		pods:      pods,
		namespace: namespace,
		store:     configMapStore{cms: cms, namespace: namespace},
		clk:       clk,
		log:       o.Log,
		nodes:     o.Nodes,
		events:    o.Events,
		opts:      o,
	}
}

// Clock returns the clock the client judges expiries and stamps records
// on (see New).
func (c *Client) Clock() clock.WithTicker { return c.clk }

// Options returns the options the client was made with, defaults filled
// in.
func (c *Client) Options() Options { return c.opts }

// Namespace returns the lock namespace.
func (c *Client) Namespace() string { return c.namespace }

// Context returns the kubeconfig context naming the client's cluster
// (Options.Context); "" for one cluster, unnamed.
func (c *Client) Context() string { return c.opts.Context }

// Describe identifies the lock of target for logs and messages.
func (c *Client) Describe(target string) string {
	return c.namespace + "/" + record.Name(target)
}

// decode is Decode, with the target named in an *InvalidError so its hint
// can give the command that removes the lock.
func (c *Client) decode(cm *corev1.ConfigMap, target string) (*record.Record, error) {
	if last := c.lastDecoded.Load(); last != nil && last.cm == cm && last.rv == cm.ResourceVersion && cm.ResourceVersion != "" {
		// The caller may change what it gets: a copy.
		return last.rec.DeepCopy(), nil
	}
	rec, err := record.Decode(cm)
	if err == nil {
		c.lastDecoded.Store(&decodedLock{cm: cm, rv: cm.ResourceVersion, rec: rec.DeepCopy()})
	}
	var (
		invalid *record.InvalidError
		version *record.VersionError
	)
	switch {
	case errors.As(err, &invalid):
		invalid.Target = target
	case errors.As(err, &version):
		version.Target = target
	}
	return rec, err
}

func (c *Client) get(ctx context.Context, target string) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := c.readWithWindows(ctx, fmt.Sprintf("lock %s/%s", c.namespace, record.Name(target)), func() (err error) {
		cm, err = c.store.Get(ctx, target)
		return err
	})
	return cm, err
}

// serverClock is a clock that follows the API server's once it has heard
// from it, as servertime.Clock does.
type serverClock interface {
	// Uncertainty returns how far the clock may be off the API server's,
	// and false until it has heard from it.
	Uncertainty() (time.Duration, bool)
}

// clockSlack is how far c.clk may be ahead of the API server's: the
// uncertainty of a clock that follows the API server's, 0 for others.
func (c *Client) clockSlack() time.Duration {
	if sc, ok := c.clk.(serverClock); ok {
		if u, synced := sc.Uncertainty(); synced {
			return u
		}
	}
	return 0
}

// ClockUncertainty returns how far c.clk may be off the API server's
// clock: the uncertainty of a clock that follows it (servertime.Clock) once
// it has heard from it, 0 for other clocks and before that.
func (c *Client) ClockUncertainty() time.Duration { return c.clockSlack() }

func (c *Client) waiterTTL() time.Duration { return c.opts.WaiterTTL }

func (c *Client) lostPodGrace() time.Duration { return c.opts.LostPodGrace }

func newSession() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// rvOlder reports whether resourceVersion a is older than b. Resource
// versions of one resource are comparable (KEP-5504, stable since
// Kubernetes 1.35); anything unparsable counts as not older.
func rvOlder(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}
