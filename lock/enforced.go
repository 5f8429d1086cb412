package lock

import (
	"context"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/base/lazy"
	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// What a lock marked enforced (EnforcedAnnotation) carries besides its
// summary, and how a contender learns that a lock is enforced when the
// lock does not say so yet.

// stampResolution is how much earlier than the API server's clock the
// time it stamps a request with may be: it keeps whole seconds. The
// policy judges a hold lapsed at the stamp, so a contender takes over an
// enforced lock only once the stamp, too, is past the expiry.
const stampResolution = time.Second

// summarizeWindows writes the intervals of target's freeze windows into
// cm, when cm is marked enforced, as of now; it loads the windows first
// if they are not loaded. A lock not marked carries none.
func (c *Client) summarizeWindows(ctx context.Context, cm *corev1.ConfigMap, target string) error {
	delete(cm.Annotations, record.SummaryWindowsAnnotation)
	delete(cm.Annotations, record.SummaryWindowsUntilAnnotation)
	if cm.Annotations[record.EnforcedAnnotation] == "" {
		return nil
	}
	if c.windowsPending() {
		if err := c.LoadFreezeWindows(ctx); err != nil {
			return err
		}
	}
	lines, until := record.WindowIntervals(c.freezeWindows(), target, c.clk.Now())
	if until.IsZero() {
		return nil
	}
	cm.Annotations[record.SummaryWindowsAnnotation] = strings.Join(lines, "\n")
	cm.Annotations[record.SummaryWindowsUntilAnnotation] = until.UTC().Format(time.RFC3339)
	return nil
}

// markRefusal finds, in the refusal of a write of a lock, the mark the
// policy asks for ("[lockctl-enforced=MODE]": the lock's target is
// enforced, and the lock is not marked, or does not exist yet).
var markRefusal = lazy.Regexp{Expr: `\[lockctl-enforced=([a-z]+)\]`}

// enforcedMark returns the mode err, a refused write of a lock, asks the
// lock to be marked with; "" when it asks for none.
func enforcedMark(err error) string {
	if err == nil || !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		return ""
	}
	if m := markRefusal.Get().FindStringSubmatch(err.Error()); m != nil {
		return m[1]
	}
	return ""
}

// markOf returns the mark the API server asked target's lock to carry,
// "" when it asked none: a contender that learns so marks the lock and
// records its user from then on.
func (c *Client) markOf(target string) string {
	if v, ok := c.marks.Load(target); ok {
		return v.(string)
	}
	return ""
}

// enforcedLock reports whether the lock read as cm (nil: none) of target
// is enforced: marked, or the API server said so.
func (c *Client) enforcedLock(cm *corev1.ConfigMap, target string) bool {
	return cm != nil && cm.Annotations[record.EnforcedAnnotation] != "" || c.markOf(target) != ""
}

// learnMark keeps the mark that err, the refusal of a write of target's
// lock, asks for, and reports whether it asked for one: the write is then
// decided again on the lock marked.
func (c *Client) learnMark(target string, err error) bool {
	mode := enforcedMark(err)
	if mode == "" || c.markOf(target) == mode {
		return false
	}
	c.marks.Store(target, mode)
	c.log.Debug("the lock's target is enforced: marking the lock and recording the user", "lock", c.Describe(target))
	return true
}
