package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockctl/lockctl/job"
)

var metav1CreateOptions = metav1.CreateOptions{}

// transition writes a new status with a compare-and-swap and logs the move.
// A write that loses to a change of the record (a conflict, or a view that
// shows the job finished already) re-reads the job and returns a
// *StaleError, so that judging the job again decides on the current record;
// a record deleted meanwhile returns an error matching job.ErrNotFound. In
// a dry run it only records the plan.
func (r *Reconciler) transition(ctx context.Context, j *job.Job, st job.JobStatus) (*job.Job, error) {
	if r.opts.DryRun {
		r.planTransition(j, st)
		out := j.DeepCopy()
		out.Status = st
		r.simulated.Store(out.Name, out)
		return out, nil
	}
	out, err := r.store.UpdateStatus(ctx, j, st)
	if errors.Is(err, job.ErrConflict) || errors.Is(err, job.ErrTerminal) {
		return nil, r.reread(ctx, j.Name, err)
	}
	if errors.Is(err, job.ErrNotFound) {
		r.written.Delete(j.Name)
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	r.remember(out)
	if j.Status.State != st.State {
		r.log(j).Info("job state changed", "from", j.Status.State, "to", st.State, "reason", st.Description)
		r.opts.Metrics.transition(j.Status.State, st.State)
	}
	return out, nil
}

func (r *Reconciler) planTransition(j *job.Job, st job.JobStatus) {
	verb := map[job.State]string{
		job.Pending: "start",
		job.Success: "succeed",
		job.Failure: "fail",
		job.Error:   "error",
		job.Aborted: "abort",
	}[st.State]
	switch {
	case j.Status.State == st.State || verb == "":
		r.planf("would update %s: %s", j.Name, st.Description)
	case st.State == job.Pending:
		r.planf("would start %s", j.Name)
	default:
		r.planf("would %s %s: %s", verb, j.Name, st.Description)
	}
}

// fail moves the job to Error with desc, then lets its pod go as end does.
func (r *Reconciler) fail(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod, desc string, deletePod bool) error {
	return r.end(ctx, cl, j, pod, verdict{state: job.Error, desc: desc, deletePod: deletePod})
}

// end moves the job to the verdict's final state, then lets its pod go: it
// gives back the namespace lock, deletes the pod if asked (timeouts, aborts)
// and removes lockctl's finalizer. The status is written first, so a lost
// race leaves the pod alone. A verdict may also give the job's status.reason;
// a verdict without one keeps the reason the job has (an abort request's).
func (r *Reconciler) end(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod, v verdict) error {
	st := *j.Status.DeepCopy()
	st.State, st.Description = v.state, v.desc
	if v.reason != "" {
		st.Reason = v.reason
	}
	if st.State == job.Aborted {
		now := metav1.NewTime(r.clock.Now())
		st.CompletionTime = &now
	}
	done, err := r.transition(ctx, j, st)
	if err != nil || r.opts.DryRun {
		return err
	}
	if pod != nil && cl != nil {
		if err := r.releaseLock(ctx, done, pod); err != nil {
			return err
		}
		if err := r.retirePod(ctx, cl, pod, v.deletePod); err != nil {
			return err
		}
	}
	if r.hooks.onTerminal != nil {
		r.hooks.onTerminal(done)
	}
	return nil
}

// retirePod deletes the pod if asked, with its UID as precondition so a pod
// created again under the same name is never hit, and removes lockctl's
// finalizer so the pod can go. A pod that is lost (liveness.Judge: its node
// is gone, or it is terminating past its grace period and no kubelet
// confirms it) is deleted with grace period 0, even when it is terminating
// already: nothing else would ever remove it.
func (r *Reconciler) retirePod(ctx context.Context, cl *buildCluster, pod *corev1.Pod, del bool) error {
	pods := cl.pods.Pods(pod.Namespace)
	force := del && r.liveness(cl, pod).Lost
	if del && (pod.DeletionTimestamp == nil || force) {
		opts := metav1.DeleteOptions{}
		if pod.UID != "" {
			opts.Preconditions = metav1.NewUIDPreconditions(string(pod.UID))
		}
		if force {
			opts.GracePeriodSeconds = new(int64)
		}
		err := pods.Delete(ctx, pod.Name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return unavailable(cl, fmt.Errorf("delete pod %q in cluster %q: %w", pod.Name, cl.alias, err))
		}
	}
	r.created.Delete(cl.alias + "/" + pod.Name)
	r.gone.Delete(cl.alias + "/" + pod.Name)
	return removeFinalizer(ctx, cl, pod)
}

// removeFinalizer takes lockctl's finalizer off the pod with a JSON patch
// that tests the pod's UID and the finalizer's position first. When a test
// fails (another reconciler got there first, or the finalizers moved), the
// pod is read again and the removal retried if the finalizer is still on it.
func removeFinalizer(ctx context.Context, cl *buildCluster, pod *corev1.Pod) error {
	err := patchOutFinalizer(ctx, cl, pod)
	if !isPatchTestFailure(err) {
		return err
	}
	fresh, gerr := getPod(ctx, cl, pod.Name)
	switch {
	case gerr != nil:
		return errors.Join(err, gerr)
	case fresh == nil || (pod.UID != "" && fresh.UID != pod.UID):
		return nil
	}
	return patchOutFinalizer(ctx, cl, fresh)
}

// isPatchTestFailure reports whether the API server refused a JSON patch
// because one of its test operations failed: 422 without field causes.
func isPatchTestFailure(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	st := status.Status()
	return st.Code == http.StatusUnprocessableEntity && (st.Details == nil || len(st.Details.Causes) == 0)
}

func patchOutFinalizer(ctx context.Context, cl *buildCluster, pod *corev1.Pod) error {
	i := finalizerIndex(pod)
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	patch, err := json.Marshal(append(uidTest(pod),
		map[string]any{"op": "test", "path": path, "value": job.Finalizer},
		map[string]any{"op": "remove", "path": path},
	))
	if err != nil {
		return fmt.Errorf("encode finalizer patch: %w", err)
	}
	_, err = cl.pods.Pods(pod.Namespace).Patch(ctx, pod.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return unavailable(cl, fmt.Errorf("remove finalizer of pod %q in cluster %q: %w", pod.Name, cl.alias, err))
	}
	return nil
}

// uidTest is a JSON patch operation that fails unless the patched pod is
// the one read, not a pod created again under its name.
func uidTest(pod *corev1.Pod) []map[string]any {
	if pod.UID == "" {
		return nil
	}
	return []map[string]any{{"op": "test", "path": "/metadata/uid", "value": pod.UID}}
}

func finalizerIndex(pod *corev1.Pod) int {
	for i, f := range pod.Finalizers {
		if f == job.Finalizer {
			return i
		}
	}
	return -1
}

func hasFinalizer(pod *corev1.Pod) bool { return finalizerIndex(pod) >= 0 }

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// isRequestError reports whether the API server refused a request as wrong
// (a 4xx status), so that repeating it can not help. Timeouts, conflicts and
// throttling are not such errors.
func isRequestError(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	code := status.Status().Code
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return false
	}
	return code >= 400 && code < 500
}

// apiMessage returns the API server's own message for a refused request.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// staleError is a write that lost to a change of a job record: a conflict,
// or a view that shows the job finished already. The record has been read
// again and remembered (Reconciler.reread), so judging the job again decides
// on the record as it is now. It matches job.ErrConflict.
type staleError struct {
	name string
	err  error
}

func (e *staleError) Error() string {
	return fmt.Sprintf("job %q changed while it was judged: %v", e.name, e.err)
}

func (e *staleError) Unwrap() error { return e.err }

// Is makes a staleError match job.ErrConflict, whatever write it lost.
func (e *staleError) Is(target error) bool { return target == job.ErrConflict }

// reread reads the job called name from the API server after a write of it
// lost to a change (cause), and remembers what it read, so that the next
// look at the job, even through a cache that has not seen the change yet,
// judges the current record. It returns a *staleError, an error matching
// job.ErrNotFound when the record is gone, or cause when the read fails.
func (r *Reconciler) reread(ctx context.Context, name string, cause error) error {
	fresh, err := r.store.Get(ctx, name)
	switch {
	case errors.Is(err, job.ErrNotFound):
		r.written.Delete(name)
		return err
	case err != nil:
		return cause
	}
	r.remember(fresh)
	return &staleError{name: name, err: cause}
}
