package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/scheduler"
)

// RetentionFlags are the reconcile loop's pruning flags.
type RetentionFlags struct {
	JobRetention time.Duration
	PodRetention time.Duration
}

// AddRetentionFlags binds --job-retention and --pod-retention.
func (r *RetentionFlags) AddRetentionFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&r.JobRetention, "job-retention", r.JobRetention, "prune job records this long after they finished; 0 keeps them")
	fs.DurationVar(&r.PodRetention, "pod-retention", r.PodRetention, "prune the pods of jobs this long after they finished; 0 keeps them")
}

// PruneOptions turns the flags given into PruneOptions: 0 (the config
// file's age, else the default) for a flag not given, negative (forever)
// for a flag given as 0.
func (r *RetentionFlags) PruneOptions(changed func(name string) bool) scheduler.PruneOptions {
	age := func(flag string, d time.Duration) time.Duration {
		switch {
		case !changed(flag):
			return 0
		case d <= 0:
			return -1
		}
		return d
	}
	return scheduler.PruneOptions{JobRetention: age("job-retention", r.JobRetention), PodRetention: age("pod-retention", r.PodRetention)}
}
