package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Events of a page's stream (/events).
const (
	// eventSnapshot carries a whole Snapshot.
	eventSnapshot = "snapshot"
	// eventUpdate carries an Update of the snapshot the stream sent before.
	eventUpdate = "update"
	// eventClock carries the server's time, {"now": RFC 3339 to the
	// microsecond}, on the clock locks are judged on.
	eventClock = "clock"
)

// Update is a snapshot told as the change from the one before it: the
// event "update" of /events. Every field of the Snapshot but Locks is
// there whole (the windows, the newest jobs, the problems: small); of the
// locks only those that changed or came, and the keys of those gone. A
// page applies it to the snapshot Base, the one the stream sent last; at
// 5,000 locks an acquire is a change of 1 KiB where the snapshot is 2.4
// MB, for the server to send to every page and for each page to render.
type Update struct {
	Snapshot
	// Base is the Seq of the snapshot this one changes.
	Base uint64 `json:"base"`
	// Removed are the locks of Base that are not in this snapshot.
	Removed []LockKey `json:"removed"`
}

// LockKey names a lock on the page.
type LockKey struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func keyOf(e *LockEntry) LockKey { return LockKey{Namespace: e.Lock.Namespace, Name: e.Lock.Name} }

// compareKeys orders locks as the page shows them: by namespace, then name.
func compareKeys(a, b LockKey) int {
	if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
		return c
	}
	return strings.Compare(a.Name, b.Name)
}

// snapshotJSON is a Snapshot whose locks are encoded already.
type snapshotJSON struct {
	*plainSnapshot
	Locks []json.RawMessage `json:"locks"`
}

// plainSnapshot is a Snapshot without its MarshalJSON.
type plainSnapshot Snapshot

// MarshalJSON encodes the snapshot with the encoding of each lock the hub
// made when it made the lock's entry, so that a snapshot after a change of
// one lock does not encode the others again.
//
// Every list is a list, [] when empty, never null: a page's script reads
// their length.
func (s *Snapshot) MarshalJSON() ([]byte, error) {
	plain := *s
	plain.Locks, plain.Windows, plain.Jobs = orEmpty(s.Locks), orEmpty(s.Windows), orEmpty(s.Jobs)
	if !s.encoded() {
		return json.Marshal((*plainSnapshot)(&plain))
	}
	return json.Marshal(snapshotJSON{plainSnapshot: (*plainSnapshot)(&plain), Locks: orEmpty(s.locksJSON)})
}

// orEmpty is l, or an empty list for nil, which JSON encodes as [].
func orEmpty[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

// encoded reports whether every lock's encoding is at hand.
func (s *Snapshot) encoded() bool {
	if len(s.locksJSON) != len(s.Locks) {
		return false
	}
	for _, raw := range s.locksJSON {
		if raw == nil {
			return false
		}
	}
	return true
}

// MarshalJSON encodes the update, its locks as the hub encoded them.
func (u *Update) MarshalJSON() ([]byte, error) {
	type plainUpdate struct {
		*plainSnapshot
		Locks   any       `json:"locks"`
		Base    uint64    `json:"base"`
		Removed []LockKey `json:"removed"`
	}
	plain := u.Snapshot
	plain.Windows, plain.Jobs = orEmpty(plain.Windows), orEmpty(plain.Jobs)
	out := plainUpdate{plainSnapshot: (*plainSnapshot)(&plain), Locks: orEmpty(u.Locks), Base: u.Base, Removed: orEmpty(u.Removed)}
	if u.encoded() {
		out.Locks = orEmpty(u.locksJSON)
	}
	return json.Marshal(out)
}

// published is a snapshot as every page gets it, encoded once for all of
// them: as the change from the snapshot before it, and, when a page needs
// it, whole and as the index page.
type published struct {
	snap *Snapshot
	// update is the event "update" from the snapshot base, nil when the
	// change is not smaller than the whole.
	update []byte
	base   uint64

	// whole is the snapshot's JSON (GET /api/snapshot) and its event
	// "snapshot", encoded when a page first needs them: a change of one
	// lock of thousands is an update for every open page, and encoding the
	// whole for none of them was most of what a change cost.
	whole struct {
		once        sync.Once
		data, event []byte
		err         error
	}
	// all is the index page with every card (/?all), rendered once;
	// first the page with the first cards, rendered again at most once a
	// second, since its words count with the clock (firstPage).
	all struct {
		once sync.Once
		html []byte
		err  error
	}
	first struct {
		mu   sync.Mutex
		sec  int64
		html []byte
	}
	// count is the snapshot's locks counted by state, once.
	count struct {
		once   sync.Once
		counts Counts
	}
}

// counts returns the snapshot's locks counted by state (countsOf),
// counting them the first time.
func (p *published) counts() Counts {
	p.count.once.Do(func() { p.count.counts = countsOf(p.snap.Locks) })
	return p.count.counts
}

// newPublished encodes s's change from prev, when prev is not nil.
func newPublished(s *Snapshot, prev *published) (*published, error) {
	p := &published{snap: s}
	if prev == nil {
		return p, nil
	}
	u, ok := diff(prev.snap, s)
	if !ok {
		return p, nil
	}
	udata, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	p.update, p.base = frameEvent(eventUpdate, udata), prev.snap.Seq
	return p, nil
}

// encoded returns the snapshot's JSON and its event "snapshot", encoding
// them the first time.
func (p *published) encoded() (data, event []byte, err error) {
	p.whole.once.Do(func() {
		data, err := json.Marshal(p.snap)
		if err != nil {
			p.whole.err = err
			return
		}
		ev := frameEvent(eventSnapshot, data)
		p.whole.event, p.whole.data = ev, data
		if one := ev[len(ev)-2-len(data) : len(ev)-2]; bytes.Equal(one, data) {
			// The event holds the JSON on one line (as it is encoded):
			// one copy of it, not two.
			p.whole.data = one
		}
	})
	return p.whole.data, p.whole.event, p.whole.err
}

// diff returns next as the change from prev, and false when that change
// is not smaller than next whole: half of the locks or more changed. Both
// list their locks in the page's order.
func diff(prev, next *Snapshot) (*Update, bool) {
	u := &Update{Snapshot: *next, Base: prev.Seq, Removed: []LockKey{}}
	u.Locks, u.locksJSON = []LockEntry{}, []json.RawMessage{}
	enc := prev.encoded() && next.encoded()
	i := 0
	for k := range next.Locks {
		e := &next.Locks[k]
		key := keyOf(e)
		for i < len(prev.Locks) && compareKeys(keyOf(&prev.Locks[i]), key) < 0 {
			u.Removed = append(u.Removed, keyOf(&prev.Locks[i]))
			i++
		}
		if i < len(prev.Locks) && compareKeys(keyOf(&prev.Locks[i]), key) == 0 {
			same := enc && bytes.Equal(prev.locksJSON[i], next.locksJSON[k])
			i++
			if same {
				continue
			}
		}
		u.Locks = append(u.Locks, *e)
		if enc {
			u.locksJSON = append(u.locksJSON, next.locksJSON[k])
		}
	}
	for ; i < len(prev.Locks); i++ {
		u.Removed = append(u.Removed, keyOf(&prev.Locks[i]))
	}
	if 2*(len(u.Locks)+len(u.Removed)) >= max(len(next.Locks), 1) {
		return nil, false
	}
	return u, true
}

// frameEvent frames data as the server-sent event named event: a data
// field a line of data, then an empty line.
func frameEvent(event string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(event) + len(data) + 32)
	if event != "" {
		fmt.Fprintf(&b, "event: %s\n", event)
	}
	if !bytes.ContainsAny(data, "\r\n") {
		// One line, as every JSON encoded here is: not copied twice.
		b.WriteString("data: ")
		b.Write(data)
		b.WriteString("\n\n")
		return b.Bytes()
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.ReplaceAll(line, []byte("\r"), nil))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// allPage returns the index page of the snapshot with every card,
// rendered by render the first time a page asks for it and shared by
// every page after.
func (p *published) allPage(render func() ([]byte, error)) ([]byte, error) {
	p.all.once.Do(func() { p.all.html, p.all.err = render() })
	return p.all.html, p.all.err
}

// firstPage returns the index page of the snapshot with its first cards
// worded at now: rendered by render at the first request of each second
// and shared by the others of that second, so that a hundred pages
// opening at once render it once.
func (p *published) firstPage(now time.Time, render func(now time.Time) ([]byte, error)) ([]byte, error) {
	p.first.mu.Lock()
	defer p.first.mu.Unlock()
	if sec := now.Unix(); p.first.html == nil || p.first.sec != sec {
		html, err := render(now)
		if err != nil {
			return nil, err
		}
		p.first.html, p.first.sec = html, sec
	}
	return p.first.html, nil
}
