package record

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// recordedHistory reads a history as `lockctl history -o json` prints it,
// from testdata/histories.
func recordedHistory(t *testing.T, name string) []HistoryEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "histories", name))
	require.NoError(t, err)
	var h History
	require.NoError(t, json.Unmarshal(data, &h), name)
	return h.Entries
}

func TestEstimateWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	windows, err := ParseFreezeWindows([]byte(`
windows:
- {name: standup, schedule: "5 10 * * *", duration: 1h, reason: standup, targets: [production]}
`))
	require.NoError(t, err)
	freeze := &Freeze{Reason: "release party", Until: metav1.NewMicroTime(now.Add(30 * time.Minute))}

	tests := []struct {
		name      string
		history   string
		in        EstimateInput
		want      string // "" means no estimate
		wantBasis string
	}{
		{
			name: "regular holds, first in the queue", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(time.Minute)},
			want: "about 3 min", wantBasis: "median hold 4m over the last 20",
		},
		{
			name: "regular holds, third in the queue behind a hold of 4m", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(4 * time.Minute), Ahead: 2},
			want: "about 8 min", wantBasis: "median hold 4m over the last 20",
		},
		{
			name: "stale holder: its hold is over", history: "regular.json",
			in:   EstimateInput{Ahead: 2},
			want: "about 8 min", wantBasis: "median hold 4m over the last 20",
		},
		{
			name: "stale holder, nobody ahead", history: "regular.json",
			in:   EstimateInput{},
			want: "any moment", wantBasis: "median hold 4m over the last 20",
		},
		{
			name: "the holder outlasted every past hold: overdue, one hold after it", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(10 * time.Minute), Ahead: 1},
			want: "about 4 min after the overdue holder ends", wantBasis: "the holder is overdue: held 10m, 6m past the median hold 4m over the last 20",
		},
		{
			name: "the holder outlasted every past hold: the first in line is next", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(10 * time.Minute)},
			want: "when the overdue holder ends", wantBasis: "the holder is overdue: held 10m, 6m past the median hold 4m over the last 20",
		},
		{
			name: "the holder outlasted every past hold: third in line", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(10 * time.Minute), Ahead: 2},
			want: "about 8 min after the overdue holder ends", wantBasis: "the holder is overdue: held 10m, 6m past the median hold 4m over the last 20",
		},
		{
			name: "only two past holds lasted as long as the holder has: overdue", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(250 * time.Second), Ahead: 1},
			want: "about 4 min after the overdue holder ends", wantBasis: "the holder is overdue: held 4m, 21s past the median hold 4m over the last 20",
		},
		{
			name: "three past holds lasted as long as the holder has", history: "regular.json",
			in:   EstimateInput{HolderSince: ago(247 * time.Second)},
			want: "about 5 s", wantBasis: "median hold 4m over the last 20",
		},
		{
			name: "holds spread wide: a range", history: "spread.json",
			in:   EstimateInput{Ahead: 1},
			want: "2-12 min", wantBasis: "median hold 7m over the last 7, holds of 2m-12m",
		},
		{
			name: "four holds: shortest to longest, one figure once rounded", history: "four.json",
			in:   EstimateInput{Ahead: 1},
			want: "about 4 min", wantBasis: "median hold 4m over the last 4, holds of 3m50s-4m20s",
		},
		{
			name: "two holds: nothing said", history: "short.json",
			in: EstimateInput{HolderSince: ago(time.Minute)},
		},
		{
			name: "no history: nothing said",
			in:   EstimateInput{HolderSince: ago(time.Minute), Freeze: freeze},
		},
		{
			name: "frozen: the turn waits for the freeze", history: "regular.json",
			in:   EstimateInput{Freeze: freeze},
			want: "about 30 min", wantBasis: "median hold 4m over the last 20; frozen until 2026-12-05T10:30:00Z",
		},
		{
			name: "a window opens before the turn", history: "regular.json",
			in:   EstimateInput{Target: "production", Windows: windows, HolderSince: ago(time.Minute), Ahead: 2},
			want: "about 1 h 15 min", wantBasis: "median hold 4m over the last 20; frozen until 2026-12-05T11:05:00Z",
		},
		{
			name: "the window freezes other locks only", history: "regular.json",
			in:   EstimateInput{Target: "staging", Windows: windows, HolderSince: ago(time.Minute), Ahead: 2},
			want: "about 10 min", wantBasis: "median hold 4m over the last 20",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.Now = now
			if tt.history != "" {
				in.History = recordedHistory(t, tt.history)
			}
			e := EstimateWait(in)
			if tt.want == "" {
				assert.Nil(t, e, "estimate of %s", tt.name)
				return
			}
			require.NotNil(t, e, tt.name)
			assert.Equal(t, tt.want, e.String(), tt.name)
			assert.Equal(t, tt.wantBasis, e.Basis(), tt.name)
			assert.LessOrEqual(t, e.Low, e.High, tt.name)
		})
	}
}

func TestEstimateString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		low, high time.Duration
		want      string
	}{
		{0, 0, "any moment"},
		{6 * time.Second, 6 * time.Second, "about 6 s"},
		{40 * time.Second, 2 * time.Minute, "40 s-2 min"},
		{8 * time.Minute, 15 * time.Minute, "8-15 min"},
		{90 * time.Minute, 90 * time.Minute, "about 1 h 30 min"},
		{time.Hour, 3 * time.Hour, "1-3 h"},
		{45 * time.Minute, 2 * time.Hour, "45 min-2 h"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, (&Estimate{Low: tt.low, High: tt.high}).String(), "%s..%s", tt.low, tt.high)
	}
	assert.Empty(t, (*Estimate)(nil).String())
	assert.Empty(t, (*Estimate)(nil).Basis())
}

func TestRoundEstimate(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want time.Duration }{
		{6300 * time.Millisecond, 6 * time.Second},
		{37 * time.Second, 35 * time.Second},
		{11*time.Minute + 29*time.Second, 11 * time.Minute},
		{23 * time.Minute, 25 * time.Minute},
		{68 * time.Minute, 75 * time.Minute},
		{7*time.Hour + 20*time.Minute, 7 * time.Hour},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, roundEstimate(tt.in), "round %s", tt.in)
	}
}
