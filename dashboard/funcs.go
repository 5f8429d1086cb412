package dashboard

import (
	"fmt"
	"html/template"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// timeOf returns the time t holds, as the page's templates pass them, and
// false for none.
func timeOf(t any) (time.Time, bool) {
	switch v := t.(type) {
	case time.Time:
		return v, !v.IsZero()
	case metav1.Time:
		return v.Time, !v.IsZero()
	case *metav1.Time:
		if v == nil {
			return time.Time{}, false
		}
		return v.Time, !v.IsZero()
	case metav1.MicroTime:
		return v.Time, !v.IsZero()
	case *metav1.MicroTime:
		if v == nil {
			return time.Time{}, false
		}
		return v.Time, !v.IsZero()
	}
	return time.Time{}, false
}

// ago renders how long before now t was, as lockctl's tables do ("3m12s");
// "" for no time. The page's script counts on from it.
func ago(now time.Time, t any) string {
	at, ok := timeOf(t)
	if !ok {
		return ""
	}
	return human.Duration(now.Sub(at))
}

// liveness words the liveness of e's lock at now: from its holder's
// expiry when the entry has one (LockEntry.Expires), as lockctl status
// words it ("expires in 59m3s", "expired 4s ago"), else as it was judged;
// printable (lock.Printable) either way.
func liveness(now time.Time, e *LockEntry) string {
	if e.Expires == nil {
		return record.Printable(e.Lock.Status.Liveness)
	}
	return lock.ExpiryLiveness(e.Expires.Time, now)
}

// instant renders t to the millisecond for an attribute the page's script
// counts from (data-expires); "" for none.
func instant(t any) string {
	at, ok := timeOf(t)
	if !ok {
		return ""
	}
	return at.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// rfc3339 renders t for a datetime attribute and a tooltip; "" for none.
func rfc3339(t any) string {
	at, ok := timeOf(t)
	if !ok {
		return ""
	}
	return at.UTC().Format(time.RFC3339)
}

// when renders t for people: the UTC date and time with a space between,
// where a narrow column may wrap, and nowhere else (not at the date's
// hyphens); "" for none. The HTML is lockctl's own, from a time.
func when(t any) template.HTML {
	at, ok := timeOf(t)
	if !ok {
		return ""
	}
	at = at.UTC()
	return template.HTML(`<span class="nowrap">` + at.Format("2006-01-02") + `</span> <span class="nowrap">` + at.Format("15:04:05Z") + `</span>`)
}

// jobDuration is how long the job has run: from its pod's creation (else
// its submission) to its end, or to now while it runs; "" before.
func jobDuration(now time.Time, e JobEntry) string {
	from, ok := timeOf(e.Pending)
	if !ok {
		if from, ok = timeOf(e.Started); !ok || !e.Terminal {
			return ""
		}
	}
	to, done := timeOf(e.Completed)
	if !done {
		to = now
	}
	return human.Duration(to.Sub(from))
}

// holdFor is how long a past hold lasted.
func holdFor(h record.HistoryEntry) string {
	return human.Duration(h.Until.Sub(h.Since.Time))
}

// describeWindow renders whom a freeze window freezes.
func describeWindow(w Window) string {
	if len(w.Targets) == 0 {
		return "every lock"
	}
	return strings.Join(w.Targets, ", ")
}

// describeFreeze renders who froze a lock: a person's identity, or the
// freeze window it comes from.
func describeFreeze(f *record.Freeze) string {
	if f.FromWindow() {
		return "freeze window " + record.Printable(f.By.Branch)
	}
	return f.By.String()
}

// cardData is what the template of a lock's card gets.
type cardData struct {
	// Base is the path the page is served under (Options.Base).
	Base string
	Now  time.Time
	// LockNamespace is the page's lock namespace; "" names every lock's.
	LockNamespace string
	E             *LockEntry
}

// card bundles what a lock's card shows; e is a LockEntry or a pointer to
// one.
func card(base string, now time.Time, lockNamespace string, e any) cardData {
	d := cardData{Base: base, Now: now, LockNamespace: lockNamespace}
	switch v := e.(type) {
	case LockEntry:
		d.E = &v
	case *LockEntry:
		d.E = v
	}
	return d
}

// lower renders v (a state, an ending) in lower case, for a class name.
func lower(v any) string { return strings.ToLower(fmt.Sprint(v)) }

// cardState is the state a lock's card shows: its state, or frozen for a
// lock nobody holds while a freeze holds it (lockctl status shows "free;
// frozen until …").
func cardState(l lock.LockView) string {
	if l.Status.State == lock.StateFree && l.Status.Freeze != nil {
		return "frozen"
	}
	return string(l.Status.State)
}
