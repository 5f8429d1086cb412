// Package deploytools runs the deploy tools lockctl's fence must fit, as
// each runs in the field, against a test control plane
// (internal/testing/testenv): real Helm 3 and Helm 4, Flux's own apply
// library as kustomize-controller applies, and Argo CD's
// application-controller's writes (kubectl's apply with Argo CD's
// tracking mark). Each acts as the Kubernetes user a test names, through a
// copy of the kubeconfig that impersonates it (users[].user.as), as a
// pipeline, a person or a controller's service account would.
//
// The programs are those hack/integration-tools.sh builds (helm3, helm4,
// flux-apply, kubectl); Tool finds them, and fails a test with what to run
// when one is missing.
package deploytools
