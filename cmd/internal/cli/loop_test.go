package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/scheduler"
)

func TestLoopOptionsFlagsOverrideConfig(t *testing.T) {
	t.Parallel()
	cfg, err := scheduler.ParseConfig([]byte("maxConcurrency: 3\ntimeouts: {pending: 2m, running: 1h}\nworkers: 2\npodNamespace: pods\n"), "c.yaml")
	require.NoError(t, err)
	l := LoopFlags{MaxConcurrency: 9, PendingTimeout: time.Minute, Workers: 4}
	changed := func(name string) bool { return name == "max-concurrency" || name == "pending-timeout" }
	lo, err := LoopOptions(cfg, &l, &ClusterFlags{PodNamespace: "other"}, &RetentionFlags{}, "", changed)
	require.NoError(t, err)
	assert.Equal(t, 9, lo.MaxConcurrency, "flag wins")
	assert.Equal(t, time.Minute, lo.PendingTimeout, "flag wins")
	assert.Equal(t, time.Hour, lo.RunningTimeout, "config kept")
	assert.Equal(t, 2, lo.Workers, "config kept when the flag is not given")
	assert.Equal(t, "pods", lo.PodNamespace, "--pod-namespace not given")
	assert.NotNil(t, lo.Prune, "the loop prunes")

	lo, err = LoopOptions(cfg, &l, &ClusterFlags{PodNamespace: "other"}, &RetentionFlags{}, "deploy-1", func(n string) bool { return n == "pod-namespace" })
	require.NoError(t, err)
	assert.Equal(t, "other", lo.PodNamespace, "--pod-namespace given")
	assert.Equal(t, "deploy-1", lo.OnlyJob)
	assert.Nil(t, lo.Prune, "one job's loop does not prune")
}
