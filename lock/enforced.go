package lock

import (
	"context"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/lockctl/lockctl/internal/base/lazy"
)

// What a lock marked enforced (EnforcedAnnotation) carries besides its
// summary, and how a contender learns that a lock is enforced when the
// lock does not say so yet.

// windowsHorizon is how far ahead a write of an enforced lock lists the
// intervals its freeze windows freeze it (SummaryWindowsAnnotation), and
// maxWindowIntervals how many it lists at most: past the last, the
// policy counts the lock as frozen until a write lists more.
const (
	windowsHorizon     = 90 * 24 * time.Hour
	maxWindowIntervals = 256
)

// stampResolution is how much earlier than the API server's clock the
// time it stamps a request with may be: it keeps whole seconds. The
// policy judges a hold lapsed at the stamp, so a contender takes over an
// enforced lock only once the stamp, too, is past the expiry.
const stampResolution = time.Second

// windowIntervals lists the intervals in which ws freeze target's lock
// from now on, merged where they overlap, one "START END NAME" a line
// (SummaryWindowsAnnotation, RFC 3339 in whole seconds), and until when
// the list is complete; none and the zero time when no window applies to
// target.
func windowIntervals(ws []FreezeWindow, target string, now time.Time) ([]string, time.Time) {
	type interval struct {
		start, end time.Time
		name       string
	}
	now = now.UTC()
	horizon := now.Add(windowsHorizon)
	var all []interval
	applies := false
	for i := range ws {
		w := &ws[i]
		if !w.applies(target) || w.sched == nil {
			continue
		}
		applies = true
		// The first start whose freeze has not ended at now, then every
		// start up to the horizon (at most one more than can be listed).
		for start := w.sched.Next(now.Add(-w.Duration.Duration)); !start.IsZero() && start.Before(horizon); start = w.sched.Next(start) {
			all = append(all, interval{start, start.Add(w.Duration.Duration), w.Name})
			if len(all) > maxWindowIntervals*len(ws) {
				break
			}
		}
	}
	if !applies {
		return nil, time.Time{}
	}
	slices.SortFunc(all, func(a, b interval) int { return a.start.Compare(b.start) })
	var merged []interval
	for _, iv := range all {
		if n := len(merged); n > 0 && !iv.start.After(merged[n-1].end) {
			if iv.end.After(merged[n-1].end) {
				merged[n-1].end = iv.end
			}
			continue
		}
		merged = append(merged, iv)
	}
	until := horizon
	if len(merged) > maxWindowIntervals {
		until = merged[maxWindowIntervals].start
		merged = merged[:maxWindowIntervals]
	}
	// NOTE: whole seconds in UTC, one width, which the policy compares as
	// strings: a start rounded down, an end up, so a window never shrinks.
	lines := make([]string, len(merged))
	for i, iv := range merged {
		end := iv.end.Truncate(time.Second)
		if end.Before(iv.end) {
			end = end.Add(time.Second)
		}
		lines[i] = iv.start.Truncate(time.Second).Format(time.RFC3339) + " " + end.Format(time.RFC3339) + " " + iv.name
	}
	return lines, until.Truncate(time.Second)
}

// summarizeWindows writes the intervals of target's freeze windows into
// cm, when cm is marked enforced, as of now; it loads the windows first
// if they are not loaded. A lock not marked carries none.
func (c *Client) summarizeWindows(ctx context.Context, cm *corev1.ConfigMap, target string) error {
	delete(cm.Annotations, SummaryWindowsAnnotation)
	delete(cm.Annotations, SummaryWindowsUntilAnnotation)
	if cm.Annotations[EnforcedAnnotation] == "" {
		return nil
	}
	if c.windowsPending() {
		if err := c.LoadFreezeWindows(ctx); err != nil {
			return err
		}
	}
	lines, until := windowIntervals(c.freezeWindows(), target, c.clk.Now())
	if until.IsZero() {
		return nil
	}
	cm.Annotations[SummaryWindowsAnnotation] = strings.Join(lines, "\n")
	cm.Annotations[SummaryWindowsUntilAnnotation] = until.UTC().Format(time.RFC3339)
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
	return cm != nil && cm.Annotations[EnforcedAnnotation] != "" || c.markOf(target) != ""
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
