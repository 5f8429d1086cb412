package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// LoadWindowsToShow loads the freeze windows of locks for a command that
// shows the locks: a windows ConfigMap with entries that cannot be read is
// returned as windowsErr, the locks then judged with the windows that can
// be read; err is any other failure.
func LoadWindowsToShow(ctx context.Context, locks *lock.Client) (windowsErr *record.WindowsError, err error) {
	if err = locks.LoadFreezeWindows(ctx); errors.As(err, &windowsErr) {
		locks.SetFreezeWindows(windowsErr.Valid)
		return windowsErr, nil
	}
	return nil, err
}

// SayEnforced says on f's ErrOut whether the API server enforces the lock
// of target, and how (lockctl enforce), and what it admits of a hold
// without a Kubernetes user (l: the lock, nil when free); nothing when it
// does not, or when the caller may not read the policies (logged at -v 1).
func SayEnforced(ctx context.Context, f *Factory, target string, l *lock.LockView) {
	cs, err := f.Clientset()
	if err != nil {
		return
	}
	sayEnforced(ctx, f, cs, target, target, l)
}

// sayEnforced is SayEnforced for the cluster of cs, naming the lock name
// (lock.Where).
func sayEnforced(ctx context.Context, f *Factory, cs kube.Interface, target, name string, l *lock.LockView) {
	st, err := enforce.Status(ctx, cs.AdmissionregistrationV1(), target)
	if err != nil {
		f.Log.WithField("err", err).Debug("cannot tell whether the lock is enforced")
		return
	}
	switch {
	case st.Incomplete != "":
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q is not fully enforced: %s\n", name, st.Describe())
	case !st.Enforced:
	case l != nil && l.Status.Holder != nil && l.Status.Alive && l.Status.Holder.User == "":
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q is enforced by the API server: %s; its holder has no Kubernetes user, so only writes carrying its fencing token %s are admitted\n",
			name, st.Describe(), l.Status.Token)
	default:
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q is enforced by the API server: %s\n", name, st.Describe())
	}
}

// WatchLocks calls fn with every change to the locks of locks (the lock
// of target, when set) after those shown, until ctx ends.
func WatchLocks(ctx context.Context, locks *lock.Client, target string, shown []lock.LockView, fn func(lock.LockView) error) error {
	opts := lock.WatchOptions{Target: target, Shown: map[string]string{}}
	for _, l := range shown {
		if l.ResourceVersion != "" {
			opts.Shown[l.Namespace+"/"+l.Name] = l.ResourceVersion
		}
	}
	return locks.Watch(ctx, opts, fn)
}

// Releaser is who releases a lock, as release resolves it from the flags.
type Releaser struct {
	// Identity and Job are the holder whose hold is released; zero with
	// --force or --token and no --build, which release whoever holds.
	Identity record.Identity
	Job      record.CIJob
	// Breaker names who breaks the lock with --force, for its Events and
	// history; "" without --force.
	Breaker string
}

// Releaser resolves who releases with force (--force) or token
// (--token): the caller's identity, as acquire resolves it, unless force
// or token release whoever holds and no --build picks the hold. The
// breaker of a forced release is that identity, else the local user.
func (l *LockFlags) Releaser(f *Factory, force bool, token string) (Releaser, error) {
	var r Releaser
	if (!force && token == "") || l.Build != "" {
		holder, err := l.Identity(f)
		if err != nil {
			return r, err
		}
		r.Identity, r.Job = holder.Identity, holder.Job
	}
	if !force {
		return r, nil
	}
	id := r.Identity
	if id == (record.Identity{}) {
		holder, err := l.Identity(f)
		if err != nil {
			r.Breaker = identity.LocalUser(f.Getenv)
			return r, nil
		}
		id = holder.Identity
	}
	r.Breaker = id.String()
	return r, nil
}

// LocksToShow returns the locks status shows: the lock of target (its
// free view when there is none, found false), or every lock of locks'
// namespace (found false for none). It says on f's ErrOut whether the
// lock of target is enforced (SayEnforced), and that it is free or that
// there are none (all: in any namespace).
func LocksToShow(ctx context.Context, f *Factory, locks *lock.Client, target string, all bool) (items []lock.LockView, found bool, err error) {
	return locksToShow(ctx, f, locks, target, all, func(ctx context.Context, l *lock.LockView) { SayEnforced(ctx, f, target, l) })
}

// locksToShow is LocksToShow, saying whether the lock is enforced with
// sayEnforced; messages name the lock by lock.Where.
func locksToShow(ctx context.Context, f *Factory, locks *lock.Client, target string, all bool,
	sayEnforced func(context.Context, *lock.LockView),
) (items []lock.LockView, found bool, err error) {
	if target == "" {
		items, err = locks.List(ctx)
		if err == nil && len(items) == 0 {
			printers.NoLocks(f.IOStreams.ErrOut, locks.Namespace(), all)
		}
		return items, len(items) > 0, err
	}
	l, err := locks.Get(ctx, target)
	if err != nil {
		return nil, false, err
	}
	sayEnforced(ctx, l)
	name := lock.Where(locks.Context(), target)
	if l != nil && l.Status.BreakGlass != "" {
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q: %s\n", name, l.Status.BreakGlass)
	}
	if l == nil {
		free := locks.FreeLockView(target)
		printers.Free(f.IOStreams.ErrOut, name, free, locks.Describe(target))
		return []lock.LockView{free}, false, nil
	}
	return []lock.LockView{*l}, true, nil
}

// LocksToShowAcross is LocksToShow in every cluster of s, the clusters at
// once, their locks in the order of s: one row per lock and context.
// found is true when any cluster has a lock to show. With one cluster it
// is LocksToShow.
func LocksToShowAcross(ctx context.Context, f *Factory, s Sites, target string, all bool) (items []lock.LockView, found bool, err error) {
	if !s.Across() {
		return LocksToShow(ctx, f, s.Locks[0], target, all)
	}
	each := make([][]lock.LockView, len(s.Locks))
	some := make([]bool, len(s.Locks))
	err = EachSite(s, func(c *lock.Client) error {
		i := slices.Index(s.Locks, c)
		cs, _, err := f.ContextClient(c.Context())
		if err != nil {
			return err
		}
		say := func(ctx context.Context, l *lock.LockView) {
			sayEnforced(ctx, f, cs, target, lock.Where(c.Context(), target), l)
		}
		each[i], some[i], err = locksToShow(ctx, f, c, target, all, say)
		return err
	})
	return slices.Concat(each...), slices.Contains(some, true), err
}

// LoadWindowsToShowAcross is LoadWindowsToShow in every cluster of s:
// windowsErr joins the clusters' broken entries, err their other
// failures.
func LoadWindowsToShowAcross(ctx context.Context, s Sites) (windowsErr error, err error) {
	var werrs []error
	var mu sync.Mutex
	err = EachSite(s, func(c *lock.Client) error {
		w, err := LoadWindowsToShow(ctx, c)
		if w != nil {
			mu.Lock()
			werrs = append(werrs, w)
			mu.Unlock()
		}
		return err
	})
	return errors.Join(werrs...), err
}

// WatchLocksAcross is WatchLocks in every cluster of s at once, each
// change passed to fn one at a time, until ctx ends or a watch fails.
func WatchLocksAcross(ctx context.Context, s Sites, target string, shown []lock.LockView, fn func(lock.LockView) error) error {
	var mu sync.Mutex
	one := func(l lock.LockView) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(l)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return EachSite(s, func(c *lock.Client) error {
		var mine []lock.LockView
		for _, l := range shown {
			if l.Spec.Context == c.Context() {
				mine = append(mine, l)
			}
		}
		err := WatchLocks(ctx, c, target, mine, one)
		if err != nil {
			cancel()
		}
		return err
	})
}
