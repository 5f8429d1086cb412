// Package testenv starts a real Kubernetes control plane (etcd, kube-apiserver,
// kube-scheduler) plus kwok, which plays the kubelet of one fake Node, for
// integration tests.
//
// Pods bound to the fake Node move through their phases as the kwok stages in
// kwok-stages.yaml dictate, steered per Pod by annotations:
//
//   - none: the Pod becomes Running (containers running, Ready, startTime and
//     podIP set) and stays Running until it is deleted or annotated.
//   - [AnnotationExitCode] "0": after [AnnotationDuration], the Pod becomes
//     Succeeded and every container is terminated with exit code 0.
//   - [AnnotationExitCode] "N" (N != 0, an integer): after [AnnotationDuration],
//     the Pod becomes Failed and every container is terminated with exit code N.
//   - [AnnotationHold] "pending": the Pod stays Pending with startTime set and
//     its containers waiting (reason ContainerCreating, or the value of
//     [AnnotationWaitingReason]). Removing the annotation lets it start.
//
// Deleting a Pod bound to the node removes it at once (kwok deletes it with a
// zero grace period, like kwok's own default "pod-delete" stage); finalizers
// are respected, so a Pod with finalizers stays Terminating until they are
// removed. Pods that fit no node, for example through an impossible
// nodeSelector, stay Pending and unscheduled with no startTime.
//
// No kube-controller-manager runs: there is no garbage collection, no
// namespace deletion and no default ServiceAccount (the ServiceAccount
// admission plugin is off so Pods are admitted without one).
//
// The binaries come from hack/controlplane-tools.sh (make tools), which caches
// them under [DefaultToolsDir]. A package shares one control plane, started by
// the first [Get] and stopped when the package's tests are done:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
//	func TestIntegrationAcquire(t *testing.T) {
//		env := testenv.Get(t) // skips under -short
//		ns := env.Namespace(t)
//		// use env.Client, env.RESTConfig or env.Kubeconfig
//	}
//
// A test that needs a second cluster calls [Start] itself and defers
// [Env.Stop].
package testenv
