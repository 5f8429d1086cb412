package cli

import (
	"context"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/scheduler"
)

// TestWatchFlagsUntil: --timeout ends a watch without error, as its end by
// design; the caller's own end, or no timeout, returns what the watch
// returns.
func TestWatchFlagsUntil(t *testing.T) {
	t.Parallel()
	untilDone := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	w := WatchFlags{Watch: true, Timeout: time.Millisecond}
	assert.NoError(t, w.Until(t.Context(), untilDone), "a timeout ends -w without error")

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w.Timeout = time.Hour
	assert.ErrorIs(t, w.Until(ctx, untilDone), context.Canceled, "interrupted: the watch's error")

	w.Timeout = 0
	assert.ErrorIs(t, w.Until(ctx, untilDone), context.Canceled, "no timeout: the watch's error")

	w.Timeout = -time.Second
	err := w.Validate()
	require.EqualError(t, err, "invalid --timeout -1s: it cannot be negative")
	assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
}

// TestReadFlagsBind: the reading commands' groups bind their flags with
// the forms the command prints, and ValidateRead checks both groups.
func TestReadFlagsBind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		forms     printers.Forms
		args      []string
		wantFlags []string
		wantErr   string
	}{
		{name: "rows, wide", forms: printers.Forms{Wide: true, Table: true}, args: []string{"-w", "--timeout", "1m", "-o", "wide", "--no-headers", "--sort-by", ".metadata.name"},
			wantFlags: []string{"watch", "timeout", "output", "no-headers", "sort-by"}},
		{name: "rows, no wide", forms: printers.Forms{Table: true}, args: []string{"-o", "wide"},
			wantFlags: []string{"watch", "timeout", "output", "no-headers", "sort-by"}, wantErr: "this command has no wide table"},
		{name: "objects only", forms: printers.Forms{}, args: []string{"-o", "custom-columns=A:.a"},
			wantFlags: []string{"watch", "timeout", "output"}, wantErr: `invalid --output "custom-columns=A:.a"`},
		{name: "negative timeout", forms: printers.Forms{Table: true}, args: []string{"--timeout", "-1s"},
			wantFlags: []string{"watch", "timeout", "output", "no-headers", "sort-by"}, wantErr: "invalid --timeout -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			var w WatchFlags
			p := printers.PrintFlags{Forms: tt.forms}
			w.AddFlags(fs, "the locks")
			p.AddFlags(fs)
			var names []string
			fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
			assert.ElementsMatch(t, tt.wantFlags, names, "flags bound")
			require.NoError(t, fs.Parse(tt.args))
			out, err := ValidateRead(&w, &p)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.True(t, out.IsWide())
			assert.Equal(t, WatchFlags{Watch: true, Timeout: time.Minute}, w)
		})
	}
}

// TestContenderFlagsBind: the group binds its flags with each command's
// help, its defaults from NewContenderFlags, and --ignore-freeze as an
// override.
func TestContenderFlagsBind(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	c := NewContenderFlags(time.Hour)
	c.AddFlags(fs, ContenderUsage{TTL: "ttl help", Timeout: "timeout help", Progress: "progress help"})
	assert.Equal(t, "ttl help", fs.Lookup("ttl").Usage)
	assert.Equal(t, "progress help", fs.Lookup("progress").Usage)
	assert.True(t, IsOverride(fs.Lookup("ignore-freeze")), "--ignore-freeze is an override")
	require.NoError(t, fs.Parse([]string{"--policy", "fifo", "--priority", "high", "--timeout", "30s"}))
	assert.Equal(t, ContenderFlags{TTL: time.Hour, Timeout: 30 * time.Second, Policy: record.PolicyFIFO, Priority: record.PriorityHigh, Progress: "auto"}, c)
	assert.NoError(t, c.Validate())
}

// TestLoopFlagsApply: only the loop flags given override the config's
// options; a 0 the scheduler would read as its default is refused.
func TestLoopFlagsApply(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	l := NewLoopFlags()
	l.AddFlags(fs)
	require.NoError(t, fs.Parse([]string{"--workers", "2", "--running-timeout", "1h"}))
	require.NoError(t, l.Validate())
	opts := scheduler.Options{Workers: 8, RunningTimeout: time.Minute, PendingTimeout: 3 * time.Minute, MaxConcurrency: 4}
	l.Apply(&opts, fs.Changed)
	assert.Equal(t, scheduler.Options{Workers: 2, RunningTimeout: time.Hour, PendingTimeout: 3 * time.Minute, MaxConcurrency: 4}, opts)

	l.PendingTimeout = 0
	assert.EqualError(t, l.Validate(), "--pending-timeout must not be 0: give a duration such as 10m, or a negative one for never")
}

func TestEndFlags(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		flags   EndFlags
		want    time.Time
		wantErr string
	}{
		{name: "for", flags: EndFlags{For: 2 * time.Hour}, want: now.Add(2 * time.Hour)},
		{name: "until", flags: EndFlags{Until: "2026-12-24T08:00:00Z"}, want: time.Date(2026, 12, 24, 8, 0, 0, 0, time.UTC)},
		{name: "neither", wantErr: "say how long the freeze lasts with --for DURATION or --until TIME"},
		{name: "both", flags: EndFlags{For: time.Hour, Until: "2026-12-24T08:00:00Z"}, wantErr: "give either --for or --until, not both"},
		{name: "negative", flags: EndFlags{For: -time.Hour}, wantErr: "--for must be positive, got -1h0m0s"},
		{name: "not RFC 3339", flags: EndFlags{Until: "tomorrow"}, wantErr: `invalid --until "tomorrow": want an RFC 3339 time such as 2026-12-24T08:00:00Z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.flags.Validate("the freeze")
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr, tt.name)
				return
			}
			require.NoError(t, err, tt.name)
			got, err := tt.flags.End(now)
			require.NoError(t, err, tt.name)
			assert.Equal(t, tt.want, got, tt.name)
		})
	}
}
