package servertime

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	testingclock "k8s.io/utils/clock/testing"
)

func TestObserve(t *testing.T) {
	t.Parallel()
	local := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	server := local.Add(-10 * time.Minute) // the local clock is 10 min fast
	tests := []struct {
		name    string
		answers []time.Duration // sub-second phase of the server clock at each answer
		within  time.Duration
	}{
		{name: "one answer: within a second", answers: []time.Duration{300 * time.Millisecond}, within: 600 * time.Millisecond},
		{name: "answers at several phases narrow it", answers: []time.Duration{100 * time.Millisecond, 950 * time.Millisecond, 500 * time.Millisecond, 10 * time.Millisecond}, within: 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fc := testingclock.NewFakeClock(local)
			c := New(fc)
			for i, phase := range tt.answers {
				// An answer written at server time s, with a 20 ms round trip.
				s := server.Add(time.Duration(i)*10*time.Second + phase)
				sent := fc.Now().Add(time.Duration(i)*10*time.Second + phase - 10*time.Millisecond)
				c.Observe(sent, sent.Add(20*time.Millisecond), s.Truncate(time.Second))
			}
			assert.InDelta(t, float64(-10*time.Minute), float64(c.Offset()), float64(tt.within), "offset %s", c.Offset())
			assert.WithinDuration(t, server, c.Now(), tt.within, "Now follows the server")
		})
	}
}

func TestObserveStepped(t *testing.T) {
	t.Parallel()
	fc := testingclock.NewFakeClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	c := New(fc)
	now := fc.Now()
	c.Observe(now, now, now.Truncate(time.Second))
	// The server clock was stepped an hour ahead: the new answer wins.
	c.Observe(now, now, now.Add(time.Hour).Truncate(time.Second))
	assert.InDelta(t, float64(time.Hour), float64(c.Offset()), float64(time.Second))
}
