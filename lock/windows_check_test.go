package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCheckFreezeWindowSchedule(t *testing.T) {
	t.Parallel()
	// 2026-12-03 is a Thursday.
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		schedule string
		duration time.Duration
		wantErr  string
	}{
		{name: "nightly", schedule: "0 22 * * *", duration: 8 * time.Hour},
		{name: "a minute free every day", schedule: "0 22 * * *", duration: 23*time.Hour + 59*time.Minute},
		{name: "yearly", schedule: "0 0 1 1 *", duration: time.Hour},
		{name: "the 29th of February, in 2028", schedule: "0 0 29 2 *", duration: time.Hour, wantErr: "never fires within a year"},
		{name: "the 30th of February", schedule: "0 0 30 2 *", duration: time.Hour, wantErr: "never fires within a year"},
		{name: "every minute for a day", schedule: "* * * * *", duration: 24 * time.Hour, wantErr: "frozen all the time"},
		{name: "every minute for a minute", schedule: "* * * * *", duration: time.Minute, wantErr: "frozen all the time"},
		{name: "every minute for 59s", schedule: "* * * * *", duration: 59 * time.Second},
		{name: "hourly for 90 minutes", schedule: "0 * * * *", duration: 90 * time.Minute, wantErr: "frozen all the time"},
		{name: "daily for a week", schedule: "@daily", duration: 7 * 24 * time.Hour, wantErr: "frozen all the time"},
		{name: "weekdays for a day", schedule: "0 0 * * 1-5", duration: 24 * time.Hour},
		{name: "weekdays for three days", schedule: "0 0 * * 1-5", duration: 72 * time.Hour, wantErr: "frozen all the time"},
		{name: "twice a day, unevenly, for 12h", schedule: "0 6,20 * * *", duration: 12 * time.Hour},
		{name: "twice a day, unevenly, for 14h", schedule: "0 6,20 * * *", duration: 14 * time.Hour, wantErr: "frozen all the time"},
		{name: "in Berlin, nightly", schedule: "CRON_TZ=Europe/Berlin 0 22 * * *", duration: 8 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := record.FreezeWindow{Name: "w", Schedule: tt.schedule, Duration: metav1.Duration{Duration: tt.duration}, Reason: "r"}
			err := record.CheckFreezeWindowSchedule(w, now)
			if tt.wantErr == "" {
				assert.NoError(t, err, "%s for %s", tt.schedule, tt.duration)
				return
			}
			require.Error(t, err, "%s for %s", tt.schedule, tt.duration)
			assert.Contains(t, err.Error(), tt.wantErr)
			var we *record.WindowEntryError
			require.ErrorAs(t, err, &we)
			assert.Equal(t, "schedule", we.Field)
		})
	}
}

func TestValidateFreezeWindowTargets(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		targets []string
		wantErr string
	}{
		{targets: []string{"production", "staging-2"}},
		{targets: []string{"Production"}, wantErr: `window 1 ("w"): targets "Production": not a namespace name`},
		{targets: []string{"prod_eu"}, wantErr: `targets "prod_eu": not a namespace name`},
		{targets: []string{"a.b"}, wantErr: `targets "a.b": not a namespace name`},
	} {
		err := ValidateFreezeWindow(record.FreezeWindow{Name: "w", Schedule: "@daily", Duration: metav1.Duration{Duration: time.Hour}, Reason: "r", Targets: tt.targets})
		if tt.wantErr == "" {
			assert.NoError(t, err, "%q", tt.targets)
			continue
		}
		require.Error(t, err, "%q", tt.targets)
		assert.Contains(t, err.Error(), tt.wantErr)
	}
}
