package cli

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/slogtest"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/term/termtest"
	"github.com/lockctl/lockctl/internal/base/logutil"
)

// TestLogrusHandlerIsASlogHandler runs the standard library's own checks
// of a slog.Handler on the handler, reading each entry back from logrus
// (its fields, their dotted group keys made nested again). One check
// cannot hold: logrus stamps an entry that has no time with its own (the
// console then writes its clock's time, never the entry's).
func TestLogrusHandlerIsASlogHandler(t *testing.T) {
	t.Parallel()
	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.TraceLevel)
	err := slogtest.TestHandler(newLogrusHandler(logrus.NewEntry(logger)), func() []map[string]any {
		var out []map[string]any
		for _, e := range hook.AllEntries() {
			m := map[string]any{slog.TimeKey: e.Time, slog.LevelKey: e.Level, slog.MessageKey: e.Message}
			for k, v := range e.Data {
				nest(m, strings.Split(k, "."), v)
			}
			out = append(out, m)
		}
		return out
	})
	var failed []string
	for _, e := range unjoin(err) {
		if !strings.Contains(e.Error(), "a Handler should ignore a zero Record.Time") {
			failed = append(failed, e.Error())
		}
	}
	assert.Empty(t, failed, "slogtest")
}

// nest sets v at the path of keys in m, making the maps between.
func nest(m map[string]any, keys []string, v any) {
	for _, k := range keys[:len(keys)-1] {
		sub, ok := m[k].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[k] = sub
		}
		m = sub
	}
	m[keys[len(keys)-1]] = v
}

// unjoin returns the errors errors.Join joined, or err alone.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// TestLibraryLinesLookLikeTheCLIs: an entry a library package logs to the
// Factory's *slog.Logger is written on the console exactly as the same
// entry logged through the CLI's own logrus logger: the level, the
// message, the fields (a logger's With fields and the entry's own, a
// later value of a key replacing an earlier one), in the console's text
// and JSON (JX_LOG_FORMAT=json) forms.
func TestLibraryLinesLookLikeTheCLIs(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			err := errors.New("connection refused")
			written := func(log func(f *Factory)) string {
				c, buf, _ := termtest.Console(t, false, 0, map[string]string{"JX_LOG_FORMAT": format})
				log(&Factory{Log: termtest.Logger(c)})
				return buf.String()
			}
			want := written(func(f *Factory) {
				f.Log.WithFields(logrus.Fields{"job": "deploy-1", "from": "pending", "to": "success"}).Info("job state changed")
				f.Log.WithField("pod", "ci/{app=web}").WithField("pod", "ci/web-1").WithField("container", "main").
					WithField("err", err).Warn("cannot stream container logs")
				f.Log.WithError(err).WithField("waited", 90*time.Second).WithField("revivals", 2).Error("lost")
				f.Log.Debug("debug")
			})
			got := written(func(f *Factory) {
				log := f.Logger()
				log.With("job", "deploy-1").Info("job state changed", "from", "pending", "to", "success")
				log.With("pod", "ci/{app=web}").With("pod", "ci/web-1").Warn("cannot stream container logs", "container", "main", "err", err)
				log.Error("lost", "error", err, "waited", 90*time.Second, "revivals", 2)
				log.Debug("debug")
			})
			assert.Equal(t, want, got, "JX_LOG_FORMAT=%s", format)
			require.Equal(t, 4, strings.Count(want, "\n"), "every entry written: %s", want)
		})
	}
}

// TestLogrusHandlerLevels: each slog level is the logrus level that shows
// it, and whether an entry is written follows the logrus logger's level
// as it is when the entry is made (SetupLogging sets it after the loggers
// handed to the library are made).
func TestLogrusHandlerLevels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		slog slog.Level
		want logrus.Level
	}{
		{slog.LevelError + 4, logrus.ErrorLevel},
		{slog.LevelError, logrus.ErrorLevel},
		{slog.LevelWarn, logrus.WarnLevel},
		{slog.LevelInfo, logrus.InfoLevel},
		{slog.LevelInfo + 1, logrus.InfoLevel},
		{slog.LevelDebug, logrus.DebugLevel},
		{logutil.LevelTrace, logrus.TraceLevel},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, logrusLevel(tt.slog), "slog level %s", tt.slog)
	}

	logger, hook := test.NewNullLogger()
	logger.SetLevel(logrus.InfoLevel)
	f := &Factory{Log: logrus.NewEntry(logger)}
	log, run := f.Logger(), f.LibraryLog(slog.LevelWarn)
	log.Debug("hidden at info")
	logger.SetLevel(logrus.TraceLevel)
	log.Log(t.Context(), logutil.LevelTrace, "trace at -v 2")
	run.Info("the scheduler's info, hidden below -v 1")
	run.Warn("the scheduler's warning")
	var got []string
	for _, e := range hook.AllEntries() {
		got = append(got, e.Level.String()+" "+e.Message)
	}
	assert.Equal(t, []string{"trace trace at -v 2", "warning the scheduler's warning"}, got)

	f.Verbosity = 1
	f.LibraryLog(slog.LevelWarn).Info("the scheduler's info at -v 1")
	assert.Equal(t, "the scheduler's info at -v 1", hook.LastEntry().Message)
}
