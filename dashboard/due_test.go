package dashboard

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestDueOf: an entry is judged again when its state changes with the
// clock (the holder's expiry, a freeze's end, a waiter's next ageing
// step), or at every refresh when its view depends on more (a pod, a wait
// estimate counting down, a break-glass grant).
func TestDueOf(t *testing.T) {
	now := time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.MicroTime { m := metav1.NewMicroTime(now.Add(d)); return &m }
	held := func(st lock.LockViewStatus) *lock.LockView {
		if st.Holder == nil {
			st.Holder = &record.Claim{Since: *at(-time.Minute), Expires: at(time.Hour)}
		}
		st.State, st.Alive = lock.StateHeld, true
		return &lock.LockView{Status: st}
	}
	for _, tc := range []struct {
		name     string
		l        *lock.LockView
		due      time.Time
		volatile bool
	}{
		{name: "a holder's expiry", l: held(lock.LockViewStatus{}), due: now.Add(time.Hour)},
		{name: "expired: nothing more with time", l: &lock.LockView{Status: lock.LockViewStatus{State: lock.StateStale,
			Holder: &record.Claim{Expires: at(-time.Second)}}}},
		{name: "a waiter's next ageing step", l: held(lock.LockViewStatus{Waiters: []record.Claim{
			{Since: *at(-15 * time.Minute), Priority: record.PriorityLow}}}), due: now.Add(5 * time.Minute)},
		{name: "a waiter aged to high ages no more", l: held(lock.LockViewStatus{Waiters: []record.Claim{
			{Since: *at(-25 * time.Minute)}}}), due: now.Add(time.Hour)},
		{name: "a freeze's end", l: &lock.LockView{Status: lock.LockViewStatus{State: lock.StateFree,
			Freeze: &record.Freeze{Until: *at(30 * time.Minute)}}}, due: now.Add(30 * time.Minute)},
		{name: "a holder in a pod", l: held(lock.LockViewStatus{Holder: &record.Claim{Pod: &record.PodRef{Namespace: "ci", Name: "p"}}}), volatile: true},
		{name: "an estimate counting down", l: held(lock.LockViewStatus{EstimatedWait: "about 9 min"}), due: now.Add(time.Hour), volatile: true},
		{name: "an estimate of a free lock's queue does not", l: &lock.LockView{Status: lock.LockViewStatus{State: lock.StateFree,
			EstimatedWait: "about 9 min"}}},
		{name: "a break-glass grant", l: held(lock.LockViewStatus{BreakGlass: "ops may write until …"}), due: now.Add(time.Hour), volatile: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, volatile := dueOf(tc.l, now)
			assert.True(t, tc.due.Equal(due), "due %s, want %s", due, tc.due)
			assert.Equal(t, tc.volatile, volatile)
		})
	}
}
