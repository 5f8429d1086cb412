package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/lockctl/lockctl/internal/kubeclient"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/run"
)

// logsOptions configure `lockctl logs`.
type logsOptions struct {
	f *Factory

	clusterFlags
	Name      string
	Follow    bool
	Container string
}

func newLogsCmd(f *Factory, runF func(*logsOptions) error) *cobra.Command {
	o := &logsOptions{f: f}
	c := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print the logs of a job's pod from its build cluster",
		Long: heredoc.Doc(`
			Print the logs of the containers of JOB's pod, read from the job's
			build cluster (its alias is mapped to a kubeconfig context by
			--build-cluster or the --config file; alias "default" is the
			current context). Lines get a "[container] " prefix when the pod
			has more than one container.

			With -f, wait for the pod if the job has not started yet and stream
			its logs until it finishes.
		`) + "\n" + exitCodeHelp,
		Example: examples(`
			# Logs so far
			lockctl logs deploy-web-42

			# Follow a job running in another cluster
			lockctl logs deploy-web-42 -f --build-cluster gpu=gpu-context
		`),
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.validateClusters(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runLogs(c.Context(), o)
		},
	}
	fs := c.Flags()
	fs.BoolVarP(&o.Follow, "follow", "f", o.Follow, "stream the logs until the pod finishes")
	fs.StringVarP(&o.Container, "container", "c", o.Container, "only this container (default: all)")
	o.addClusterFlags(fs)
	return c
}

func runLogs(ctx context.Context, o *logsOptions) error {
	store, err := jobStore(o.f)
	if err != nil {
		return err
	}
	j, err := store.Get(ctx, o.Name)
	if err != nil {
		return err
	}
	pods, podNS, err := o.buildCluster(j, store.Namespace())
	if err != nil {
		return err
	}
	name := job.PodName(j)
	if o.Follow {
		return o.follow(ctx, store, pods, podNS, name)
	}
	if j.Status.State == job.Triggered {
		return fmt.Errorf("job %q has no pod yet (triggered): wait for it with -f", j.Name)
	}
	pod, err := pods.Pods(podNS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %q of job %q is gone (job %s)", name, j.Name, j.Status.State)
	}
	if err != nil {
		return err
	}
	return printPodLogs(ctx, o.f.IOStreams.Out, pods, pod, o.Container)
}

// buildCluster returns the pods client and pod namespace of the job's build
// cluster.
func (o *logsOptions) buildCluster(j *job.Job, jobNS string) (corev1client.PodsGetter, string, error) {
	cfg, err := o.loadConfig()
	if err != nil {
		return nil, "", err
	}
	contexts, err := o.clusterContexts(cfg)
	if err != nil {
		return nil, "", err
	}
	ctxName, ok := contexts[j.ClusterAlias()]
	if !ok {
		return nil, "", &UsageError{Err: fmt.Errorf("job %q runs in build cluster %q: name its context with --build-cluster %s=CONTEXT", j.Name, j.ClusterAlias(), j.ClusterAlias())}
	}
	cs, err := o.f.ClientsetFor(ctxName)
	if err != nil {
		return nil, "", err
	}
	podNS := firstNonEmpty(o.PodNamespace, cfg.PodNamespace, jobNS)
	return kubeclient.CoreV1(cs), podNS, nil
}

// printPodLogs prints the logs so far of each container that started.
func printPodLogs(ctx context.Context, w io.Writer, pods corev1client.PodsGetter, pod *corev1.Pod, only string) error {
	var names []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if only == "" || c.Name == only {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return &UsageError{Err: fmt.Errorf("pod %q has no container %q", pod.Name, only)}
	}
	var errs []error
	for _, name := range names {
		prefix := ""
		if len(names) > 1 {
			prefix = "[" + name + "] "
		}
		if err := copyLogs(ctx, w, pods, pod, name, prefix); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func copyLogs(ctx context.Context, w io.Writer, pods corev1client.PodsGetter, pod *corev1.Pod, container, prefix string) error {
	rc, err := pods.Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if apierrors.IsBadRequest(err) {
		return nil // the container has not started
	}
	if err != nil {
		return fmt.Errorf("logs of container %q: %w", container, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Text())
	}
	return sc.Err()
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// follow streams the logs of the job's pod until it finishes, across the
// pod's replacement (run.FollowJob), saying so on ErrOut.
func (o *logsOptions) follow(ctx context.Context, store *job.Store, pods corev1client.PodsGetter, podNS, name string) error {
	return run.FollowJob(ctx, store, pods, podNS, name, run.FollowOptions{
		Out: o.f.IOStreams.Out, Clock: o.f.Clock, Log: o.f.Log,
		OnReplace: func(r run.Replacement) { fmt.Fprintln(o.f.IOStreams.ErrOut, r) },
	})
}
