package cmd

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/internal/kubeclient"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// jobStore returns the store of the job records in the -n namespace of the
// current context; the status changes it writes are recorded as Events.
func jobStore(f *Factory) (*job.Store, error) {
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	return jobStoreIn(f, ns)
}

// jobStoreIn is jobStore for the job records in ns; metav1.NamespaceAll
// ("") reads those of every namespace.
func jobStoreIn(f *Factory, ns string) (*job.Store, error) {
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	// NOTE: abort's state change is an Event on the job record, as the
	// reconcile loop's are. The client goes through kubeclient so that
	// Store.Wait's informer knows whether the clientset serves streaming
	// lists (client-go's fakes do not).
	return job.NewStore(kubeclient.CoreV1(cs), ns, job.WithClock(f.Clock), job.WithChangeHook(f.eventRecorder(cs).JobChanged)), nil
}

// clusterFlags are the flags naming the build clusters: --config and
// --build-cluster, shared by reconcile and logs.
type clusterFlags struct {
	ConfigFile    string
	BuildClusters []string
	PodNamespace  string
}

func (cf *clusterFlags) addClusterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&cf.ConfigFile, "config", cf.ConfigFile, "reconcile loop configuration file (YAML); flags override it")
	fs.StringArrayVar(&cf.BuildClusters, "build-cluster", cf.BuildClusters,
		"build cluster as ALIAS=CONTEXT (repeatable); without any, alias \"default\" is the current context")
	fs.StringVar(&cf.PodNamespace, "pod-namespace", cf.PodNamespace, "namespace of job pods in the build clusters (default: the job namespace)")
}

// validateClusters checks the --build-cluster values.
func (cf *clusterFlags) validateClusters() error {
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

// loadConfig reads --config; no file gives the empty configuration. A bad
// file is a usage error naming the key.
func (cf *clusterFlags) loadConfig() (*scheduler.Config, error) {
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

// clusterContexts merges the config's build clusters with --build-cluster
// (flags win); with neither, alias "default" is the current context ("").
func (cf *clusterFlags) clusterContexts(c *scheduler.Config) (map[string]string, error) {
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

// clusterClients returns a clientset per build-cluster alias. Clusters whose
// context is missing from the kubeconfig are a *cmdutil.UsageError naming them and
// the contexts there are.
func clusterClients(f *Factory, contexts map[string]string) (map[string]kubernetes.Interface, error) {
	out := make(map[string]kubernetes.Interface, len(contexts))
	aliases := make([]string, 0, len(contexts))
	for a := range contexts {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	var errs []error
	for _, alias := range aliases {
		cs, err := f.ClientsetFor(contexts[alias])
		var unknown *kubeclient.UnknownContextError
		if errors.As(err, &unknown) {
			// A build cluster naming a context that is not there is bad
			// input (--build-cluster or --config): exit 2.
			errs = append(errs, &cmdutil.UsageError{Err: fmt.Errorf("build cluster %q: %w", alias, err)})
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("build cluster %q: %w", alias, err))
			continue
		}
		out[alias] = cs
	}
	return out, errors.Join(errs...)
}
