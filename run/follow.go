package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/liveness"
	"github.com/lockctl/lockctl/podwatch"
)

// DefaultReplacementPoll is FollowOptions.ReplacementPoll when it is 0.
const DefaultReplacementPoll = time.Second

// FollowOptions configure FollowJob. The zero value follows the pod
// without streaming logs and without telling anyone.
type FollowOptions struct {
	// Out receives the logs of the pod's containers, of every pod that
	// replaces it too; nil means logs are not read.
	Out io.Writer
	// OnEvent receives the changes of the pods (podwatch.FollowOptions.OnEvent).
	OnEvent func(podwatch.Event)
	// OnReplace is told when a pod ended without finishing its job (it was
	// deleted or taken away), and whether the follow goes on.
	OnReplace func(Replacement)
	// Logs opens log streams; nil means through the API server.
	Logs podwatch.LogOpener
	// Clock paces the follow; nil means clock.RealClock.
	Clock clock.Clock
	// Log receives what the pod followers log; nil discards it.
	Log *slog.Logger
	// ReplacementPoll is how often the job and its pod are read while a
	// replacement is awaited; 0 means DefaultReplacementPoll.
	ReplacementPoll time.Duration
}

// Replacement says that the pod followed ended without finishing its job.
type Replacement struct {
	// Pod is the pod's name.
	Pod string
	// What happened to it: "was deleted", "was evicted", "was taken away".
	What string
	// Job is the job as read then.
	Job *job.Job
	// Following is true when the follow goes on with the pod that replaces
	// it, false when the job has ended.
	Following bool
}

// String says what happened for people: "pod "x" was evicted while job "x"
// is pending; following the pod that replaces it".
func (r Replacement) String() string {
	if r.Following {
		return fmt.Sprintf("pod %q %s while job %q is %s; following the pod that replaces it", r.Pod, r.What, r.Job.Name, r.Job.Status.State)
	}
	return fmt.Sprintf("pod %q %s; job %q is %s", r.Pod, r.What, r.Job.Name, r.Job.Status.State)
}

// FollowJob follows the pod of the job called name, in podNamespace of the
// cluster of pods, until it finishes. A pod deleted or taken away by
// Kubernetes (evicted, its node lost: podwatch.Result.TakenAway) while its
// job goes on is followed again once the reconciler has created it anew
// under the same name; once the job has ended (store says so), the follow
// ends. It returns nil when the pod finished or the job ended, and an
// error wrapping ctx.Err() when ctx ends first.
func FollowJob(ctx context.Context, store *job.Store, pods kube.PodsGetter, podNamespace, name string, o FollowOptions) error {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.ReplacementPoll <= 0 {
		o.ReplacementPoll = DefaultReplacementPoll
	}
	o.Log = logutil.OrDiscard(o.Log)
	for {
		f := podwatch.New(pods, podNamespace, name, podwatch.Options{Clock: o.Clock, Logs: o.Logs, Log: o.Log})
		res, err := f.Follow(ctx, podwatch.FollowOptions{Out: o.Out, OnEvent: o.OnEvent})
		var what string
		switch {
		case errors.Is(err, podwatch.ErrPodDeleted) && ctx.Err() == nil:
			what = "was deleted"
		case err == nil && res.TakenAway && res.Reason == liveness.ReasonEvicted:
			what = "was evicted"
		case err == nil && res.TakenAway:
			what = "was taken away"
		default:
			return err
		}
		replaced, err := awaitReplacement(ctx, store, pods.Pods(podNamespace), name, what, o)
		if err != nil || !replaced {
			return err
		}
	}
}

// awaitReplacement waits until the pod called name is one that the
// reconciler created again (not deleted, not taken away, not finished), and
// reports true, or until the job has ended, and reports false. It tells
// o.OnReplace which.
func awaitReplacement(ctx context.Context, store *job.Store, pods kube.PodInterface, name, what string, o FollowOptions) (bool, error) {
	told := false
	for {
		j, err := store.Get(ctx, name)
		if err != nil {
			return false, err
		}
		if j.IsTerminal() || j.Status.State == job.Aborted {
			if o.OnReplace != nil {
				o.OnReplace(Replacement{Pod: name, What: what, Job: j})
			}
			return false, nil
		}
		if !told && o.OnReplace != nil {
			o.OnReplace(Replacement{Pod: name, What: what, Job: j, Following: true})
		}
		told = true
		pod, err := pods.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, err
		case isReplacement(pod, o.Clock.Now()):
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-o.Clock.After(o.ReplacementPoll):
		}
	}
}

// isReplacement reports whether pod may be the one that replaces a pod
// deleted or taken away: neither being deleted nor taken away itself. It
// may have finished already.
func isReplacement(pod *corev1.Pod, now time.Time) bool {
	v := liveness.Judge(pod, nil, now, liveness.Options{})
	return pod.DeletionTimestamp == nil && !v.Evicted && !v.Disrupted && !v.Lost
}
