package job

// Labels and annotations that lockctl puts on the objects it owns.
const (
	// LabelManagedBy marks every object lockctl owns; its value is
	// ManagedByValue.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "lockctl"
	// LabelKind says what a lockctl ConfigMap holds: KindJob,
	// KindBuildID, or the scheduler's own kinds.
	LabelKind = "lockctl.dev/kind"
	// LabelJob is the job name (spec.job) on job records and pods.
	LabelJob = "lockctl.dev/job"
	// LabelType is the job type on job records and pods.
	LabelType = "lockctl.dev/type"
	// LabelState is the job state on job records.
	LabelState = "lockctl.dev/state"
	// LabelComplete is "true" on terminal job records, absent otherwise, so
	// a reconciler can watch only the jobs that may still change.
	LabelComplete = "lockctl.dev/complete"
	// LabelQueue is the job queue on job records, when the job has one.
	LabelQueue = "lockctl.dev/queue"

	// LabelRecord is the name of the job record on its pod.
	LabelRecord = "lockctl.dev/job-record"
	// LabelRecordNamespace is the namespace of the job record on its pod.
	LabelRecordNamespace = "lockctl.dev/job-namespace"
	// LabelRecordUID is the UID of the job record on its pod, so a pod left
	// over from an earlier record of the same name is never adopted.
	LabelRecordUID = "lockctl.dev/job-uid"
	// LabelBuildID is the build ID on a job's pod.
	LabelBuildID = "lockctl.dev/build-id"
	// LabelOrg, LabelRepo, LabelBaseRef and LabelPull carry the job's refs
	// on its pod where they are valid label values.
	LabelOrg     = "lockctl.dev/refs.org"
	LabelRepo    = "lockctl.dev/refs.repo"
	LabelBaseRef = "lockctl.dev/refs.base-ref"
	LabelPull    = "lockctl.dev/refs.pull"

	// KindJob is the LabelKind value of job records.
	KindJob = "job"
	// KindBuildID is the LabelKind value of build-ID counters.
	KindBuildID = "build-id"
)

// Data keys of a job record ConfigMap.
const (
	dataSpec   = "spec"
	dataStatus = "status"
)

// DataSpec is the data key of a job record ConfigMap holding the job's spec
// as JSON.
const DataSpec = dataSpec

// Selector selects every job record.
const Selector = LabelManagedBy + "=" + ManagedByValue + "," + LabelKind + "=" + KindJob

// ActiveSelector selects the job records that are not terminal.
const ActiveSelector = Selector + ",!" + LabelComplete
