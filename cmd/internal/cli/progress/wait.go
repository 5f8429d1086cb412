package progress

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock"
)

// plainRepeat is how often plain (non-terminal) progress repeats an
// unchanged state, so a CI log shows the wait is alive.
const plainRepeat = 30 * time.Second

// Wait shows a lock wait on the console: on a live console the
// live line, redrawn every second; elsewhere a line (timestamped, or a
// JSON object with the wait's fields) on each change and every
// plainRepeat.
type Wait struct {
	c     *term.Console
	clock clock.Clock
	live  bool

	mu       sync.Mutex
	last     *lock.Progress
	lastLine string
	printed  time.Time
	stop     chan struct{}
	done     chan struct{}
}

// WaitOptions configure a Wait. The zero value is usable.
type WaitOptions struct {
	// Clock times the wait: give it the clock the lock is stamped on, so
	// "held for" and "waited" agree with it. nil means clock.RealClock{}.
	Clock clock.Clock
}

// NewWait returns the display of one wait on c.
func NewWait(c *term.Console, o WaitOptions) *Wait {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	p := &Wait{c: c, clock: o.Clock, live: c.IsLive(), stop: make(chan struct{}), done: make(chan struct{})}
	if p.live {
		close(p.done)
	} else {
		go p.tick()
	}
	return p
}

// Update records a new state of the wait and shows it.
func (p *Wait) Update(pr lock.Progress) {
	p.mu.Lock()
	first := p.last == nil
	p.last = &pr
	p.mu.Unlock()
	if p.live {
		// NOTE: the console calls line under its own lock, so p.mu is
		// never held while calling the console.
		if first {
			p.c.SetStatus(p.line)
		}
		return
	}
	p.print(true)
}

// line is the live line: the wait as it is now, in its full form and the
// shorter ones of narrowWait, for the console to pick the first that fits
// the terminal.
func (p *Wait) line(now time.Time) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return ""
	}
	return strings.Join(append([]string{describeWait(*p.last, now)}, narrowWait(*p.last, now)...), "\n")
}

// Finish ends the live line and stops the repeats; call it once the
// wait is over.
func (p *Wait) Finish() {
	close(p.stop)
	<-p.done
	if p.live {
		p.c.SetStatus(nil)
	}
}

func (p *Wait) tick() {
	defer close(p.done)
	t := p.clock.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C():
			t.Reset(time.Second)
			p.print(false)
		}
	}
}

// print writes the wait as a line when it changed, or when plainRepeat
// passed since the last one.
func (p *Wait) print(changed bool) {
	p.mu.Lock()
	if p.last == nil {
		p.mu.Unlock()
		return
	}
	now := p.clock.Now()
	pr := *p.last
	line := describeWait(pr, now)
	show := changed && line != p.lastLine || now.Sub(p.printed) >= plainRepeat
	if show {
		p.printed = now
	}
	p.lastLine = line
	p.mu.Unlock()
	if show {
		p.c.Statusf(term.StyleNone, waitFields(pr, now), "%s", line)
	}
}

// waitFields are the wait's fields in structured (JSON) form.
func waitFields(pr lock.Progress, now time.Time) logrus.Fields {
	if pr.Unreachable != "" {
		return logrus.Fields{"lock": pr.Where(), "unreachable": pr.Unreachable, "waited": human.Duration(now.Sub(pr.Started))}
	}
	fields := logrus.Fields{
		"lock":     pr.Where(),
		"holder":   pr.Holder.Identity.String(),
		"held_for": human.Duration(now.Sub(pr.Holder.Since.Time)),
		"stale":    !pr.HolderAlive,
		"position": pr.Position,
		"waited":   human.Duration(now.Sub(pr.Started)),
	}
	if pr.Holder.Pod != nil {
		fields["pod"] = pr.Holder.Pod.String()
	}
	if !pr.Held() {
		delete(fields, "holder")
		delete(fields, "held_for")
		delete(fields, "stale")
	}
	if r := pr.Holder.CancelRequest; r != nil && pr.Held() {
		fields["stop_asked_by"] = r.Identity.String()
	}
	if e := pr.Estimate(now); e != nil {
		fields["estimated_wait"] = e.String()
		fields["basis"] = e.Basis()
	}
	if f := pr.Freeze; f != nil {
		fields["frozen_until"] = f.Until.UTC().Format(time.RFC3339)
		fields["frozen_by"] = f.By.String()
		fields["freeze_reason"] = f.Reason
	}
	return fields
}

// describeWait is the one-line description of a wait.
func describeWait(pr lock.Progress, now time.Time) string {
	if pr.Unreachable != "" {
		return fmt.Sprintf("waiting for lock %q: the API server of context %q is not reached (%s); trying again; waited %s",
			pr.Where(), pr.Context, pr.Unreachable, human.Duration(now.Sub(pr.Started)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for lock %q: ", pr.Where())
	if f := pr.Freeze; f != nil {
		fmt.Fprintf(&b, "%s; ", f.Describe())
	}
	if !pr.Held() {
		b.WriteString("not held")
	} else {
		fmt.Fprintf(&b, "held by %s", pr.Holder.Identity)
		if pr.Holder.Pod != nil {
			fmt.Fprintf(&b, " (pod %s)", pr.Holder.Pod)
		}
		fmt.Fprintf(&b, " for %s", human.Duration(now.Sub(pr.Holder.Since.Time)))
		if !pr.HolderAlive {
			b.WriteString(", stale")
		}
		if r := pr.Holder.CancelRequest; r != nil {
			fmt.Fprintf(&b, ", asked to stop by %s (cancel-in-progress)", r.Identity)
		}
	}
	fmt.Fprintf(&b, "; queue position %d", pr.Position)
	if n := len(pr.Ahead); n > 0 {
		names := make([]string, 0, n)
		for _, a := range pr.Ahead {
			names = append(names, a.Identity.String())
		}
		if n > 3 {
			names = append(names[:3], fmt.Sprintf("%d more", n-3))
		}
		fmt.Fprintf(&b, " (after %s)", strings.Join(names, ", "))
	}
	if e := pr.Estimate(now); e != nil {
		fmt.Fprintf(&b, "; %s (%s)", e, e.Basis())
	}
	fmt.Fprintf(&b, "; waited %s", human.Duration(now.Sub(pr.Started)))
	return b.String()
}

// narrowWait is the wait in shorter forms than describeWait's, for a live
// line on a narrow terminal, longest first: the holder comes before the
// place in the queue and the time waited, so that it is never the part cut
// off (at 40 columns the full form showed "held by acme/a…", and whose lock
// it was could not be read).
func narrowWait(pr lock.Progress, now time.Time) []string {
	who := fmt.Sprintf("%q: ", pr.Where())
	if pr.Unreachable != "" {
		return []string{who + "API server not reached; waited " + human.Duration(now.Sub(pr.Started)), who + "not reached"}
	}
	if pr.Freeze != nil {
		who += "frozen; "
	}
	if !pr.Held() {
		return []string{
			fmt.Sprintf("%snot held; #%d in queue; waited %s", who, pr.Position, human.Duration(now.Sub(pr.Started))),
			who + "not held",
		}
	}
	who += "held by " + pr.Holder.Identity.String()
	stale := ""
	if !pr.HolderAlive {
		stale = ", stale"
	}
	held := fmt.Sprintf("%s for %s%s", who, human.Duration(now.Sub(pr.Holder.Since.Time)), stale)
	place := fmt.Sprintf("#%d in queue", pr.Position)
	if e := pr.Estimate(now); e != nil {
		place += ", " + e.String()
	}
	return []string{
		fmt.Sprintf("%s; %s; waited %s", held, place, human.Duration(now.Sub(pr.Started))),
		held,
		who + stale,
	}
}
