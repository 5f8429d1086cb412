package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManifests checks what the API server's dry run cannot: the shape the
// design asks for (two replicas, probes on the metrics port, a non-root
// read-only container, resource requests) in every variant.
func TestManifests(t *testing.T) {
	t.Parallel()
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			objs := render(t, v, "ci")
			for _, u := range objs {
				switch u.GetKind() {
				case "ClusterRole", "ClusterRoleBinding":
				case "Namespace":
					assert.Equal(t, "ci", u.GetName(), "the Namespace is the overlay's")
				default:
					assert.Equal(t, "ci", u.GetNamespace(), "%s is put in the overlay's namespace", key(u))
				}
				assert.Equal(t, "lockctl", u.GetLabels()["app.kubernetes.io/part-of"], "%s is labelled", key(u))
			}
			assert.Equal(t, "Namespace", objs[0].GetKind(), "the Namespace comes first, so apply -k works on a fresh cluster")
			var pods []*corev1.PodSpec
			if v.name == "cronjob" || v.name == "loop and cronjob" {
				var cj batchv1.CronJob
				fromUnstructured(t, find(t, objs, "CronJob", "lockctl-reconcile"), &cj)
				assert.Equal(t, batchv1.ForbidConcurrent, cj.Spec.ConcurrencyPolicy)
				pod := &cj.Spec.JobTemplate.Spec.Template.Spec
				assert.Equal(t, []string{"reconcile", "--once"}, pod.Containers[0].Args)
				pods = append(pods, pod)
			}
			if v.name == "cronjob" {
				assert.False(t, has(objs, "Deployment", "lockctl-reconcile"), "the CronJob instead of the loop")
				assert.False(t, has(objs, "PodDisruptionBudget", "lockctl-reconcile"), "no budget without the loop")
			} else {
				var d appsv1.Deployment
				fromUnstructured(t, find(t, objs, "Deployment", "lockctl-reconcile"), &d)
				require.NotNil(t, d.Spec.Replicas)
				assert.EqualValues(t, 2, *d.Spec.Replicas, "two reconcilers")
				c := d.Spec.Template.Spec.Containers[0]
				assert.Equal(t, []string{"reconcile", "--metrics-addr=:9090"}, c.Args)
				require.NotNil(t, c.LivenessProbe)
				require.NotNil(t, c.ReadinessProbe)
				assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
				assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
				assert.Equal(t, "metrics", c.ReadinessProbe.HTTPGet.Port.String())
				assert.Equal(t, int32(9090), c.Ports[0].ContainerPort)
				pods = append(pods, &d.Spec.Template.Spec)

				var pdb policyv1.PodDisruptionBudget
				fromUnstructured(t, find(t, objs, "PodDisruptionBudget", "lockctl-reconcile"), &pdb)
				require.NotNil(t, pdb.Spec.MaxUnavailable)
				assert.Equal(t, "1", pdb.Spec.MaxUnavailable.String(), "one reconciler at a time may be evicted")
				assert.Equal(t, d.Spec.Selector, pdb.Spec.Selector, "the budget covers the Deployment's pods")
			}
			require.NotEmpty(t, pods)
			for _, pod := range pods {
				assert.Equal(t, "lockctl", pod.ServiceAccountName)
				require.NotNil(t, pod.SecurityContext.RunAsNonRoot)
				assert.True(t, *pod.SecurityContext.RunAsNonRoot)
				c := pod.Containers[0]
				assert.Equal(t, "metadata.name", c.Env[0].ValueFrom.FieldRef.FieldPath, "POD_NAME from the downward API")
				assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
				assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
				assert.Equal(t, "128Mi", c.Resources.Requests.Memory().String())
				assert.Equal(t, "512Mi", c.Resources.Limits.Memory().String())
				var memLimit *corev1.ResourceFieldSelector
				for _, e := range c.Env {
					if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil {
						memLimit = e.ValueFrom.ResourceFieldRef
					}
				}
				require.NotNil(t, memLimit, "GOMEMLIMIT from the downward API")
				assert.Equal(t, "limits.memory", memLimit.Resource)
				assert.Equal(t, c.Name, memLimit.ContainerName)
				assert.Equal(t, "1", memLimit.Divisor.String(), "in bytes, which GOMEMLIMIT reads without a unit")
			}

			if v.name == "loop with node reader" {
				crb := find(t, objs, "ClusterRoleBinding", "lockctl-node-reader")
				subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
				require.Len(t, subjects, 1)
				assert.Equal(t, "ci", subjects[0].(map[string]any)["namespace"], "the binding follows the overlay's namespace")
			}
		})
	}
}

// has tells whether objs hold a kind named name.
func has(objs []*unstructured.Unstructured, kind, name string) bool {
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return true
		}
	}
	return false
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	t.Fatalf("no %s %q among %s", kind, name, keys(objs))
	return nil
}

func fromUnstructured(t *testing.T, u *unstructured.Unstructured, into any) {
	t.Helper()
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into), key(u))
}
