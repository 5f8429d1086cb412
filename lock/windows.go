package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LoadFreezeWindows loads the freeze windows of the lock namespace from
// its FreezeWindowsName ConfigMap (see the function loadFreezeWindows),
// replacing any loaded before. A contender or a release during a window
// treats the lock as frozen and writes the window's freeze into the record
// with its next write; a window's freeze in the record that the windows no
// longer make (the ConfigMap changed) is dropped. A client of every
// namespace (metav1.NamespaceAll) loads none.
func (c *Client) LoadFreezeWindows(ctx context.Context) error {
	if c.namespace == metav1.NamespaceAll {
		return nil
	}
	ws, err := loadFreezeWindows(ctx, c.cms, c.namespace)
	if err != nil {
		return err
	}
	c.windows.set(ws)
	return nil
}

// SetFreezeWindows sets the freeze windows of the lock namespace, read by
// the caller (a dashboard that loads the windows of many namespaces); see
// LoadFreezeWindows. Safe to call while the client is in use.
func (c *Client) SetFreezeWindows(ws []record.FreezeWindow) { c.windows.set(ws) }

// FreezeWindows returns the freeze windows loaded, nil when none were
// loaded (only the freezes in the records count), empty when there are
// none.
func (c *Client) FreezeWindows() []record.FreezeWindow { return c.freezeWindows() }

// freezeWindows returns the freeze windows loaded, nil when none were. The
// slice is never changed in place: a new load replaces it.
func (c *Client) freezeWindows() []record.FreezeWindow { return c.windows.get() }

// windowsPending reports whether the next read of a lock is to load the
// freeze windows beside it, in one round trip: they are not loaded yet
// (LoadFreezeWindows), and the client has one lock namespace.
func (c *Client) windowsPending() bool {
	return c.namespace != metav1.NamespaceAll && !c.windows.loaded()
}

// readWithWindows runs read, a read of locks; while the freeze windows are
// pending it reads them side by side with it, and keeps them. This is the
// one way a Client loads its windows besides LoadFreezeWindows and
// SetFreezeWindows: a caller never needs to load them before a read. An
// error reading the windows wins, naming what was read: without them no
// decision may be made.
func (c *Client) readWithWindows(ctx context.Context, what string, read func() error) error {
	if !c.windowsPending() {
		return read()
	}
	ran, err := c.windows.load(func() ([]record.FreezeWindow, error) {
		var (
			ws   []record.FreezeWindow
			werr error
			done = make(chan struct{})
		)
		go func() {
			defer close(done)
			ws, werr = loadFreezeWindows(ctx, c.cms, c.namespace)
		}()
		err := read()
		<-done
		if werr != nil {
			return nil, fmt.Errorf("read %s with its freeze windows: %w", what, werr)
		}
		return ws, err
	})
	switch {
	case err != nil:
		return err
	case !ran:
		// Loaded by another meanwhile: the locks are read alone.
		return read()
	}
	return nil
}

// windowCache keeps the freeze windows of a client, safe for concurrent
// use: every decision and view reads them, while a load (beside the first
// read of a lock, LoadFreezeWindows or SetFreezeWindows) replaces them. nil
// means not loaded.
type windowCache struct {
	mu sync.Mutex
	ws []record.FreezeWindow
	// loading is held by the one load under way, so that concurrent first
	// reads load the windows once.
	loading sync.Mutex
}

func (w *windowCache) get() []record.FreezeWindow {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ws
}

func (w *windowCache) loaded() bool { return w.get() != nil }

// set replaces the windows with a copy of ws; nil counts as loaded, none.
func (w *windowCache) set(ws []record.FreezeWindow) {
	cp := append([]record.FreezeWindow{}, ws...) // loaded: not nil
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ws = cp
}

// load sets the windows from f unless they were loaded meanwhile, and
// reports whether it ran f. An error of f loads nothing.
func (w *windowCache) load(f func() ([]record.FreezeWindow, error)) (bool, error) {
	w.loading.Lock()
	defer w.loading.Unlock()
	if w.loaded() {
		return false, nil
	}
	ws, err := f()
	if err != nil {
		return true, err
	}
	w.set(ws)
	return true, nil
}

// loadFreezeWindows reads the freeze windows of namespace from its
// FreezeWindowsName ConfigMap; none when it does not exist. A ConfigMap
// that cannot be parsed is a *WindowsError naming each broken entry:
// lockctl refuses to deploy on a freeze configuration it cannot read
// rather than ignore it.
func loadFreezeWindows(ctx context.Context, cms kube.ConfigMapsGetter, namespace string) ([]record.FreezeWindow, error) {
	cm, err := cms.ConfigMaps(namespace).Get(ctx, record.FreezeWindowsName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read freeze windows %s/%s: %w", namespace, record.FreezeWindowsName, err)
	}
	ws, err := record.ParseFreezeWindows([]byte(cm.Data[record.FreezeWindowsKey]))
	if we := (*record.WindowsError)(nil); errors.As(err, &we) {
		we.Namespace = namespace
	}
	return ws, err
}
