package cli

import (
	"cmp"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
	"github.com/lockctl/lockctl/scheduler"
)

// ClusterFlags are the flags naming the build clusters: --config,
// --build-cluster and --pod-namespace, shared by reconcile, prune, run and
// logs.
type ClusterFlags struct {
	ConfigFile    string
	BuildClusters []string
	PodNamespace  string
}

// AddClusterFlags binds the flags to fs.
func (cf *ClusterFlags) AddClusterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&cf.ConfigFile, "config", cf.ConfigFile, "reconcile loop configuration file (YAML); flags override it")
	fs.StringArrayVar(&cf.BuildClusters, "build-cluster", cf.BuildClusters,
		"build cluster as ALIAS=CONTEXT (repeatable); without any, alias \"default\" is the current context")
	fs.StringVar(&cf.PodNamespace, "pod-namespace", cf.PodNamespace, "namespace of job pods in the build clusters (default: the job namespace)")
}

// ValidateClusters checks the --build-cluster values.
func (cf *ClusterFlags) ValidateClusters() error {
	_, err := parseClusterPairs(cf.BuildClusters)
	return err
}

func parseClusterPairs(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		alias, ctx, ok := strings.Cut(p, "=")
		if !ok || alias == "" || ctx == "" {
			return nil, cmdutil.FlagErrorf("invalid --build-cluster %q: want ALIAS=CONTEXT", p)
		}
		out[alias] = ctx
	}
	return out, nil
}

// LoadConfig reads --config; no file gives the empty configuration. A bad
// file is a usage error naming the key.
func (cf *ClusterFlags) LoadConfig() (*scheduler.Config, error) {
	if cf.ConfigFile == "" {
		return &scheduler.Config{}, nil
	}
	data, err := os.ReadFile(cf.ConfigFile)
	if err != nil {
		return nil, &cmdutil.UsageError{Err: fmt.Errorf("read config: %w", err)}
	}
	c, err := scheduler.ParseConfig(data, cf.ConfigFile)
	if err != nil {
		return nil, &cmdutil.UsageError{Err: err}
	}
	return c, nil
}

// ClusterContexts merges the config's build clusters with --build-cluster
// (flags win); with neither, alias "default" is the current context ("").
func (cf *ClusterFlags) ClusterContexts(c *scheduler.Config) (map[string]string, error) {
	flags, err := parseClusterPairs(cf.BuildClusters)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for alias, ctx := range c.BuildClusters {
		out[alias] = ctx
	}
	for alias, ctx := range flags {
		out[alias] = ctx
	}
	if len(out) == 0 {
		out[job.DefaultCluster] = ""
	}
	return out, nil
}

// Clusters returns the job namespace (-n), the clientset of its cluster
// and a clientset per build cluster of c and --build-cluster.
func (cf *ClusterFlags) Clusters(f *Factory, c *scheduler.Config) (string, kube.Interface, map[string]scheduler.Clientset, error) {
	contexts, err := cf.ClusterContexts(c)
	if err != nil {
		return "", nil, nil, err
	}
	ns, err := f.Namespace()
	if err != nil {
		return "", nil, nil, err
	}
	jobs, err := f.Clientset()
	if err != nil {
		return "", nil, nil, err
	}
	clusters, err := f.ClusterClients(contexts)
	return ns, jobs, clusters, err
}

// JobPods returns the pods client and pod namespace of the build cluster
// j runs in, its pods in --pod-namespace, else the config's, else jobNS.
func (cf *ClusterFlags) JobPods(f *Factory, j *job.Job, jobNS string) (kube.PodsGetter, string, error) {
	podsFor, err := cf.PodsFor(f, jobNS)
	if err != nil {
		return nil, "", err
	}
	return podsFor(j)
}

// PodsFor returns JobPods of every job, with --config read once: how the
// dashboard reads a job's pod logs, as lockctl logs does.
func (cf *ClusterFlags) PodsFor(f *Factory, jobNS string) (func(*job.Job) (kube.PodsGetter, string, error), error) {
	cfg, err := cf.LoadConfig()
	if err != nil {
		return nil, err
	}
	contexts, err := cf.ClusterContexts(cfg)
	if err != nil {
		return nil, err
	}
	podNS := cmp.Or(cf.PodNamespace, cfg.PodNamespace, jobNS)
	return func(j *job.Job) (kube.PodsGetter, string, error) {
		name, err := JobContext(contexts, j)
		if err != nil {
			return nil, "", err
		}
		cs, err := f.ClientsetFor(name)
		if err != nil {
			return nil, "", err
		}
		return kube.CoreV1(cs), podNS, nil
	}, nil
}

// JobsConfig returns the scheduler options of --config (--pod-namespace
// wins) and the build clusters' contexts, for the jobs lockctl run drives.
func (cf *ClusterFlags) JobsConfig() (scheduler.Options, map[string]string, error) {
	cfg, err := cf.LoadConfig()
	if err != nil {
		return scheduler.Options{}, nil, err
	}
	opts, err := cfg.Options()
	if err != nil {
		return opts, nil, &cmdutil.UsageError{Err: err}
	}
	if cf.PodNamespace != "" {
		opts.PodNamespace = cf.PodNamespace
	}
	contexts, err := cf.ClusterContexts(cfg)
	return opts, contexts, err
}

// JobContext returns the kubeconfig context of the build cluster j runs in,
// among contexts (alias → context, as ClusterContexts returns them); a
// cluster not there is a usage error saying how to name it.
func JobContext(contexts map[string]string, j *job.Job) (string, error) {
	ctx, ok := contexts[j.ClusterAlias()]
	if !ok {
		return "", &cmdutil.UsageError{Err: fmt.Errorf("job %q runs in build cluster %q: name its context with --build-cluster %s=CONTEXT",
			j.DisplayName(), j.ClusterAlias(), j.ClusterAlias())}
	}
	return ctx, nil
}

// Pruner returns a Pruner over the job namespace and the build clusters
// named by --config and --build-cluster. A retention age left at 0 in opts
// comes from the config file, else the default.
func (cf *ClusterFlags) Pruner(f *Factory, opts scheduler.PruneOptions) (*scheduler.Pruner, error) {
	cfg, err := cf.LoadConfig()
	if err != nil {
		return nil, err
	}
	ns, jobs, clusters, err := cf.Clusters(f, cfg)
	if err != nil {
		return nil, err
	}
	if opts, err = cfg.Retention.Apply(opts); err != nil {
		return nil, &cmdutil.UsageError{Err: err}
	}
	opts.PodNamespace = cmp.Or(cf.PodNamespace, cfg.PodNamespace)
	opts.Clock, opts.Log = f.Clock, f.Logger()
	return scheduler.NewPruner(jobs.CoreV1(), ns, scheduler.PodsGetters(clusters), opts), nil
}

// RunJobs returns where lockctl run's jobs live: the job namespace (-n),
// the build clusters of contexts and the reconciler options opts, whose
// clock and logger it sets. logs opens the job pod's log streams; nil
// means through the API server.
func (cf *ClusterFlags) RunJobs(f *Factory, opts scheduler.Options, contexts map[string]string, logs podwatch.LogOpener) (*run.Jobs, error) {
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	clusters, err := f.ClusterClients(contexts)
	if err != nil {
		return nil, err
	}
	opts.Clock, opts.Log = f.Clock, f.LibraryLog(slog.LevelWarn)
	opts.OnJobChange = f.EventRecorder(cs).JobChanged
	jobs, err := run.NewJobs(cs, ns, run.JobsOptions{
		Clusters: clusters, Scheduler: opts,
		Logs: logs, FollowLog: f.LibraryLog(slog.LevelError), Log: f.Logger(),
		LockClock: f.LockClock(),
	})
	return jobs, cmdutil.UsageIfInvalid(err)
}

// Sweeper returns the jobs among which a run of a local command looks for
// jobs left behind by earlier runs (RunJobs), or nil when there are none
// to use (no jobs or no build cluster configured): the command runs
// anyway.
func (cf *ClusterFlags) Sweeper(f *Factory, logs podwatch.LogOpener) *run.Jobs {
	opts, contexts, err := cf.JobsConfig()
	var jobs *run.Jobs
	if err == nil {
		jobs, err = cf.RunJobs(f, opts, contexts, logs)
	}
	if err != nil {
		f.Log.WithError(err).Debug("not looking for jobs left behind by earlier runs")
		return nil
	}
	return jobs
}
