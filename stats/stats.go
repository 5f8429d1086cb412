package stats

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// APIVersion and Kind of the objects lockctl stats prints.
const (
	APIVersion = lock.APIVersion
	KindStats  = "LockStats"
)

// How a hold ended, in the four words statistics and metrics use for the
// record's endings (lock.Ending).
const (
	// EndedReleased: released by its holder, handed to the next waiter
	// or not.
	EndedReleased = "released"
	// EndedExpired: its holder stopped renewing it (expired), or its pod
	// or node was lost, and a contender removed it.
	EndedExpired = "expired"
	// EndedSuperseded: a newer build of its branch asked it to stop
	// (run --cancel-in-progress), or its CI job ran again and took it over.
	EndedSuperseded = "superseded"
	// EndedForced: someone else broke it (release --force).
	EndedForced = "forced"
)

// Endings lists the words of EndingOf, in the order tables show them.
func Endings() []string {
	return []string{EndedReleased, EndedExpired, EndedSuperseded, EndedForced}
}

// EndingOf says how the hold e ended, in the words of Endings.
func EndingOf(e record.HistoryEntry) string {
	switch {
	case e.SupersededBy != "" || e.Ended == record.EndRanAgain:
		return EndedSuperseded
	case e.Ended == record.EndBroken:
		return EndedForced
	case e.Ended == record.EndExpired || e.Ended == record.EndLost:
		return EndedExpired
	}
	return EndedReleased
}

// LockStats is what lockctl stats shows of one lock: a Kubernetes-style
// object naming the lock, the window asked for in its spec, the figures in
// its status.
type LockStats struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              Spec   `json:"spec"`
	Status            Status `json:"status"`
}

// Spec is the lock and the window its statistics cover.
type Spec struct {
	// Target is the namespace whose lock it is.
	Target string `json:"target"`
	// Since is the start of the window asked for (--since); nil means
	// the whole recorded history.
	Since *metav1.Time `json:"since,omitempty"`
}

// Status is the figures of a lock over its window.
type Status struct {
	// From and To are the span the figures cover: from the start of the
	// window (or of the oldest recorded hold, when later) to the time of
	// reading. From is nil when nothing is recorded.
	From *metav1.Time `json:"from,omitempty"`
	To   metav1.Time  `json:"to"`
	// Partial says the record does not reach back to Since: its history
	// is full (lock.MaxHistory holds) and its oldest hold began after
	// Since, so older holds are not counted.
	Partial bool `json:"partial,omitempty"`
	// Holds is how many holds ended within the window.
	Holds int `json:"holds"`
	// Hold is how long those holds lasted; nil without holds.
	Hold *Spread `json:"hold,omitempty"`
	// Waits is how many of those holds say how long their holder waited
	// for them (holds ended by lockctl from record version 1.9 on).
	Waits int `json:"waits"`
	// Wait is how long their holders waited, from joining the queue to
	// taking the lock (0 for a free lock); nil without waits.
	Wait *Spread `json:"wait,omitempty"`
	// Ended counts the holds by how they ended (EndingOf); every word of
	// Endings is there, 0 included.
	Ended map[string]int `json:"ended"`
	// BreakGlass is how many break-glass grants were made in the window.
	BreakGlass int `json:"breakGlass"`
	// IgnoredFreeze is how many of the holds were taken in spite of a
	// freeze (--ignore-freeze).
	IgnoredFreeze int `json:"ignoredFreeze"`
	// Frozen is how long the lock was frozen within the window, as its
	// record saw it (freezes that ended, and the one in force).
	Frozen metav1.Duration `json:"frozen"`
	// BusiestHours are the hours of the day (UTC) in which most holds
	// began, busiest first, at most three, with their holds.
	BusiestHours []HourLoad `json:"busiestHours,omitempty"`
}

// Spread is the median, the 90th percentile and the largest of a set of
// durations.
type Spread struct {
	P50 metav1.Duration `json:"p50"`
	P90 metav1.Duration `json:"p90"`
	Max metav1.Duration `json:"max"`
}

// HourLoad is an hour of the day and the holds that began in it.
type HourLoad struct {
	// Hour is the hour of the day, 0 to 23, in UTC.
	Hour int `json:"hour"`
	// Holds is how many holds began in that hour (of any day).
	Holds int `json:"holds"`
	// Held is how long those holds lasted together.
	Held metav1.Duration `json:"held"`
}

// busiestHours is how many hours Status.BusiestHours lists at most.
const busiestHours = 3

// Summarize makes the statistics of the lock whose record is rec, in lock
// namespace namespace, over the window from since (zero: the whole record)
// to now.
func Summarize(namespace string, rec *record.Record, since, now time.Time) *LockStats {
	s := &LockStats{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: KindStats},
		ObjectMeta: metav1.ObjectMeta{Name: record.Name(rec.Target), Namespace: namespace},
		Spec:       Spec{Target: rec.Target},
	}
	if !since.IsZero() {
		t := metav1.NewTime(since)
		s.Spec.Since = &t
	}
	st := &s.Status
	st.To = metav1.NewTime(now)
	st.Ended = map[string]int{}
	for _, e := range Endings() {
		st.Ended[e] = 0
	}
	var holds, waits []time.Duration
	var hours [24]HourLoad
	var oldest time.Time
	for _, e := range rec.History {
		if oldest.IsZero() || e.Since.Time.Before(oldest) {
			oldest = e.Since.Time
		}
		// NOTE: a hold that ended "after" now is counted: now is an
		// estimate of the API server's clock, the record's times are its
		// own.
		if e.Until.Time.Before(since) {
			continue
		}
		st.Holds++
		held := e.Held()
		holds = append(holds, held)
		if w, ok := e.Wait(); ok {
			waits = append(waits, w)
		}
		st.Ended[EndingOf(e)]++
		if e.IgnoredFreeze != "" {
			st.IgnoredFreeze++
		}
		h := &hours[e.Since.UTC().Hour()]
		h.Holds++
		h.Held.Duration += held
	}
	if !oldest.IsZero() {
		from := oldest
		if since.After(from) {
			from = since
		}
		st.From = &metav1.Time{Time: from}
		st.Partial = !since.IsZero() && len(rec.History) >= record.MaxHistory && oldest.After(since)
	} else if !since.IsZero() {
		st.From = &metav1.Time{Time: since}
	}
	st.Hold, st.Waits, st.Wait = spread(holds), len(waits), spread(waits)
	for _, g := range rec.BreakGlass {
		if !g.At.Time.Before(since) {
			st.BreakGlass++
		}
	}
	st.Frozen.Duration = frozen(rec, since, now)
	for i := range hours {
		hours[i].Hour = i
	}
	busy := slices.DeleteFunc(hours[:], func(h HourLoad) bool { return h.Holds == 0 })
	slices.SortStableFunc(busy, func(a, b HourLoad) int {
		return cmp.Or(cmp.Compare(b.Holds, a.Holds), cmp.Compare(b.Held.Duration, a.Held.Duration))
	})
	st.BusiestHours = busy[:min(len(busy), busiestHours)]
	return s
}

// frozen is how long rec's freezes (those that ended and the one in
// force) overlap the window from since to now.
func frozen(rec *record.Record, since, now time.Time) time.Duration {
	var d time.Duration
	overlap := func(from, until time.Time) {
		if from.Before(since) {
			from = since
		}
		if until.After(now) {
			until = now
		}
		if until.After(from) {
			d += until.Sub(from)
		}
	}
	for _, f := range rec.Frozen {
		overlap(f.Since.Time, f.Until.Time)
	}
	if f := rec.Freeze; f != nil {
		overlap(f.Since.Time, f.Until.Time)
	}
	return d
}

// spread is the Spread of ds, nil for none.
func spread(ds []time.Duration) *Spread {
	if len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	return &Spread{
		P50: metav1.Duration{Duration: Quantile(ds, 0.5)},
		P90: metav1.Duration{Duration: Quantile(ds, 0.9)},
		Max: metav1.Duration{Duration: ds[len(ds)-1]},
	}
}

// Quantile is the q-quantile (0 ≤ q ≤ 1) of sorted, which must not be
// empty, interpolated between the two nearest values.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + time.Duration((pos-float64(i))*float64(sorted[i+1]-sorted[i]))
}
