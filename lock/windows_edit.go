package lock

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// WindowEntry is one entry of the freeze windows ConfigMap as it is
// stored: the window, or why it cannot be read.
type WindowEntry struct {
	// Window is the entry read; for a broken entry, what could be read of
	// it (its name, when it has one).
	Window record.FreezeWindow
	// Err is why the entry cannot be read; nil when it can.
	Err *record.WindowEntryError
}

// ListFreezeWindows returns every entry of the lock namespace's freeze
// windows ConfigMap, broken ones too, in its order; none when there is no
// ConfigMap. A file that cannot be read at all is a *WindowsError.
func (c *Client) ListFreezeWindows(ctx context.Context) ([]WindowEntry, error) {
	cm, err := c.getWindows(ctx)
	if err != nil || cm == nil {
		return nil, err
	}
	raws, err := c.windowEntries(cm)
	if err != nil {
		return nil, err
	}
	out := make([]WindowEntry, 0, len(raws))
	seen := map[string]bool{}
	for i, raw := range raws {
		w, werr := record.ParseWindow(i+1, raw)
		if werr == nil && seen[w.Name] {
			werr = &record.WindowEntryError{Index: i + 1, Name: w.Name, Field: "name", Value: fmt.Sprintf("%q", w.Name), Reason: "the name is used twice"}
		}
		if werr == nil {
			seen[w.Name] = true
		}
		out = append(out, WindowEntry{Window: w, Err: werr})
	}
	return out, nil
}

// windowExistsError is returned by AddFreezeWindow for a name already used.
type windowExistsError struct{ Namespace, Name string }

func (e *windowExistsError) Error() string {
	return fmt.Sprintf("freeze window %q already exists in configmap %s/%s", e.Name, e.Namespace, record.FreezeWindowsName)
}

// windowNotFoundError is returned by RemoveFreezeWindow for a name no
// entry has.
type windowNotFoundError struct{ Namespace, Name string }

func (e *windowNotFoundError) Error() string {
	return fmt.Sprintf("no freeze window %q in configmap %s/%s", e.Name, e.Namespace, record.FreezeWindowsName)
}

// AddFreezeWindow adds w to the lock namespace's freeze windows
// ConfigMap, creating it when there is none. w is checked as a window
// read from the ConfigMap would be (its fields, its schedule); a name
// already there is a *windowExistsError. The other entries, broken ones
// too, are kept as they are; the key is written anew, so comments in it
// are lost.
func (c *Client) AddFreezeWindow(ctx context.Context, w record.FreezeWindow) error {
	if err := ValidateFreezeWindow(w); err != nil {
		return err
	}
	raw, err := json.Marshal(w)
	if err != nil {
		return err
	}
	return c.updateWindows(ctx, "add freeze window", func(entries []json.RawMessage) ([]json.RawMessage, error) {
		for _, e := range entries {
			if entryName(e) == w.Name {
				return nil, &windowExistsError{Namespace: c.namespace, Name: w.Name}
			}
		}
		return append(entries, raw), nil
	})
}

// ValidateFreezeWindow checks w as an entry of the freeze windows
// ConfigMap is checked, and that every target is a namespace name, as the
// commands check the namespaces they lock; the error is a
// *WindowEntryError naming the field.
func ValidateFreezeWindow(w record.FreezeWindow) error {
	raw, err := json.Marshal(w)
	if err != nil {
		return err
	}
	if _, werr := record.ParseWindow(1, raw); werr != nil {
		return werr
	}
	if werr := record.CheckWindowTargets(w); werr != nil {
		return werr
	}
	return nil
}

// RemoveFreezeWindow removes every entry called name from the lock
// namespace's freeze windows ConfigMap, broken ones too; none is a
// *windowNotFoundError. The other entries are kept as they are.
func (c *Client) RemoveFreezeWindow(ctx context.Context, name string) error {
	return c.updateWindows(ctx, "remove freeze window", func(entries []json.RawMessage) ([]json.RawMessage, error) {
		kept := make([]json.RawMessage, 0, len(entries))
		for _, e := range entries {
			if entryName(e) != name {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(entries) {
			return nil, &windowNotFoundError{Namespace: c.namespace, Name: name}
		}
		return kept, nil
	})
}

// entryName is the name of a stored entry, "" when it has none.
func entryName(raw json.RawMessage) string {
	var e struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(raw, &e)
	return e.Name
}

// getWindows reads the freeze windows ConfigMap; nil when there is none.
func (c *Client) getWindows(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := c.cms.ConfigMaps(c.namespace).Get(ctx, record.FreezeWindowsName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read freeze windows %s/%s: %w", c.namespace, record.FreezeWindowsName, err)
	}
	return cm, nil
}

// windowEntries returns the stored entries of cm; a file that cannot be
// read at all is a *WindowsError.
func (c *Client) windowEntries(cm *corev1.ConfigMap) ([]json.RawMessage, error) {
	var f record.FreezeWindowsFile
	if err := yaml.UnmarshalStrict([]byte(cm.Data[record.FreezeWindowsKey]), &f); err != nil {
		return nil, &record.WindowsError{Namespace: c.namespace, Err: err}
	}
	return f.Windows, nil
}

// updateWindows changes the entries of the freeze windows ConfigMap as
// edit says, with a compare-and-swap on the version read (a create when
// there is none), read and decided again when another write came first;
// then it lists the new windows in the summaries of the enforced locks
// (refreshEnforced).
func (c *Client) updateWindows(ctx context.Context, op string, edit func([]json.RawMessage) ([]json.RawMessage, error)) error {
	what := fmt.Sprintf("%s in configmap %s/%s", op, c.namespace, record.FreezeWindowsName)
	if err := c.editWindows(ctx, what, edit); err != nil {
		return err
	}
	return c.refreshEnforced(ctx)
}

// refreshEnforced writes, into the summary of every lock of the namespace
// marked enforced, the intervals of the freeze windows as they are now
// (Summarize), so that the API server enforces a window added or removed
// without waiting for the lock's next write.
func (c *Client) refreshEnforced(ctx context.Context) error {
	if err := c.LoadFreezeWindows(ctx); err != nil {
		return err
	}
	list, err := c.cms.ConfigMaps(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: record.ManagedByLabel + "=" + record.ManagedByValue + "," + record.KindLabel + "=" + record.KindValue})
	if err != nil {
		return fmt.Errorf("list the locks of namespace %q to give the enforced ones the new windows: %w", c.namespace, err)
	}
	var failed []string
	for _, cm := range list.Items {
		mode := cm.Annotations[record.EnforcedAnnotation]
		if mode == "" {
			continue
		}
		rec, err := c.decode(&cm, "")
		if err != nil {
			failed = append(failed, cm.Name)
			continue
		}
		if _, err := c.Summarize(ctx, rec.Target, mode); err != nil {
			failed = append(failed, rec.Target)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("the windows are saved, but the API server does not know them yet for the enforced locks of %s: run lockctl enforce on them again", strings.Join(failed, ", "))
	}
	return nil
}

// editWindows is updateWindows' edit of the ConfigMap.
func (c *Client) editWindows(ctx context.Context, what string, edit func([]json.RawMessage) ([]json.RawMessage, error)) error {
	return retryLost(what, func(int) error {
		cm, err := c.getWindows(ctx)
		if err != nil {
			return err
		}
		var entries []json.RawMessage
		if cm != nil {
			if entries, err = c.windowEntries(cm); err != nil {
				return err
			}
		}
		entries, err = edit(entries)
		if err != nil {
			return err
		}
		data, err := yaml.Marshal(record.FreezeWindowsFile{Windows: entries})
		if err != nil {
			return err
		}
		cms := c.cms.ConfigMaps(c.namespace)
		if cm == nil {
			next := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: c.namespace},
				Data: map[string]string{record.FreezeWindowsKey: string(data)}}
			_, err = cms.Create(ctx, next, metav1.CreateOptions{})
		} else {
			next := cm.DeepCopy()
			if next.Data == nil {
				next.Data = map[string]string{}
			}
			next.Data[record.FreezeWindowsKey] = string(data)
			_, err = cms.Update(ctx, next, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			return nil
		case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err):
			return errRetry
		case apierrors.IsNotFound(err) && cm == nil:
			return &NamespaceError{Namespace: c.namespace}
		case apierrors.IsNotFound(err):
			return errRetry
		}
		return fmt.Errorf("%s: %w", what, err)
	})
}
