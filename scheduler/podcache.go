package scheduler

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/lockctl/lockctl/job"
)

// cachedPod is what the pod cache keeps of a job pod: what trimPod keeps,
// without the rest of corev1.Pod's spec and status structs. Those are most
// of a cached pod whatever they hold (a corev1.Pod takes 1.2 KiB before any
// field is set, three times this), and the cache holds a pod for every job
// until retention deletes it. pod() rebuilds the pod the reconciler reads.
type cachedPod struct {
	metav1.ObjectMeta

	nodeName      string
	restartPolicy corev1.RestartPolicy
	gates         []corev1.PodSchedulingGate

	phase                  corev1.PodPhase
	reason                 string
	startTime              *metav1.Time
	conditions             []corev1.PodCondition
	initStatuses, statuses []corev1.ContainerStatus
}

var _ runtime.Object = (*cachedPod)(nil)

// GetObjectKind implements runtime.Object.
func (p *cachedPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (p *cachedPod) DeepCopyObject() runtime.Object {
	out := *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.copySlices(&out)
	return &out
}

// copySlices gives out copies of what p points to.
func (p *cachedPod) copySlices(out *cachedPod) {
	out.gates = nil
	if p.gates != nil {
		out.gates = append([]corev1.PodSchedulingGate(nil), p.gates...)
	}
	out.startTime = p.startTime.DeepCopy()
	out.conditions = nil
	if p.conditions != nil {
		out.conditions = make([]corev1.PodCondition, len(p.conditions))
		for i := range p.conditions {
			p.conditions[i].DeepCopyInto(&out.conditions[i])
		}
	}
	out.initStatuses, out.statuses = copyStatuses(p.initStatuses), copyStatuses(p.statuses)
}

// pod returns the pod as trimPod left it, sharing nothing with p.
func (p *cachedPod) pod() *corev1.Pod {
	var c cachedPod
	p.copySlices(&c)
	out := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		Spec:     corev1.PodSpec{NodeName: p.nodeName, RestartPolicy: p.restartPolicy, SchedulingGates: c.gates},
		Status: corev1.PodStatus{
			Phase: p.phase, Reason: p.reason, StartTime: c.startTime, Conditions: c.conditions,
			InitContainerStatuses: c.initStatuses, ContainerStatuses: c.statuses,
		},
	}
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

func copyStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// cachePod is the pod cache's transform: trimPod, kept as a cachedPod with
// its repeated strings interned. Anything else passes through as trimPod
// leaves it.
func cachePod(obj any) (any, error) {
	trimmed, err := trimPod(obj)
	pod, ok := trimmed.(*corev1.Pod)
	if err != nil || !ok {
		return trimmed, err
	}
	internMeta(&pod.ObjectMeta)
	return &cachedPod{
		ObjectMeta:    pod.ObjectMeta,
		nodeName:      intern(pod.Spec.NodeName),
		restartPolicy: pod.Spec.RestartPolicy,
		gates:         pod.Spec.SchedulingGates,
		phase:         pod.Status.Phase,
		reason:        pod.Status.Reason,
		startTime:     pod.Status.StartTime,
		conditions:    pod.Status.Conditions,
		initStatuses:  pod.Status.InitContainerStatuses,
		statuses:      pod.Status.ContainerStatuses,
	}, nil
}

// asPod returns the pod in a pod cache object (a cachedPod, or a pod a
// test put there), rebuilt from a cachedPod; nil for anything else.
func asPod(obj any) *corev1.Pod {
	switch p := unwrap(obj).(type) {
	case *cachedPod:
		return p.pod()
	case *corev1.Pod:
		return p
	}
	return nil
}

// podPhase returns the phase of a pod cache object without rebuilding it.
func podPhase(obj any) corev1.PodPhase {
	switch p := unwrap(obj).(type) {
	case *cachedPod:
		return p.phase
	case *corev1.Pod:
		return p.Status.Phase
	}
	return ""
}

// podNode returns the node of a pod cache object without rebuilding it.
func podNode(obj any) string {
	switch p := unwrap(obj).(type) {
	case *cachedPod:
		return p.nodeName
	case *corev1.Pod:
		return p.Spec.NodeName
	}
	return ""
}

// internedLabel says whether label k is one whose values repeat across job
// records and pods (a handful of job names, types, states and one
// namespace); the values of the others (names, UIDs, build IDs) are unique
// and are left as they are.
//
// NOTE: a switch, not a map literal, so that no package init builds it
// (docs/adr/0100).
func internedLabel(k string) bool {
	switch k {
	case job.LabelManagedBy, job.LabelKind, job.LabelJob, job.LabelType,
		job.LabelState, job.LabelComplete, job.LabelQueue,
		job.LabelRecordNamespace, job.LabelOrg, job.LabelRepo, job.LabelBaseRef:
		return true
	}
	return false
}

// internMeta makes the cached object's label keys, repeating label values
// and namespace share one copy across the cache, instead of one decoded
// copy per object, and sizes its label map to what it holds.
func internMeta(m *metav1.ObjectMeta) {
	m.Namespace = intern(m.Namespace)
	if len(m.Labels) == 0 {
		return
	}
	labels := make(map[string]string, len(m.Labels))
	for k, v := range m.Labels {
		if internedLabel(k) {
			v = intern(v)
		}
		labels[intern(k)] = v
	}
	m.Labels = labels
}

// internData makes a cached job record's data keys, and its short values
// (the record version), share one copy across the cache; the spec and
// status, JSON unique to each job, are left as they are.
func internData(cm *corev1.ConfigMap) {
	if len(cm.Data) == 0 {
		return
	}
	data := make(map[string]string, len(cm.Data))
	for k, v := range cm.Data {
		if len(v) <= maxInterned {
			v = intern(v)
		}
		data[intern(k)] = v
	}
	cm.Data = data
}

// maxInterned is the longest data value interned.
const maxInterned = 16

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
