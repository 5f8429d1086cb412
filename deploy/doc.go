// Package deploy is lockctl's kustomize base for running the reconcile loop
// in a cluster (kustomization.yaml, namespace/, rbac/, cronjob/, components/). Its Go
// files only test those manifests: that the API server accepts them, that
// the shipped ServiceAccount can do lockctl's work, and that docs/rbac.md
// shows exactly the Roles shipped here.
package deploy
