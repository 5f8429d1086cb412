package scheduler

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/lockctl/lockctl/job"
)

// stripManagedFields drops metadata.managedFields from objects before the
// informers cache them: the reconciler never reads them, and they are a
// large share of every cached job record and pod. Writes are made from
// these objects by compare-and-swap updates and patches, for which a nil
// managedFields leaves the server's record of field owners as it was.
func stripManagedFields(obj any) (any, error) {
	// NOTE: the object handed in is never written: a fake clientset hands
	// one object to every watcher, and two informers of one namespace's
	// ConfigMaps (job records, ledger) transform it at once, one reading
	// it while the other strips it. A ConfigMap is stripped in a shallow
	// copy, any other object in a deep one; an object without
	// managedFields is left as it is.
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		if cm.ManagedFields == nil {
			return obj, nil
		}
		c := *cm
		c.ManagedFields = nil
		return &c, nil
	}
	o, ok := obj.(runtime.Object)
	if m, err := meta.Accessor(obj); !ok || err != nil || m.GetManagedFields() == nil {
		return obj, nil
	}
	c := o.DeepCopyObject()
	if m, err := meta.Accessor(c); err == nil {
		m.SetManagedFields(nil)
	}
	return c, nil
}

// trimJobRecord drops managedFields from a job record before the informer
// caches it, interns its repeated strings (internMeta, internData) and, once
// the job is complete (labelled so), drops its pod template:
// a complete job is never started or written again, and the pod template
// is most of a record. A record that does not decode is cached as it is.
func trimJobRecord(obj any) (any, error) {
	if cm, ok := obj.(*corev1.ConfigMap); ok {
		// Trim a shallow copy: the object handed in may still be shared
		// (a fake clientset's tracker keeps and lists it), and internMeta
		// and internData give the copy maps of its own.
		c := *cm
		obj = &c
	}
	obj, _ = stripManagedFields(obj)
	cm, ok := obj.(*corev1.ConfigMap)
	if ok {
		internMeta(&cm.ObjectMeta)
		internData(cm)
	}
	if !ok || cm.Labels[job.LabelComplete] != "true" || !job.IsJobConfigMap(cm) {
		return obj, nil
	}
	var spec job.JobSpec
	if err := json.Unmarshal([]byte(cm.Data[job.DataSpec]), &spec); err != nil || spec.PodSpec == nil {
		return obj, nil
	}
	spec.PodSpec = nil
	raw, err := json.Marshal(&spec)
	if err != nil {
		return obj, nil
	}
	cm.Data[job.DataSpec] = string(raw)
	return cm, nil
}

// trimPod keeps of a pod what the reconciler reads from the cache: its
// metadata (without managedFields), its scheduling gates and node, and its
// status with only the conditions liveness.Judge reads (Ready,
// DisruptionTarget), without their messages. The containers' specs,
// volumes and the like are most of a pod and are never read from the cache;
// podwatch and lockctl logs read pods from the API server.
func trimPod(obj any) (any, error) {
	in, ok := obj.(*corev1.Pod)
	if !ok {
		return stripManagedFields(obj)
	}
	// NOTE: trimmed in a shallow copy, whose fields are replaced, never
	// written into: the pod handed in may be another informer's too (see
	// stripManagedFields).
	p := *in
	pod := &p
	pod.ManagedFields = nil
	pod.Spec = corev1.PodSpec{
		SchedulingGates: pod.Spec.SchedulingGates,
		NodeName:        pod.Spec.NodeName,
		RestartPolicy:   pod.Spec.RestartPolicy,
	}
	var kept []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady || c.Type == corev1.DisruptionTarget {
			c.Message = ""
			kept = append(kept, c)
		}
	}
	pod.Status = corev1.PodStatus{
		Phase:                 pod.Status.Phase,
		Reason:                pod.Status.Reason,
		StartTime:             pod.Status.StartTime,
		Conditions:            kept,
		InitContainerStatuses: trimContainerStatuses(pod.Status.InitContainerStatuses),
		ContainerStatuses:     trimContainerStatuses(pod.Status.ContainerStatuses),
	}
	return pod, nil
}

// trimContainerStatuses keeps of each container's status what the judge
// and liveness.Judge read: its name, readiness, and its state and last
// termination without messages, times or IDs.
func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i] = corev1.ContainerStatus{Name: cs.Name, Ready: cs.Ready, State: trimState(cs.State), LastTerminationState: trimState(cs.LastTerminationState)}
	}
	return out
}

func trimState(st corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if st.Running != nil {
		out.Running = &corev1.ContainerStateRunning{}
	}
	if w := st.Waiting; w != nil {
		out.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason}
	}
	if t := st.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Signal: t.Signal, Reason: t.Reason}
	}
	return out
}
