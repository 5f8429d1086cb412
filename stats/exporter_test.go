package stats_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/metrics"
	"github.com/lockctl/lockctl/stats"
)

// lockCM is the ConfigMap of rec, as lockctl stores it.
func lockCM(t *testing.T, rec *record.Record, annotations ...string) *corev1.ConfigMap {
	t.Helper()
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name(rec.Target), Namespace: "ci",
		Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
		Annotations: map[string]string{record.RecordAnnotation: string(raw)},
	}}
	for i := 0; i+1 < len(annotations); i += 2 {
		cm.Annotations[annotations[i]] = annotations[i+1]
	}
	return cm
}

// scrape returns the families reg writes, parsed as Prometheus does.
func scrape(t *testing.T, reg *metrics.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reg.WriteText(&b))
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(b.String()))
	require.NoError(t, err, b.String())
	return fams
}

// value is the value of the series of fam whose labels include want.
func value(t *testing.T, fams map[string]*dto.MetricFamily, fam string, want map[string]string) (float64, bool) {
	t.Helper()
	f, ok := fams[fam]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestExporter(t *testing.T) {
	t.Parallel()
	clk := testingclock.NewFakePassiveClock(t0.Add(time.Hour))
	reg := metrics.NewRegistry()
	e, err := stats.NewExporter(reg, stats.ExporterOptions{Clock: clk})
	require.NoError(t, err)
	staging := map[string]string{"namespace": "ci", "target": "staging"}
	with := func(more ...string) map[string]string {
		out := map[string]string{"namespace": "ci", "target": "staging"}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}

	// Seen first in the initial list: its past is not counted.
	rec := &record.Record{Target: "staging", Policy: record.PolicyNewest,
		Holder:  record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "2"}, ClaimID: "h2", Since: micro(t0), Queued: microPtr(t0.Add(-time.Minute)), Expires: microPtr(t0.Add(2 * time.Hour))},
		History: []record.HistoryEntry{hold("1", t0.Add(-time.Hour), time.Minute, 30*time.Minute, record.EndHandedOver)},
	}
	e.ObserveLock(lockCM(t, rec), true)
	fams := scrape(t, reg)
	for _, fam := range []string{"lockctl_lock_hold_seconds", "lockctl_lock_wait_seconds"} {
		n, ok := value(t, fams, fam, staging)
		assert.True(t, ok, "%s is there from the start", fam)
		assert.Zero(t, n, "%s: the past before the process is not counted", fam)
	}
	n, _ := value(t, fams, "lockctl_lock_holds_ended_total", with("ended", "released"))
	assert.Zero(t, n)
	n, _ = value(t, fams, "lockctl_lock_held", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_held_since_timestamp_seconds", staging)
	assert.Equal(t, float64(t0.Unix()), n)
	n, _ = value(t, fams, "lockctl_lock_enforcement", with("mode", "none"))
	assert.Equal(t, 1.0, n)
	_, ok := value(t, fams, "lockctl_lock_waiting_since_timestamp_seconds", staging)
	assert.False(t, ok, "no waiters, no series")

	// A waiter joins, the holder hands over to it after 4 minutes' wait,
	// a grant is made; the lock is enforced and frozen.
	waiter := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "3"}, ClaimID: "w3",
		Since: micro(t0.Add(10 * time.Minute)), Queued: microPtr(t0.Add(10 * time.Minute)), Expires: microPtr(t0.Add(time.Hour))}
	rec.Waiters = []record.Claim{waiter}
	e.ObserveLock(lockCM(t, rec), false)
	fams = scrape(t, reg)
	n, _ = value(t, fams, "lockctl_lock_waiters_joined_total", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_waiters", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_waiting_since_timestamp_seconds", staging)
	assert.Equal(t, float64(t0.Add(10*time.Minute).Unix()), n)

	rec.History = append(rec.History, hold("2", t0, time.Minute, 14*time.Minute, record.EndHandedOver))
	handed := waiter
	handed.Since, handed.HandedOver = micro(t0.Add(14*time.Minute)), true
	rec.Holder, rec.Waiters = handed, nil
	rec.BreakGlass = []record.GrantEntry{{User: "carol", At: micro(t0.Add(15 * time.Minute))}}
	rec.Freeze = &record.Freeze{Since: micro(t0), Until: micro(t0.Add(2 * time.Hour))}
	e.ObserveLock(lockCM(t, rec, record.EnforcedAnnotation, "deny"), false)
	// The same version again (a relist) counts nothing more.
	e.ObserveLock(lockCM(t, rec, record.EnforcedAnnotation, "deny"), false)
	fams = scrape(t, reg)
	n, _ = value(t, fams, "lockctl_lock_hold_seconds", staging)
	assert.Equal(t, 1.0, n, "one hold ended since")
	n, _ = value(t, fams, "lockctl_lock_holds_ended_total", with("ended", "released"))
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_handovers_total", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_wait_seconds", staging)
	assert.Equal(t, 1.0, n, "the new holder's wait")
	h := fams["lockctl_lock_wait_seconds"].Metric[0].GetHistogram()
	assert.Equal(t, 240.0, h.GetSampleSum(), "it waited 4 minutes")
	n, _ = value(t, fams, "lockctl_lock_break_glass_grants_total", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_frozen", staging)
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_enforcement", with("mode", "deny"))
	assert.Equal(t, 1.0, n)
	n, _ = value(t, fams, "lockctl_lock_enforcement", with("mode", "none"))
	assert.Zero(t, n)

	// A lock that appears after the first list is counted from its start.
	other := &record.Record{Target: "prod", Policy: record.PolicyNewest, Holder: rec.Holder,
		History: []record.HistoryEntry{hold("1", t0, 0, time.Minute, record.EndExpired)}}
	e.ObserveLock(lockCM(t, other), false)
	n, _ = value(t, scrape(t, reg), "lockctl_lock_holds_ended_total", map[string]string{"target": "prod", "ended": "expired"})
	assert.Equal(t, 1.0, n)

	// Deleted: its series go.
	e.ForgetLock(lockCM(t, rec))
	fams = scrape(t, reg)
	for name := range fams {
		_, ok := value(t, fams, name, staging)
		assert.False(t, ok, "%s of a deleted lock", name)
	}
}
