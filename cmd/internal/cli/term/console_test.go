package term_test

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/cmd/internal/cli/term/termtest"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/internal/testing/clitest"
)

func TestFitWidth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		line  string
		width int
		want  string
	}{
		{name: "fits", line: "waiting", width: 80, want: "waiting"},
		{name: "one short of the width", line: "abcd", width: 5, want: "abcd"},
		{name: "as wide as the terminal", line: "abcde", width: 5, want: "abc…"},
		{name: "wider", line: "waiting for lock", width: 10, want: "waiting …"},
		{name: "runes, not bytes", line: "ééééé", width: 5, want: "ééé…"},
		{name: "tiny terminal", line: "abc", width: 1, want: "…"},
		{name: "the full form fits", line: "waiting for lock\nlock", width: 20, want: "waiting for lock"},
		{name: "a shorter form fits", line: "waiting for lock\nlock held\nlock", width: 12, want: "lock held"},
		{name: "no form fits: the last is cut", line: "waiting for lock\nlock held", width: 6, want: "lock…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := term.FitWidth(tt.line, tt.width)
			assert.Equal(t, tt.want, got, "fitWidth(%q, %d)", tt.line, tt.width)
			assert.Less(t, utf8.RuneCountInString(got), max(tt.width, 2), "never as wide as the terminal")
		})
	}
}

func TestConsoleLiveLine(t *testing.T) {
	t.Parallel()
	c, buf, clk := termtest.Console(t, true, 30, map[string]string{"NO_COLOR": "1"})
	log := termtest.Logger(c)
	c.SetStatus(func(now time.Time) string {
		return "waiting for lock \"staging\": held by acme/web@main#41 for " + now.Sub(termtest.Now).String()
	})
	log.WithField("lock", "staging").Debug("watch restarted")
	c.Statusf(term.StyleGood, nil, "lock %q acquired", "staging")
	require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond, "the live line is redrawn every second")
	before := len(buf.String())
	clk.Step(time.Second)
	require.Eventually(t, func() bool { return len(buf.String()) > before }, 5*time.Second, time.Millisecond, "redrawn")
	c.SetStatus(nil)

	live := term.ClearLine + "waiting for lock \"staging\": …"
	want := live +
		term.ClearLine + "DEBUG: watch restarted lock=staging\n" + live +
		term.ClearLine + "lock \"staging\" acquired\n" + live +
		live +
		term.ClearLine
	assert.Equal(t, want, buf.String(), "log lines go above the live line, which is cut to the terminal's 30 columns")
	for _, l := range strings.Split(buf.String(), term.ClearLine) {
		if !strings.HasSuffix(l, "\n") {
			assert.Less(t, utf8.RuneCountInString(l), 30, "the live line is never as wide as the terminal: %q", l)
		}
	}
}

func TestConsolePlainInCIHasNoColour(t *testing.T) {
	t.Parallel()
	c, buf, _ := termtest.Console(t, true, 80, map[string]string{"CI": "true"})
	c.Statusf(term.StyleGood, nil, "done")
	assert.Equal(t, "10:00:00 done\n", buf.String(), "a plain console writes no escape codes")
}

func TestConsoleAround(t *testing.T) {
	t.Parallel()
	c, buf, _ := termtest.Console(t, true, 80, map[string]string{"NO_COLOR": "1"})
	var logs bytes.Buffer
	c.SetStatus(func(time.Time) string { return "pod Running" })
	_, err := c.Around(&logs).Write([]byte("log line\n"))
	require.NoError(t, err)
	c.SetStatus(nil)
	assert.Equal(t, "log line\n", logs.String())
	assert.Equal(t, term.ClearLine+"pod Running"+term.ClearLine+term.ClearLine+"pod Running"+term.ClearLine, buf.String(),
		"the live line leaves before a container's output and comes back after it")
}

// TestConsoleStatusAndLogs: status lines, the live line and container logs
// written around it, as lockctl run shows them.
func TestConsoleStatusAndLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		live, color bool
		want        string
	}{
		{
			name: "plain",
			want: "10:00:00 lock acquired\n10:00:00 pod is Running\nlog line\n10:00:01 done\n",
		},
		{
			name: "live",
			live: true,
			want: "lock acquired\n" +
				term.ClearLine + "pod Running; 0s" + term.ClearLine + "pod is Running\n" + term.ClearLine + "pod Running; 0s" +
				term.ClearLine + "log line\n" + term.ClearLine + "pod Running; 0s" +
				term.ClearLine + "pod Running; 1s" +
				term.ClearLine + "done\n" + term.ClearLine + "pod Running; 1s" + term.ClearLine,
		},
		{
			name: "live in colour",
			live: true, color: true,
			want: "\033[32mlock acquired\033[0m\n" +
				term.ClearLine + "pod Running; 0s" + term.ClearLine + "pod is Running\n" + term.ClearLine + "pod Running; 0s" +
				term.ClearLine + "log line\n" + term.ClearLine + "pod Running; 0s" +
				term.ClearLine + "pod Running; 1s" +
				term.ClearLine + "\033[31mdone\033[0m\n" + term.ClearLine + "pod Running; 1s" + term.ClearLine,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testingclock.NewFakeClock(termtest.Now)
			var buf clitest.SyncBuffer
			env := map[string]string{}
			if !tt.color {
				env["NO_COLOR"] = "1"
			}
			d := term.New(&buf, term.Options{Clock: clk, Terminal: tt.live, Getenv: func(k string) string { return env[k] }})
			d.Statusf(term.StyleGood, nil, "lock acquired")
			d.SetStatus(func(now time.Time) string { return "pod Running; " + human.Duration(now.Sub(termtest.Now)) })
			d.Statusf(term.StyleNone, nil, "pod is Running")
			_, err := io.WriteString(d.Around(&buf), "log line\n")
			require.NoError(t, err)
			if tt.live {
				require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
			}
			before := len(buf.String())
			clk.Step(time.Second)
			if tt.live {
				require.Eventually(t, func() bool { return len(buf.String()) > before }, 5*time.Second, time.Millisecond, "redrawn each second")
			}
			d.Statusf(term.StyleBad, nil, "done")
			d.SetStatus(nil)
			assert.Equal(t, tt.want, buf.String())
		})
	}
}

func TestHumanDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		-time.Second: "0s", 42 * time.Second: "42s", time.Minute: "1m", 80 * time.Second: "1m20s",
		5*time.Minute + 10*time.Second: "5m10s", 3*time.Hour + 4*time.Minute: "3h4m", 72 * time.Hour: "3d",
	} {
		assert.Equal(t, want, human.Duration(d), "human.Duration(%s)", d)
	}
}

// TestConsoleTimestampsPerCI: plain lines start with the UTC time, except
// in the logs of GitHub Actions and GitLab CI, which time every line
// themselves; --timestamps overrides either way.
func TestConsoleTimestampsPerCI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   map[string]string
		stamp *bool // --timestamps; nil means auto
		want  string
	}{
		{name: "a pipe", want: "10:00:00 waiting\n10:00:00 ERROR: lost\n"},
		{name: "Jenkins", env: map[string]string{"CI": "true", "JENKINS_URL": "http://ci"}, want: "10:00:00 waiting\n10:00:00 ERROR: lost\n"},
		{name: "GitHub Actions", env: map[string]string{"CI": "true", "GITHUB_ACTIONS": "true"}, want: "waiting\nERROR: lost\n"},
		{name: "GitLab CI", env: map[string]string{"CI": "true", "GITLAB_CI": "true"}, want: "waiting\nERROR: lost\n"},
		{name: "GitLab CI, --timestamps=true", env: map[string]string{"GITLAB_CI": "true"}, stamp: ptr(true), want: "10:00:00 waiting\n10:00:00 ERROR: lost\n"},
		{name: "a pipe, --timestamps=false", stamp: ptr(false), want: "waiting\nERROR: lost\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, buf, _ := termtest.Console(t, false, 80, tt.env)
			if tt.stamp != nil {
				c.SetTimestamps(*tt.stamp)
			}
			c.Statusf(term.StyleNone, nil, "waiting")
			f := c.LogFormatter()
			b, err := f.Format(&logrus.Entry{Level: logrus.ErrorLevel, Message: "lost"})
			require.NoError(t, err)
			_, _ = buf.Write(b)
			assert.Equal(t, tt.want, buf.String(), tt.name)
		})
	}
	assert.Equal(t, "GitHub Actions", term.TimestampedCI(func(k string) string { return map[string]string{"GITHUB_ACTIONS": "true"}[k] }))
	assert.Empty(t, term.TimestampedCI(func(string) string { return "" }))
}

func ptr[T any](v T) *T { return &v }
