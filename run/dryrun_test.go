package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

func TestDryRunPod(t *testing.T) {
	t.Parallel()
	spec := job.JobSpec{Job: "deploy-web", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "main"}, PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "deploy", Image: "alpine"}}}}
	tests := []struct {
		name          string
		meta          metav1.ObjectMeta
		podNamespace  string
		wantName      string
		wantGenerate  string
		wantNamespace string
	}{
		{name: "named job, pods beside it", meta: metav1.ObjectMeta{Name: "deploy-web-42"}, wantName: "deploy-web-42", wantNamespace: "ci"},
		{name: "generateName kept", meta: metav1.ObjectMeta{GenerateName: "deploy-web-"}, wantGenerate: "deploy-web-", wantNamespace: "ci"},
		{name: "pods in their own namespace", meta: metav1.ObjectMeta{Name: "deploy-web-42"}, podNamespace: "builds", wantName: "deploy-web-42", wantNamespace: "builds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &job.Job{ObjectMeta: tt.meta, Spec: spec}
			pod := DryRunPod(j, "ci", tt.podNamespace)
			assert.Equal(t, "ci", j.Namespace, "the job is put in the namespace")
			assert.Equal(t, tt.wantName, pod.Name, "pod name")
			assert.Equal(t, tt.wantGenerate, pod.GenerateName, "pod generateName")
			assert.Equal(t, tt.wantNamespace, pod.Namespace, "pod namespace")
			assert.Equal(t, DryRunBuildID, pod.Labels[job.LabelBuildID], "the stand-in build ID")
			assert.NotContains(t, pod.Annotations, AnnotationHoldRef, "no session: only a real run adds it")
		})
	}
}
