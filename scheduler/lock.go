package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockctl/lockctl/job"
)

// NamespaceLocker takes and gives back the deploy lock of a target
// namespace on behalf of a job's pod, which owns the lock while it holds it.
// Package lock provides the implementation; the scheduler only needs these
// two calls, and neither may block waiting for the lock.
type NamespaceLocker interface {
	// TryAcquire takes the lock of target for holder if it is free (or
	// already held by holder) and reports whether holder holds it now.
	TryAcquire(ctx context.Context, target string, holder *corev1.Pod) (bool, error)
	// Release gives the lock of target back if holder holds it; releasing a
	// lock that holder does not hold succeeds.
	Release(ctx context.Context, target string, holder *corev1.Pod) error
}

// ErrLockSuperseded is what a NamespaceLocker returns (wrapped) when the pod
// will never get the lock because a newer build of the same branch waits for
// it or holds it. The job is then aborted as superseded.
var ErrLockSuperseded = errors.New("superseded by a newer build")

// lockRetry is how soon a job waiting for its namespace lock looks again
// when no event wakes it earlier.
const lockRetry = 5 * time.Second

// AnnotationLockAcquired is set on a job's pod, as an RFC 3339 time with nanoseconds, when
// the reconciler took the pod's namespace lock and removed its scheduling
// gate. The unscheduled timeout counts from then, not from the pod's
// creation, so waiting for the lock does not use it up.
const AnnotationLockAcquired = "lockctl.dev/lock-acquired"

// hasLockGate reports whether the pod still waits for its namespace lock.
func hasLockGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == job.LockGate {
			return true
		}
	}
	return false
}

// syncLock takes the namespace lock for a gated pod and, once held, lifts the
// gate so the pod is scheduled. It never waits: a held lock means try again
// later.
func (r *Reconciler) syncLock(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod) (Result, error) {
	target := j.Spec.Lock.Namespace
	if r.opts.Locker == nil {
		return Result{}, r.fail(ctx, cl, j, pod, "namespace locks are not available to this reconciler", true)
	}
	if r.opts.DryRun {
		r.planf("would try the lock of namespace %q for %s", target, j.Name)
		return Result{}, nil
	}
	held, err := r.opts.Locker.TryAcquire(ctx, target, pod)
	if errors.Is(err, ErrLockSuperseded) {
		desc := fmt.Sprintf("superseded: a newer build waits for or holds the lock of namespace %q", target)
		return Result{}, r.end(ctx, cl, j, pod, verdict{state: job.Aborted, reason: job.ReasonSuperseded, desc: desc, deletePod: true})
	}
	if err != nil {
		return Result{}, fmt.Errorf("take lock of namespace %q for job %q: %w", target, j.Name, err)
	}
	if !held {
		r.log(j).Debug("waiting for namespace lock", "lock", target)
		return Result{RequeueAfter: lockRetry}, nil
	}
	if err := r.liftGate(ctx, cl, pod); err != nil {
		return Result{}, err
	}
	r.log(j).Info("namespace lock taken, pod released to the scheduler", "lock", target)
	return Result{}, nil
}

// liftGate removes the lock scheduling gate with a JSON patch that first
// tests the gate list, so a concurrent change is never overwritten.
func (r *Reconciler) liftGate(ctx context.Context, cl *buildCluster, pod *corev1.Pod) error {
	var gates []corev1.PodSchedulingGate
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name != job.LockGate {
			gates = append(gates, g)
		}
	}
	patch := append(uidTest(pod),
		map[string]any{"op": "test", "path": "/spec/schedulingGates", "value": pod.Spec.SchedulingGates},
		map[string]any{"op": "replace", "path": "/spec/schedulingGates", "value": gates},
		map[string]any{"op": "add", "path": "/metadata/annotations", "value": withAnnotation(pod.Annotations, AnnotationLockAcquired, r.clock.Now().UTC().Format(time.RFC3339Nano))},
	)
	data, err := json.Marshal(patch)
	if err != nil {
		return fmt.Errorf("encode gate patch: %w", err)
	}
	_, err = cl.pods.Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, data, metav1.PatchOptions{})
	if isPatchTestFailure(err) {
		// NOTE: the pod changed since it was read; the next pass reads it again.
		return fmt.Errorf("lift lock gate of pod %q: %w: %v", pod.Name, job.ErrConflict, err)
	}
	if err != nil {
		return fmt.Errorf("lift lock gate of pod %q: %w", pod.Name, err)
	}
	return nil
}

func withAnnotation(in map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for ik, iv := range in {
		out[ik] = iv
	}
	out[k] = v
	return out
}

// releaseLock gives back the namespace lock a finished job's pod held.
func (r *Reconciler) releaseLock(ctx context.Context, j *job.Job, pod *corev1.Pod) error {
	if j.Spec.Lock == nil || pod == nil || r.opts.Locker == nil || r.opts.DryRun {
		return nil
	}
	if err := r.opts.Locker.Release(ctx, j.Spec.Lock.Namespace, pod); err != nil {
		return fmt.Errorf("release lock of namespace %q for job %q: %w", j.Spec.Lock.Namespace, j.Name, err)
	}
	return nil
}
