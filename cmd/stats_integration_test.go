package cmd

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// TestIntegrationStatsAndTimeoutAuto: on the real API server, a contender
// that waited for a hold is counted with its wait by lockctl stats; with
// three holds recorded, acquire --timeout auto says its budget when it
// starts waiting and gets the lock within it, and a --timeout shorter than
// the expected wait is warned of at once.
func TestIntegrationStatsAndTimeoutAuto(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	run := func(args ...string) (string, string) {
		t.Helper()
		out, errOut, code := lockctlIn(t, env, ns, args...)
		require.Equal(t, cmdutil.CodeOK, code, "%v: %s", args, errOut)
		return out, errOut
	}
	acquire := func(build string, more ...string) []string {
		return append(append([]string{"acquire", "staging"}, identityFlags("web", build)...), more...)
	}
	release := func(build string) []string {
		return append([]string{"release", "staging"}, identityFlags("web", build)...)
	}
	// queued waits until build has joined the queue.
	queued := func(build string) {
		t.Helper()
		require.Eventually(t, func() bool {
			cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
			if err != nil {
				return false
			}
			rec, err := record.Decode(cm)
			return err == nil && len(rec.Waiters) == 1 && rec.Waiters[0].Build == build
		}, time.Minute, 10*time.Millisecond, "build %s waits", build)
	}
	// waiting starts an acquire that waits, and returns its stderr and end.
	waiting := func(args ...string) (*syncWriter, <-chan int) {
		errOut := &syncWriter{writes: make(chan string, 100)}
		done := make(chan int, 1)
		go func() {
			f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: errOut})
			err := Run(t.Context(), f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns))
			done <- cmdutil.ExitCode(err)
		}()
		return errOut, done
	}

	// Build 1 takes the free lock; 2 waits for it.
	run(acquire("1")...)
	_, done := waiting(acquire("2")...)
	queued("2")
	run(release("1")...)
	require.Equal(t, cmdutil.CodeOK, <-done)
	run(release("2")...)

	out, _ := run("stats", "staging", "-o", "json")
	var s stats.LockStats
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	assert.Equal(t, "staging", s.Spec.Target)
	assert.Equal(t, 2, s.Status.Holds, out)
	assert.Equal(t, 2, s.Status.Waits, "both holds say how long they were waited for")
	require.NotNil(t, s.Status.Wait)
	assert.Equal(t, 2, s.Status.Ended[stats.EndedReleased])

	// NOTE: the holds above last milliseconds, less than the record's
	// clock (the API server's, estimated from its answers) tells apart.
	// The budget is checked on a history of holds of known length: five
	// of ten minutes, and a holder whose hold expires in two seconds.
	now := time.Now()
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(now.Add(d)) }
	id := func(build string) record.Identity {
		return record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: build}
	}
	rec := record.Record{Target: "api", Policy: record.PolicyNewest, Updated: at(0),
		Holder: record.Claim{Identity: id("10"), ClaimID: "h10", Since: at(-time.Minute), Expires: ptrMicro(now.Add(2 * time.Second))}}
	for i := range 5 {
		start := time.Duration(i-6) * time.Hour
		rec.History = append(rec.History, record.HistoryEntry{Identity: id(strconv.Itoa(i)), Since: at(start), Until: at(start + 10*time.Minute),
			Ended: record.EndReleased, Queued: ptrMicro(now.Add(start - time.Duration(i)*time.Minute))})
	}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm := lockConfigMap(t, "api", rec.Holder)
	cm.Namespace, cm.UID = ns, ""
	cm.Annotations[record.RecordAnnotation] = string(raw)
	_, err = env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	require.NoError(t, err)

	out, _ = run("stats", "api", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	assert.Equal(t, 5, s.Status.Holds)
	assert.Equal(t, 10*time.Minute, s.Status.Hold.P90.Duration)
	assert.Equal(t, 4*time.Minute, s.Status.Wait.Max.Duration)

	apiAcquire := func(build string, more ...string) []string {
		return append([]string{"acquire", "api", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", build}, more...)
	}
	_, errOut, code := lockctlIn(t, env, ns, apiAcquire("11", "--timeout", "auto")...)
	assert.Equal(t, cmdutil.CodeOK, code, "served within its budget once the hold expires: %s", errOut)
	assert.Regexp(t, `waiting at most 11m1[45](\.\d+)?s`, errOut, "the rest of a 10-minute hold held for a minute, and a quarter")
	assert.Contains(t, errOut, `for lock "api" (--timeout auto: position 1, holds of ~10m (p90 10m) over the last 5)`)

	// Build 11 holds for an hour: a --timeout of a second is told at once.
	_, errOut, code = lockctlIn(t, env, ns, apiAcquire("12", "--timeout", "1s")...)
	assert.Equal(t, cmdutil.CodeTimeout, code, errOut)
	assert.Regexp(t, `warning: lock "api": at position 1 with holds of ~10m, expected wait (10m|9m59s) exceeds --timeout 1s`, errOut,
		"build 11 has held for a moment of its hold of ten minutes")
}
