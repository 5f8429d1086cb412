package cmd

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock"
)

// plainRepeat is how often plain (non-terminal) progress repeats an
// unchanged state, so a CI log shows the wait is alive.
const plainRepeat = 30 * time.Second

// waitProgress shows a lock wait: on a terminal one live line redrawn every
// second, elsewhere a timestamped line on each change and every
// plainRepeat.
type waitProgress struct {
	out   io.Writer
	clock clock.WithTicker
	live  bool

	mu       sync.Mutex
	last     *lock.Progress
	lastLine string
	printed  time.Time
	stop     chan struct{}
	done     chan struct{}
}

func newWaitProgress(out io.Writer, clk clock.WithTicker, live bool) *waitProgress {
	p := &waitProgress{out: out, clock: clk, live: live, stop: make(chan struct{}), done: make(chan struct{})}
	go p.tick()
	return p
}

// update records a new state of the wait and shows it.
func (p *waitProgress) update(pr lock.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = &pr
	p.draw(true)
}

// finish ends the live line.
func (p *waitProgress) finish() {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live && p.lastLine != "" {
		fmt.Fprint(p.out, "\r\033[K")
	}
}

func (p *waitProgress) tick() {
	defer close(p.done)
	t := p.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C():
			p.mu.Lock()
			p.draw(false)
			p.mu.Unlock()
		}
	}
}

func (p *waitProgress) draw(changed bool) {
	if p.last == nil {
		return
	}
	now := p.clock.Now()
	line := describeWait(*p.last, now)
	switch {
	case p.live:
		fmt.Fprintf(p.out, "\r\033[K%s", line)
	case changed && line != p.lastLine || now.Sub(p.printed) >= plainRepeat:
		fmt.Fprintf(p.out, "%s %s\n", now.UTC().Format(time.TimeOnly), line)
		p.printed = now
	}
	p.lastLine = line
}

// describeWait is the one-line description of a wait.
func describeWait(pr lock.Progress, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "waiting for lock %q: held by %s", pr.Target, pr.Holder.Identity)
	if pr.Holder.Pod != nil {
		fmt.Fprintf(&b, " (pod %s)", pr.Holder.Pod)
	}
	fmt.Fprintf(&b, " for %s", humanDuration(now.Sub(pr.Holder.Since.Time)))
	if !pr.HolderAlive {
		b.WriteString(", stale")
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
	fmt.Fprintf(&b, "; waited %s", humanDuration(now.Sub(pr.Started)))
	return b.String()
}
