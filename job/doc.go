// Package job implements lockctl's durable job records: the Kubernetes-style
// Job type (apiVersion lockctl.dev/v1alpha1, kind Job), strict parsing and
// validation of job files, the ConfigMap-backed Store that keeps a job's spec
// and status in the cluster, per-job-name build IDs, and the Pod built for a
// job.
//
// A job record is one ConfigMap in the job namespace, so a namespace-scoped
// Role (configmaps: get, list, watch, create, update) is all lockctl needs;
// docs/adr/0005-job-records-in-configmaps.md records why. Status changes are
// compare-and-swap updates on the ConfigMap's resourceVersion: a lost race is
// returned as ErrConflict, never overwritten, and a terminal job is never
// changed again (ErrTerminal).
//
// The record is versioned (RecordVersion, docs/job-record.md): a lockctl
// reads every minor version of its major version and writes back what a
// newer one added, unchanged, so lockctl releases of one major version share
// job records; another major version is refused with a *VersionError naming
// both versions.
package job
