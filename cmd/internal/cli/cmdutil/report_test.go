package cmdutil

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/cmd/internal/cli/term/termtest"
)

func TestConsoleText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		terminal bool
		env      map[string]string
		want     string
	}{
		{
			name: "plain: every line has the time",
			want: "10:00:00 lock \"staging\" acquired\n" +
				"10:00:00 job state changed from=pending job=deploy-1 to=success\n" +
				"10:00:00 WARNING: cannot renew error=\"connection refused\" lock=staging\n" +
				"10:00:00 error: acquire lock \"staging\": boom\n",
		},
		{
			name:     "terminal in colour",
			terminal: true,
			want: "\033[32mlock \"staging\" acquired\033[0m\n" +
				"job state changed from=pending job=deploy-1 to=success\n" +
				"\033[33mWARNING\033[0m: cannot renew error=\"connection refused\" lock=staging\n" +
				"error: acquire lock \"staging\": boom\n",
		},
		{
			name:     "terminal with NO_COLOR",
			terminal: true,
			env:      map[string]string{"NO_COLOR": "1"},
			want: "lock \"staging\" acquired\n" +
				"job state changed from=pending job=deploy-1 to=success\n" +
				"WARNING: cannot renew error=\"connection refused\" lock=staging\n" +
				"error: acquire lock \"staging\": boom\n",
		},
		{
			name:     "terminal in CI is plain",
			terminal: true,
			env:      map[string]string{"CI": "true"},
			want: "10:00:00 lock \"staging\" acquired\n" +
				"10:00:00 job state changed from=pending job=deploy-1 to=success\n" +
				"10:00:00 WARNING: cannot renew error=\"connection refused\" lock=staging\n" +
				"10:00:00 error: acquire lock \"staging\": boom\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, buf, _ := termtest.Console(t, tt.terminal, 80, tt.env)
			log := termtest.Logger(c)
			c.Statusf(term.StyleGood, logrus.Fields{"lock": "staging"}, "lock %q acquired", "staging")
			log.WithFields(logrus.Fields{"job": "deploy-1", "from": "pending", "to": "success"}).Info("job state changed")
			log.WithField("lock", "staging").WithError(errors.New("connection refused")).Warn("cannot renew")
			PrintConsoleError(c, errors.New(`acquire lock "staging": boom`), 0)
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestConsoleJSON(t *testing.T) {
	t.Parallel()
	c, buf, _ := termtest.Console(t, true, 80, map[string]string{"JX_LOG_FORMAT": "json"})
	log := termtest.Logger(c)
	c.SetStatus(func(time.Time) string { return "never shown" })
	c.Statusf(term.StyleGood, logrus.Fields{"lock": "staging", "token": "42"}, "lock %q acquired", "staging")
	_, err := c.StatusWriter().Write([]byte("lock \"staging\" released\nsecond line\n"))
	require.NoError(t, err)
	log.WithFields(logrus.Fields{"job": "deploy-1", "from": "pending", "to": "success"}).Info("job state changed")
	PrintConsoleError(c, &FlagError{Err: errors.New("unknown flag: --nope"), Command: "lockctl acquire"}, 0)
	c.SetStatus(nil)

	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "every line is one JSON object: %q", line)
		assert.Equal(t, "2026-12-02T10:00:00Z", m["time"], "UTC time from the clock: %q", line)
		delete(m, "time")
		got = append(got, m)
	}
	assert.Equal(t, []map[string]any{
		{"level": "info", "msg": `lock "staging" acquired`, "lock": "staging", "token": "42"},
		{"level": "info", "msg": `lock "staging" released`},
		{"level": "info", "msg": "second line"},
		{"level": "info", "msg": "job state changed", "job": "deploy-1", "from": "pending", "to": "success"},
		{"level": "error", "msg": "unknown flag: --nope", "usage": "Run 'lockctl acquire --help' for usage."},
	}, got)
}

func TestConsoleQuiet(t *testing.T) {
	t.Parallel()
	c, buf, _ := termtest.Console(t, false, 0, nil)
	c.SetQuiet(true)
	log := termtest.Logger(c)
	c.Statusf(term.StyleNone, nil, "status")
	_, err := c.StatusWriter().Write([]byte("status too\n"))
	require.NoError(t, err)
	log.Warn("a warning")
	PrintConsoleError(c, errors.New("boom"), 0)
	assert.Equal(t, "10:00:00 WARNING: a warning\n10:00:00 error: boom\n", buf.String(), "-q drops status lines, never warnings or errors")
}
