package job

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/kube"
)

// Store keeps job records as ConfigMaps in one namespace.
type Store struct {
	cms       kube.ConfigMapInterface
	namespace string
	clock     clock.PassiveClock
	// noWatchList is what cms declares about streaming lists, which the
	// informer of Wait asks (client-go's fakes cannot serve them).
	noWatchList bool

	idBlock func(jobName string) int
	// onChange, when set, is told of every status written.
	onChange func(ctx context.Context, before, after *Job)

	mu       sync.Mutex
	counters map[string]*counter
}

// StoreOptions configure a Store. The zero value is usable.
type StoreOptions struct {
	// Clock stamps start, pending and completion times; nil means
	// clock.RealClock{}.
	Clock clock.PassiveClock
	// OnChange, when set, is called after every status the store writes,
	// with the job before and after (the audit trail's Events); nil means
	// none. It must not fail or block for long.
	OnChange func(ctx context.Context, before, after *Job)
	// BuildIDBlock says how many build IDs of a job name NextBuildID
	// reserves with one counter update: BuildIDBlock(jobName), typically the
	// number of jobs of that name waiting to start, at least the callers
	// waiting and at most 1,000. nil means each update reserves just what
	// its callers ask for.
	BuildIDBlock func(jobName string) int
}

// NewStore returns a Store for the job records in namespace.
func NewStore(cms kube.ConfigMapsGetter, namespace string, o StoreOptions) *Store {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Store{
		cms:       cms.ConfigMaps(namespace),
		namespace: namespace,
		clock:     o.Clock,
		idBlock:   o.BuildIDBlock,
		onChange:  o.OnChange,
		counters:  map[string]*counter{},
		// NOTE: asked of the getter, which may be a clientset's wrapper
		// (kube), not of the typed client it returns.
		noWatchList: watchlist.DoesClientNotSupportWatchListSemantics(cms),
	}
}

// Namespace returns the namespace of the store's job records.
func (s *Store) Namespace() string { return s.namespace }

// Create validates the job and stores it as triggered. The job's namespace is
// the store's. It returns ErrExists if a record of that name exists and a
// *ValidationError if the job is invalid; nothing is written then.
func (s *Store) Create(ctx context.Context, j *Job) (*Job, error) {
	j = j.DeepCopy()
	j.Namespace = s.namespace
	Default(j)
	if err := Validate(j); err != nil {
		return nil, err
	}
	now := metav1.NewMicroTime(s.clock.Now())
	j.Status = JobStatus{State: Triggered, Description: "job triggered", StartTime: &now}
	cm, err := ToConfigMap(j)
	if err != nil {
		return nil, err
	}
	cm.ResourceVersion = ""
	out, err := s.cms.Create(ctx, cm, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create job %q: %w", j.Name, ErrExists)
	}
	if err != nil {
		return nil, fmt.Errorf("create job %q: %w", j.DisplayName(), err)
	}
	return FromConfigMap(out)
}

// Get returns the job record called name, or ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (*Job, error) {
	cm, err := s.cms.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get job %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get job %q: %w", name, err)
	}
	if !IsJobConfigMap(cm) {
		return nil, fmt.Errorf("get job %q: configmap is not a lockctl job: %w", name, ErrNotFound)
	}
	return FromConfigMap(cm)
}

// ListOptions select job records.
type ListOptions struct {
	// JobName keeps only jobs whose spec.job is JobName; empty keeps all.
	JobName string
	// ActiveOnly keeps only jobs that are not terminal.
	ActiveOnly bool
	// Selector is a label selector on the records' labels (the job's own
	// labels and lockctl's, such as LabelState); empty keeps all. The caller
	// checks its syntax (labels.Parse): the API server refuses a bad one.
	Selector string
}

// selector is the label selector of the records opts selects.
func (opts ListOptions) selector() string {
	sel := Selector
	if opts.ActiveOnly {
		sel = ActiveSelector
	}
	if opts.JobName != "" {
		sel += "," + LabelJob + "=" + opts.JobName
	}
	if opts.Selector != "" {
		sel += "," + opts.Selector
	}
	return sel
}

// List returns the selected job records in start order (see SortByStart).
// Records that can not be decoded are left out and reported in an error
// matching ErrCorrupt, returned together with the good records.
func (s *Store) List(ctx context.Context, opts ListOptions) ([]*Job, error) {
	list, err := s.cms.List(ctx, metav1.ListOptions{LabelSelector: opts.selector()})
	if err != nil {
		return nil, fmt.Errorf("list jobs in namespace %q: %w", s.namespace, err)
	}
	jobs := make([]*Job, 0, len(list.Items))
	var errs []error
	for i := range list.Items {
		j, err := FromConfigMap(&list.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		jobs = append(jobs, j)
	}
	SortByStart(jobs)
	return jobs, errors.Join(errs...)
}

// UpdateStatus replaces the status of j, the job as last read, with st. The
// write is a compare-and-swap on j's resourceVersion: if the record changed
// since, it returns ErrConflict and writes nothing. A terminal job returns
// ErrTerminal, a move the job's life forbids a *TransitionError. Pending and
// completion times are stamped when st leaves them empty. A status equal to
// the current one is not written.
func (s *Store) UpdateStatus(ctx context.Context, j *Job, st JobStatus) (*Job, error) {
	if j.IsTerminal() {
		return nil, fmt.Errorf("update job %q: %w", j.Name, ErrTerminal)
	}
	if !allowed(j.Status.State, st.State) {
		return nil, &TransitionError{Name: j.Name, From: j.Status.State, To: st.State}
	}
	if j.Spec.PodSpec == nil {
		// NOTE: a partial view of a job (a cache without pod templates);
		// writing it would erase the pod template from the record.
		return nil, fmt.Errorf("update job %q: the job given has no pod spec: %w", j.Name, ErrCorrupt)
	}
	now := metav1.NewTime(s.clock.Now())
	if st.State == Pending && st.PendingTime == nil {
		st.PendingTime = &now
	}
	if (st.State == Success || st.State == Failure || st.State == Error) && st.CompletionTime == nil {
		st.CompletionTime = &now
	}
	if apiequality.Semantic.DeepEqual(j.Status, st) {
		return j, nil
	}
	next := j.DeepCopy()
	next.Status = st
	cm, err := ToConfigMap(next)
	if err != nil {
		return nil, err
	}
	out, err := s.cms.Update(ctx, cm, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		return nil, fmt.Errorf("update job %q: %w", j.Name, ErrConflict)
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("update job %q: %w", j.Name, ErrNotFound)
	case err != nil:
		return nil, fmt.Errorf("update job %q: %w", j.Name, err)
	}
	done, err := FromConfigMap(out)
	if err == nil && s.onChange != nil {
		s.onChange(ctx, j, done)
	}
	return done, err
}

// abortAttempts bounds how often Abort re-reads a job that keeps changing.
const abortAttempts = 10

// Abort marks the job aborted with a reason (one of the Reason constants) and
// a description for people; a reconciler
// then deletes its pod and completes it. Aborting an aborted job changes
// nothing and returns it with an error matching ErrAborted; aborting a
// terminal job returns it with an error matching ErrTerminal.
func (s *Store) Abort(ctx context.Context, name, reason, description string) (*Job, error) {
	for range abortAttempts {
		j, err := s.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if j.IsTerminal() {
			return j, fmt.Errorf("abort job %q: already %s: %w", name, j.Status.State, ErrTerminal)
		}
		if j.Status.State == Aborted {
			return j, fmt.Errorf("abort job %q: already aborted: %w", name, ErrAborted)
		}
		st := *j.Status.DeepCopy()
		st.State, st.Reason, st.Description = Aborted, reason, description
		out, err := s.UpdateStatus(ctx, j, st)
		if errors.Is(err, ErrConflict) {
			continue
		}
		return out, err
	}
	return nil, fmt.Errorf("abort job %q: %w", name, ErrConflict)
}

// allowed reports whether a non-terminal job may move from one state to
// another. Jobs only move forward: triggered → pending → final, and aborted
// only to its completion.
func allowed(from, to State) bool {
	switch from {
	case "", Triggered:
		return to == Triggered || to == Pending || to == Aborted || to == Error
	case Pending:
		return to != Triggered
	case Aborted:
		return to == Aborted
	}
	return false
}

// SortByStart orders jobs by start time, then name: the order in which they
// are admitted.
func SortByStart(jobs []*Job) {
	sort.SliceStable(jobs, func(a, b int) bool { return Older(jobs[a], jobs[b]) })
}

// Older reports whether a was submitted before b (ties broken by name).
func Older(a, b *Job) bool {
	ta, tb := startOf(a), startOf(b)
	if !ta.Equal(&tb) {
		return ta.Before(&tb)
	}
	return a.Name < b.Name
}

func startOf(j *Job) metav1.MicroTime {
	if j.Status.StartTime != nil {
		return *j.Status.StartTime
	}
	return metav1.NewMicroTime(j.CreationTimestamp.Time)
}

// IsJobConfigMap reports whether cm is labelled as a lockctl job record.
func IsJobConfigMap(cm *corev1.ConfigMap) bool {
	return cm.Labels[LabelManagedBy] == ManagedByValue && cm.Labels[LabelKind] == KindJob
}

// ToConfigMap encodes a job record as its ConfigMap: spec, status and the
// record version as data (docs/job-record.md), and labels for cheap
// selection. What the job's record held that this lockctl does not know is
// written back as it was read.
func ToConfigMap(j *Job) (*corev1.ConfigMap, error) {
	data, err := encodeRecord(j)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: *j.ObjectMeta.DeepCopy(),
		Data:       data,
	}
	cm.Labels = recordLabels(j)
	return cm, nil
}

func recordLabels(j *Job) map[string]string {
	l := make(map[string]string, len(j.Labels)+6)
	for k, v := range j.Labels {
		l[k] = v
	}
	l[LabelManagedBy] = ManagedByValue
	l[LabelKind] = KindJob
	l[LabelJob] = j.Spec.Job
	l[LabelType] = string(j.Spec.Type)
	l[LabelState] = string(j.Status.State)
	delete(l, LabelComplete)
	if j.IsTerminal() {
		l[LabelComplete] = "true"
	}
	delete(l, LabelQueue)
	if j.Spec.Queue != "" {
		l[LabelQueue] = j.Spec.Queue
	}
	return l
}

// FromConfigMap decodes a job record of any minor version of RecordVersion's
// major version, keeping what it does not know for ToConfigMap. It returns
// an error matching ErrCorrupt if the ConfigMap does not hold a job, a
// *VersionError (matching ErrCorrupt too) for another major version.
func FromConfigMap(cm *corev1.ConfigMap) (*Job, error) {
	j := &Job{TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}}
	cm.ObjectMeta.DeepCopyInto(&j.ObjectMeta)
	j.ManagedFields = nil
	for _, k := range []string{LabelManagedBy, LabelKind, LabelJob, LabelType, LabelState, LabelComplete, LabelQueue} {
		delete(j.Labels, k)
	}
	if len(j.Labels) == 0 {
		j.Labels = nil
	}
	stored, err := decodeRecord(cm.Name, cm.Data, j)
	if err != nil {
		return nil, err
	}
	j.stored = stored
	return j, nil
}

// DisplayName is the job's name, or its generateName and "*" before the
// API server has named it.
func (j *Job) DisplayName() string {
	if j.Name != "" {
		return j.Name
	}
	return j.GenerateName + "*"
}

// GetAll returns the job records named, in the order given, leaving out
// those that do not exist, which missing names. Any other error ends it.
func (s *Store) GetAll(ctx context.Context, names []string) (jobs []*Job, missing []string, err error) {
	jobs = make([]*Job, 0, len(names))
	for _, name := range names {
		j, err := s.Get(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			missing = append(missing, name)
		case err != nil:
			return nil, nil, err
		default:
			jobs = append(jobs, j)
		}
	}
	return jobs, missing, nil
}
