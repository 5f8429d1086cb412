package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/scheduler"
)

// LoopFlags are the reconcile loop's limits, timeouts and workers: a flag
// given overrides the --config file (Apply).
type LoopFlags struct {
	// MaxConcurrency is the global maximum of running jobs; 0 means no
	// limit.
	MaxConcurrency int
	// UnscheduledTimeout, PendingTimeout and RunningTimeout end a job
	// whose pod is not scheduled, not started or still running after
	// them; negative means never.
	UnscheduledTimeout time.Duration
	PendingTimeout     time.Duration
	RunningTimeout     time.Duration
	// RevivalLimit is how often a lost pod is recreated; negative means
	// no limit.
	RevivalLimit int
	// Workers is how many jobs are reconciled at once.
	Workers int
	// JobURLTemplate is the Go template of a job's status.url.
	JobURLTemplate string
}

// NewLoopFlags returns the group with the scheduler's defaults.
func NewLoopFlags() LoopFlags {
	return LoopFlags{
		UnscheduledTimeout: scheduler.DefaultUnscheduledTimeout,
		PendingTimeout:     scheduler.DefaultPendingTimeout,
		RunningTimeout:     scheduler.DefaultRunningTimeout,
		RevivalLimit:       scheduler.DefaultRevivalLimit,
		Workers:            scheduler.DefaultWorkers,
	}
}

// AddFlags binds --max-concurrency, the three timeouts, --revival-limit,
// --workers and --job-url-template.
func (l *LoopFlags) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&l.MaxConcurrency, "max-concurrency", l.MaxConcurrency, "global maximum of running jobs; 0 means no limit")
	fs.DurationVar(&l.UnscheduledTimeout, "unscheduled-timeout", l.UnscheduledTimeout, "error a job whose pod is not scheduled within this; negative means never")
	fs.DurationVar(&l.PendingTimeout, "pending-timeout", l.PendingTimeout, "error a job whose scheduled pod does not start within this; negative means never")
	fs.DurationVar(&l.RunningTimeout, "running-timeout", l.RunningTimeout, "abort a job whose pod runs longer than this; negative means never")
	fs.IntVar(&l.RevivalLimit, "revival-limit", l.RevivalLimit, "how often a lost or evicted pod is recreated before the job errors; negative means no limit")
	fs.IntVar(&l.Workers, "workers", l.Workers, "jobs reconciled at once")
	fs.StringVar(&l.JobURLTemplate, "job-url-template", l.JobURLTemplate, "Go template for a job's status.url, e.g. https://ci.example/{{.Spec.Job}}/{{.Status.BuildID}}")
}

// Validate refuses a negative --max-concurrency, no workers, and a 0
// timeout or revival limit: in scheduler.Options a zero means the default,
// so a 0 given on the command line is refused rather than silently
// becoming it.
func (l *LoopFlags) Validate() error {
	if l.MaxConcurrency < 0 {
		return cmdutil.FlagErrorf("--max-concurrency must be 0 (no limit) or more")
	}
	if l.Workers < 1 {
		return cmdutil.FlagErrorf("--workers must be at least 1")
	}
	for _, d := range []struct {
		name string
		val  time.Duration
	}{
		{"unscheduled-timeout", l.UnscheduledTimeout},
		{"pending-timeout", l.PendingTimeout},
		{"running-timeout", l.RunningTimeout},
	} {
		if d.val == 0 {
			return cmdutil.FlagErrorf("--%s must not be 0: give a duration such as 10m, or a negative one for never", d.name)
		}
	}
	if l.RevivalLimit == 0 {
		return cmdutil.FlagErrorf("--revival-limit must not be 0: give how often a lost pod is recreated, or a negative number for no limit")
	}
	return nil
}

// Apply sets in opts, read from the --config file, every flag of the group
// that changed reports as given: the command line wins over the file.
func (l *LoopFlags) Apply(opts *scheduler.Options, changed func(name string) bool) {
	for _, f := range []struct {
		name  string
		apply func()
	}{
		{"max-concurrency", func() { opts.MaxConcurrency = l.MaxConcurrency }},
		{"unscheduled-timeout", func() { opts.UnscheduledTimeout = l.UnscheduledTimeout }},
		{"pending-timeout", func() { opts.PendingTimeout = l.PendingTimeout }},
		{"running-timeout", func() { opts.RunningTimeout = l.RunningTimeout }},
		{"revival-limit", func() { opts.RevivalLimit = l.RevivalLimit }},
		{"workers", func() { opts.Workers = l.Workers }},
		{"job-url-template", func() { opts.JobURLTemplate = l.JobURLTemplate }},
	} {
		if changed(f.name) {
			f.apply()
		}
	}
}
