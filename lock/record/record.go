package record

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/base/schema"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels and annotations that make a ConfigMap a lockctl lock. An object
// without ManagedByLabel=ManagedByValue and KindLabel=KindValue is never read
// as a lock and never changed or deleted.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "lockctl"
	KindLabel      = "lockctl.dev/kind"
	KindValue      = "lock"
	// TargetLabel holds the target namespace, or a hash of it when the target
	// is not a valid label value.
	TargetLabel = "lockctl.dev/target"
	// RecordAnnotation holds the JSON Record.
	RecordAnnotation = "lockctl.dev/lock"
	// PurposeAnnotation explains the object to whoever finds it with kubectl.
	PurposeAnnotation = "lockctl.dev/purpose"
)

// Policy decides who waits and who gives up among waiters.
type Policy string

const (
	// PolicyNewest keeps only the newest build of each owner/repo/branch
	// queued: an older build gives up (superseded) when a newer one waits or
	// holds the lock. It is the default.
	PolicyNewest Policy = "newest"
	// PolicyFIFO serves contenders in arrival order and supersedes nobody.
	PolicyFIFO Policy = "fifo"
)

// Identity names a build: the repository and branch it deploys, and its
// build number, which grows with every build of that branch counted in
// Sequence.
type Identity struct {
	Owner  string `json:"owner"`
	Repo   string `json:"repo"`
	Branch string `json:"branch"`
	Build  string `json:"build"`
	// Sequence names the counter Build is a number of, where a CI system
	// keeps several for one branch (GitHub Actions counts runs per
	// workflow: ".github/workflows/deploy.yml"). Builds are compared
	// (newest wins) only within one sequence, and two builds with the same
	// number in different sequences are two builds. "" is the branch's one
	// sequence, as before the field existed. Added in record version 1.6.
	Sequence string `json:"sequence,omitempty"`
}

// String renders the identity as owner/repo@branch#build. A field that is
// not printable text (a record written by another client, or tampered with)
// is shown quoted with Go escapes, so it cannot drive a terminal.
func (id Identity) String() string {
	return fmt.Sprintf("%s/%s@%s#%s", printable(id.Owner), printable(id.Repo), printable(id.Branch), printable(id.Build))
}

// SameBranch reports whether both identities deploy the same owner, repository
// and branch, whatever their build.
func (id Identity) sameBranch(o Identity) bool {
	return id.Owner == o.Owner && id.Repo == o.Repo && id.Branch == o.Branch
}

// SameSequence reports whether both identities are builds of the same
// branch counted in the same sequence: only then do their build numbers
// order them.
func (id Identity) sameSequence(o Identity) bool {
	return id.sameBranch(o) && id.Sequence == o.Sequence
}

// Names reports whether id, given to Release, names the build o: the same
// owner, repository, branch and build, and the same sequence when both
// know one (a record written before sequences existed, or a caller naming
// the build with flags alone, matches any).
func (id Identity) Names(o Identity) bool {
	a, b := id, o
	if a.Sequence == "" || b.Sequence == "" {
		a.Sequence, b.Sequence = "", ""
	}
	return a == b
}

// BuildNumber parses Build. Build numbers are non-negative integers.
func (id Identity) buildNumber() (uint64, error) {
	n, err := strconv.ParseUint(id.Build, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("build %q is not a non-negative integer", id.Build)
	}
	return n, nil
}

// MaxIdentityFieldLen is the longest owner, repo, branch or build an
// Identity may hold, in bytes. Every claim in the lock record carries an
// identity, and the record is one annotation, which the API server caps at
// 256 KiB: at this length hundreds of waiters still fit.
const MaxIdentityFieldLen = 253

// IdentityError reports an Identity field that Validate refuses.
type IdentityError struct {
	// Field is "owner", "repo", "branch" or "build".
	Field string
	// Value is the refused value where the message shows it (quoted); it
	// is empty when the value is empty or too long to show.
	Value string
	// Reason says what is wrong, such as "contains control characters".
	Reason string
}

// Error implements error: `owner "a\x1b" contains control characters`.
func (e *IdentityError) Error() string { return e.Describe(e.Field) }

// Describe renders the error naming the field name instead, such as the
// flag or environment variable the value came from.
func (e *IdentityError) Describe(name string) string {
	if e.Value == "" {
		return name + " " + e.Reason
	}
	return fmt.Sprintf("%s %q %s", name, e.Value, e.Reason)
}

// Validate checks that every field but Sequence is set, that every field
// set is printable text (valid UTF-8
// without control characters, which would reach terminals through status
// and logs) of at most MaxIdentityFieldLen bytes, and that the build is a
// number. The error is an *IdentityError.
func (id Identity) Validate() error {
	for _, f := range []struct{ name, value string }{
		{"owner", id.Owner}, {"repo", id.Repo}, {"branch", id.Branch}, {"build", id.Build},
	} {
		if err := validateIdentityField(f.name, f.value); err != nil {
			return err
		}
	}
	if _, err := id.buildNumber(); err != nil {
		return &IdentityError{Field: "build", Value: id.Build, Reason: "is not a non-negative integer"}
	}
	if id.Sequence != "" {
		if err := validateIdentityField("sequence", id.Sequence); err != nil {
			return err
		}
	}
	return nil
}

// PodRef points at the pod a claim lives in.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid,omitempty"`
}

// String renders the pod as namespace/name.
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// CIJob names the CI job a claim comes from, within its build (the
// Identity: the pipeline, workflow run or build of the CI system). It is
// the unit that holds a lock once: two jobs of one build running at once
// are two contenders. The zero value means a claim that knows no job (a
// terminal, a pod, a CI system lockctl knows no jobs of, a lockctl before
// record version 1.6): the build is the unit, as it was before. Added in
// record version 1.6. docs/ci-identity.md lists what each CI system gives.
type CIJob struct {
	// Job is the job's name within its build, the same in every run of the
	// job: GitHub Actions' job id ($GITHUB_JOB), GitLab's job name
	// ($CI_JOB_NAME).
	Job string `json:"job,omitempty"`
	// JobID tells apart jobs of one build with the same Job that run at
	// once, and is the same in every step of one run of the job: GitHub
	// Actions' runner ($RUNNER_NAME: a runner runs one job at a time, and
	// the jobs of a matrix share $GITHUB_JOB), GitLab's and Buildkite's
	// job ID.
	JobID string `json:"jobID,omitempty"`
	// Attempt grows each time the job runs again (re-run, retry): GitHub
	// Actions' $GITHUB_RUN_ATTEMPT, GitLab's $CI_JOB_ID (a retry is a new
	// job with a higher ID). 0 means the CI system does not say: a run of
	// the job never takes over another's hold.
	Attempt uint64 `json:"attempt,omitempty"`
}

// Known reports whether j names a job.
func (j CIJob) Known() bool { return j != CIJob{} }

// Describe renders the job as "job JOB (JOBID, attempt N)", or "" for none.
// (Not String: a Claim embeds both CIJob and Identity, and prints as its
// Identity.)
func (j CIJob) Describe() string {
	if !j.Known() {
		return ""
	}
	s := "job " + printable(j.Job)
	var more []string
	if j.JobID != "" {
		more = append(more, printable(j.JobID))
	}
	if j.Attempt > 0 {
		more = append(more, "attempt "+strconv.FormatUint(j.Attempt, 10))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

// ValidateJob checks that the job's fields are printable text of at most
// MaxIdentityFieldLen bytes, and that a job with an ID or attempt has a
// name. The error is an *IdentityError.
func (j CIJob) ValidateJob() error {
	if !j.Known() {
		return nil
	}
	for _, f := range []struct{ name, value string }{{"job", j.Job}, {"jobID", j.JobID}} {
		if f.value == "" && f.name == "jobID" {
			continue
		}
		if err := validateIdentityField(f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// Claim is one process's stake in the lock, as holder or as waiter.
type Claim struct {
	Identity `json:",inline"`
	// CIJob is the CI job the claimant runs in, when known (record
	// version 1.6).
	CIJob `json:",inline"`
	// User is the claimant's authenticated Kubernetes user, as the API
	// server named it in a SelfSubjectReview when the claim was made;
	// empty when lockctl could not learn it (or before record version
	// 1.8). An enforced lock admits the holder's writes by it
	// (docs/enforcement.md).
	User string `json:"user,omitempty"`
	// RunURL is the web page of the CI run or job the claimant runs in,
	// as its CI system names it (GitHub Actions' run and attempt, GitLab's
	// job, Jenkins' build); empty outside CI, when the CI system gives
	// none, and before record version 1.10. The dashboard links the claim
	// to it; nothing decides on it.
	RunURL string `json:"runURL,omitempty"`
	// Credential names the credential User authenticated with when the
	// claim was made, as the API server tells it: "pod-uid=UID" for a
	// service account token bound to a pod, else the token's credential
	// ID ("JTI=..."); empty when it told none. Strict enforcement admits
	// the holder's writes by it, so that two pipelines of one service
	// account are told apart (record version 1.9).
	Credential string `json:"credential,omitempty"`
	// Apps are the GitOps applications the claimant deploys, as --app
	// names them (App.String: argocd/web, flux/kustomization/apps/web);
	// an enforced lock admits a GitOps controller's writes of their
	// objects while the claimant holds it (SummaryHolderAppsAnnotation).
	// Stored as text, so that an application of a kind this lockctl does
	// not know (a newer one's) is kept as it is. Added in record version
	// 1.9.
	Apps []string `json:"apps,omitempty"`
	// ClaimID tells apart two processes with the same identity: it names
	// this claim (stored as "session", its name in earlier records).
	ClaimID string `json:"session"`
	// Pod, when set, is the pod the claimant runs in; a holder's claim is
	// alive while that pod is.
	Pod *PodRef `json:"pod,omitempty"`
	// Since is when the claim joined the queue, or when it took the lock.
	Since metav1.MicroTime `json:"since"`
	// Queued is when the claimant joined the queue (a record time): on a
	// waiter, Since unless it took an older build's place and its ageing;
	// on a holder, when it began to wait for the hold, which Since - Queued
	// is the wait of. Nil on claims written before record version 1.9.
	// Added in record version 1.9.
	Queued *metav1.MicroTime `json:"queued,omitempty"`
	// Expires, when set, is when the claim stops counting unless renewed.
	// Waiters always have one; a holder has one unless it lives in a pod.
	Expires *metav1.MicroTime `json:"expires,omitempty"`
	// TTL is the expiry the claimant asks for once it holds the lock.
	TTL metav1.Duration `json:"ttl,omitempty"`
	// HandedOver marks a holder that got the lock from a release and has not
	// confirmed it yet; until it does, its waiter expiry stands.
	HandedOver bool `json:"handedOver,omitempty"`
	// Token is the holder's fencing token (see Held.Token): the
	// resourceVersion of the write that made it the holder, recorded by the
	// next write of anyone; empty for waiters. Added in record version 1.1.
	Token string `json:"token,omitempty"`
	// TokenPending marks a holder whose take-over is the last write: the
	// lock's resourceVersion is its token, which the next write records in
	// Token. Added in record version 1.1.
	TokenPending bool `json:"tokenPending,omitempty"`
	// Unordered marks a claim whose build number tells it apart but does
	// not order it (a developer's terminal, a CI without a build counter):
	// it never supersedes nor is superseded, whatever the policy. Added in
	// record version 1.1.
	Unordered bool `json:"unordered,omitempty"`
	// Priority orders the queue: high waiters are served ahead of normal
	// ones, normal ahead of low, and every waiter rises one level for each
	// PriorityAgeing it waits. "" means PriorityNormal; a value this lockctl
	// does not know counts as normal and is kept. Added in record version
	// 1.2.
	Priority Priority `json:"priority,omitempty"`
	// Effective is the waiter's priority after ageing when it differs from
	// Priority. It is only set in the LockView that status shows, never stored
	// in the record.
	Effective Priority `json:"effectivePriority,omitempty"`
	// EstimatedWait is how long the waiter should expect to wait for its
	// turn, as EstimateWait renders it; empty when the history says
	// nothing. Like Effective, only set in the LockView that status shows,
	// never stored.
	EstimatedWait string `json:"estimatedWait,omitempty"`
	// Basis says what EstimatedWait is made from ("median hold 4m over
	// the last 20"); only set with EstimatedWait.
	Basis string `json:"basis,omitempty"`
	// IgnoreFreeze marks a contender that takes the lock even while it is
	// frozen (an emergency); the freeze records it in Overrides when it
	// does. Added in record version 1.4.
	IgnoreFreeze bool `json:"ignoreFreeze,omitempty"`
	// IgnoredFreeze is set on a holder that took the lock while it was
	// frozen (IgnoreFreeze): the freeze, as Freeze.Describe renders it. Its
	// history entry keeps it. Added in record version 1.4.
	IgnoredFreeze string `json:"ignoredFreeze,omitempty"`
	// Cancelable marks a claimant that stops what it runs when a newer
	// build of its branch asks it to (CancelRequest): a lockctl run. Added
	// in record version 1.5.
	Cancelable bool `json:"cancelable,omitempty"`
	// CancelRequest, on a Cancelable holder, is the newer build that asked
	// it to stop (run --cancel-in-progress); it stops, releases, and the
	// lock goes to that build next. Added in record version 1.5.
	CancelRequest *CancelRequest `json:"cancelRequest,omitempty"`

	// LedgerKept, on the holder, says the record's Ledger vouches for
	// the holds up to this one: a contender with a Ledger (lockctl run)
	// made this claim the holder keeping it, or a release or hand-over
	// passed it on from a holder that had it. Every other write that makes a holder leaves it
	// out, and a lockctl before record version 1.7 does not know it, so a
	// holder it puts in place vouches for nothing. Added in record version
	// 1.7.
	LedgerKept bool `json:"runJobsKept,omitempty"`

	// Released marks the holder of a free lock: the lock was released with
	// nobody waiting and is kept, for its history, as this placeholder
	// holder, which has no pod and whose expiry has passed (so a lockctl
	// older than record version 1.3 takes it over as an expired hold).
	// Added in record version 1.3.
	Released bool `json:"released,omitempty"`

	// Target is the lock's target, carried for Decide when creating.
	Target string `json:"-"`
	// HandedNow marks a holder the record being decided hands the lock
	// to: the write of that record is its take-over, so its pending token
	// is that write's version, not the version decided on (see
	// Client.write). Never stored.
	HandedNow bool `json:"-"`
	// CancelInProgress makes the contender ask an older Cancelable run of
	// its branch holding the lock to stop (Request.CancelInProgress); it is
	// never stored.
	CancelInProgress bool `json:"-"`
	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// Record is the content of the lock: the holder, the queue, and the last
// time written, which never goes backwards. docs/lock-md describes
// it field by field.
type Record struct {
	// Version is the record's schema version, "MAJOR.MINOR"; empty in
	// records written before versions existed, which are version 1.0.
	Version string           `json:"version,omitempty"`
	Target  string           `json:"target"`
	Policy  Policy           `json:"policy"`
	Holder  Claim            `json:"holder"`
	Waiters []Claim          `json:"waiters,omitempty"`
	Updated metav1.MicroTime `json:"updated"`
	// History is the last holds of the lock, oldest first, at most
	// MaxHistory of them (20 before record version 1.9). Added in record
	// version 1.3.
	History []HistoryEntry `json:"history,omitempty"`
	// Freeze, when set, stops the lock from changing hands (see Freeze).
	// A record with a freeze has version frozenVersion (major 2), and
	// may have no holder (Holder.ClaimID empty).
	Freeze *Freeze `json:"freeze,omitempty"`
	// Ledger is the bookkeeping the holder's Ledger keeps beside the hold,
	// which lock stores without reading, while the holder carries
	// LedgerKept: lockctl run's account of where runs may have left jobs
	// behind (package runjobs). Added in record version 1.7.
	Ledger json.RawMessage `json:"runJobs,omitempty"`
	// BreakGlass is the last break-glass grants made on the lock
	// (lockctl break-glass), oldest first, at most KeptHistory of them:
	// for statistics, since the grant itself lives in annotations that
	// go when it ends. Added in record version 1.9.
	BreakGlass []GrantEntry `json:"breakGlass,omitempty"`
	// Frozen is the last freezes of the lock that ended, oldest first, at
	// most KeptHistory of them: for statistics, since Freeze goes when it
	// ends. Added in record version 1.9.
	Frozen []FrozenSpan `json:"frozen,omitempty"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// GrantEntry is a break-glass grant as the record remembers it. Added in
// record version 1.9.
type GrantEntry struct {
	// User is the Kubernetes user the grant admitted.
	User string `json:"user"`
	// At is when it was granted, Until when it was to end at the latest
	// (record times).
	At    metav1.MicroTime `json:"at"`
	Until metav1.MicroTime `json:"until"`
}

// Sizes of the record, which is one annotation: the API server refuses an
// object whose annotations, keys and values, add up to more than 256 KiB.
const (
	// maxRecordBytes is the largest record lockctl writes: under the API
	// server's limit by room for the lock's other annotations. A write
	// that would make it larger drops the oldest history entries first.
	maxRecordBytes = 250 << 10
	// MaxQueueBytes is the largest record a contender may join the queue
	// of: one that would make it larger gets a *QueueFullError, and writes
	// nothing. The room between it and maxRecordBytes is what the writes
	// of a queue that drains may add (history entries, tokens, a cancel
	// request) without dropping history; with identities of typical
	// length it is about 1,000 waiters.
	MaxQueueBytes = 192 << 10
)

// RecordVersion is the version of the lock record this lockctl writes. It
// reads every record of the same major version, keeping the fields it does
// not know, and refuses other major versions with a *VersionError.
const RecordVersion = "1.10"

// recordVersion is RecordVersion parsed.
var recordVersion = schema.MustParse(RecordVersion)

// recordFields, claimFields and historyFields are the JSON fields of
// Record, Claim and HistoryEntry, found by reflection on the first decode
// (docs/adr/0100).
var (
	recordFields  schema.FieldSet[Record]
	claimFields   schema.FieldSet[Claim]
	historyFields schema.FieldSet[HistoryEntry]
)

// UnmarshalJSON decodes a record, keeping the fields it does not know.
func (r *Record) UnmarshalJSON(b []byte) error {
	type plain Record
	var err error
	r.unknown, err = schema.DecodeKeeping(b, (*plain)(r), recordFields.Get())
	r.Ledger = ledgerOrNil(r.Ledger)
	return err
}

// MarshalJSON encodes a record with the unknown fields it was read with.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return schema.EncodeKeeping(plain(r), r.unknown)
}

// UnmarshalJSON decodes a claim, keeping the fields it does not know.
func (c *Claim) UnmarshalJSON(b []byte) error {
	type plain Claim
	var err error
	c.unknown, err = schema.DecodeKeeping(b, (*plain)(c), claimFields.Get())
	return err
}

// MarshalJSON encodes a claim with the unknown fields it was read with.
func (c Claim) MarshalJSON() ([]byte, error) {
	type plain Claim
	return schema.EncodeKeeping(plain(c), c.unknown)
}

// UnmarshalJSON decodes a history entry, keeping the fields it does not know.
func (h *HistoryEntry) UnmarshalJSON(b []byte) error {
	type plain HistoryEntry
	var err error
	h.unknown, err = schema.DecodeKeeping(b, (*plain)(h), historyFields.Get())
	return err
}

// MarshalJSON encodes a history entry with the unknown fields it was read
// with.
func (h HistoryEntry) MarshalJSON() ([]byte, error) {
	type plain HistoryEntry
	return schema.EncodeKeeping(plain(h), h.unknown)
}

// Position returns the 1-based place of session in the queue, 0 if absent.
func (r *Record) Position(session string) int {
	for i, w := range r.Waiters {
		if w.ClaimID == session {
			return i + 1
		}
	}
	return 0
}

// InvalidError reports a lock object whose labels or record cannot be
// trusted. Such a lock is never changed or deleted except by a forced release.
type InvalidError struct {
	Namespace, Name string
	// Target is the namespace the lock is for, when the caller knows it.
	Target string
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("lock %s/%s is invalid: %s: %s", e.Namespace, e.Name, e.Field, e.Reason)
}

// VersionError reports a lock record of a major version this lockctl does
// not read: written by a newer (or much older) lockctl. Such a lock is never
// changed or deleted except by a forced release.
type VersionError struct {
	Namespace, Name string
	// Target is the namespace the lock is for, when the caller knows it.
	Target string
	// Found is the record's version, Supported the newest this lockctl
	// reads (RecordVersion), both "MAJOR.MINOR".
	Found, Supported string
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("lock %s/%s has record version %s, which this lockctl cannot read (it reads versions %d and %d, up to %s)",
		e.Namespace, e.Name, e.Found, recordVersion.Major, frozenRecordVersion.Major, e.Supported)
}

// NotALockError reports an object that has the lock's name but not
// lockctl's labels: it belongs to someone else and is left alone.
type NotALockError struct {
	Namespace, Name string
}

func (e *NotALockError) Error() string {
	return fmt.Sprintf("configmap %s/%s exists but is not a lockctl lock (labels %s=%s, %s=%s missing)",
		e.Namespace, e.Name, ManagedByLabel, ManagedByValue, KindLabel, KindValue)
}

// lockPrefix begins the name of every lock's ConfigMap.
const lockPrefix = "lockctl-lock-"

type fieldErr struct{ field, reason string }

// storedTimes are a claim's times as stored, for checkTimes.
type storedTimes struct {
	Since   json.RawMessage `json:"since"`
	Expires json.RawMessage `json:"expires"`
}

// timeExample shows the form of the record's times in messages.
const timeExample = "2026-12-02T16:00:00.000000Z"

// ParsePolicy returns the policy named s; "" means PolicyNewest.
func ParsePolicy(s string) (Policy, error) {
	switch Policy(s) {
	case "", PolicyNewest:
		return PolicyNewest, nil
	case PolicyFIFO:
		return PolicyFIFO, nil
	}
	return "", fmt.Errorf("unknown policy %q: use %q or %q", s, PolicyNewest, PolicyFIFO)
}

// Printable returns s as lockctl shows text from a record: as it is when
// it is valid UTF-8 and every rune is printable (unicode.IsPrint: no
// control, format or bidirectional-override characters), else quoted with
// Go escapes ("evil\u202egnp.exe"), so that it can neither drive a
// terminal nor display reversed.
func Printable(s string) string { return printable(s) }

func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

func validateIdentityField(name, value string) *IdentityError {
	switch {
	case strings.TrimSpace(value) == "":
		return &IdentityError{Field: name, Reason: "is empty"}
	case len(value) > MaxIdentityFieldLen:
		return &IdentityError{Field: name, Reason: fmt.Sprintf("is %d bytes long, more than the %d allowed", len(value), MaxIdentityFieldLen)}
	case !utf8.ValidString(value):
		return &IdentityError{Field: name, Value: value, Reason: "is not valid UTF-8"}
	case strings.IndexFunc(value, unicode.IsControl) >= 0:
		return &IdentityError{Field: name, Value: value, Reason: "contains control characters"}
	}
	return nil
}

// Name returns the ConfigMap name for the lock of target. It is always a
// valid object name: short valid targets map to "lockctl-lock-<target>",
// anything else to a truncated, sanitised form plus a hash of the target.
func Name(target string) string {
	name := lockPrefix + target
	if len(name) <= validation.DNS1123SubdomainMaxLength && len(validation.IsDNS1123Subdomain(name)) == 0 {
		return name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(target) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	clean := strings.Trim(b.String(), "-")
	if len(clean) > 40 {
		clean = strings.Trim(clean[:40], "-")
	}
	if clean != "" {
		clean += "-"
	}
	return lockPrefix + clean + shortHash(target)
}

// TargetLabelValue returns target when it is a valid label value, else a hash.
func TargetLabelValue(target string) string {
	if len(validation.IsValidLabelValue(target)) == 0 {
		return target
	}
	return "sha256-" + shortHash(target)
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// IsLock reports whether cm carries lockctl's lock labels.
func IsLock(cm *corev1.ConfigMap) bool {
	return cm.Labels[ManagedByLabel] == ManagedByValue && cm.Labels[KindLabel] == KindValue
}

// Decode reads the record of cm, checking labels and every stored field.
// Errors are *NotALockError or *InvalidError.
func Decode(cm *corev1.ConfigMap) (*Record, error) {
	if !IsLock(cm) {
		return nil, &NotALockError{Namespace: cm.Namespace, Name: cm.Name}
	}
	invalid := func(field, reason string) error {
		return &InvalidError{Namespace: cm.Namespace, Name: cm.Name, Field: field, Reason: reason}
	}
	raw, ok := cm.Annotations[RecordAnnotation]
	if !ok {
		return nil, invalid("metadata.annotations["+RecordAnnotation+"]", "missing")
	}
	rec, ok := decodeStrict(raw)
	vs := ""
	if ok {
		vs = rec.Version
	} else {
		var err error
		if vs, err = schema.Peek([]byte(raw)); err != nil {
			return nil, invalid("version", err.Error())
		}
	}
	version := schema.Version{Major: 1}
	if vs != "" {
		var err error
		if version, err = schema.Parse(vs); err != nil {
			return nil, invalid("version", err.Error())
		}
	}
	if version.Major != recordVersion.Major && version.Major != frozenRecordVersion.Major {
		return nil, &VersionError{Namespace: cm.Namespace, Name: cm.Name, Found: version.String(), Supported: RecordVersion}
	}
	if !ok {
		// NOTE: checkTimes refuses what the decoders refuse: a record the
		// strict decode took has nothing for it to find.
		if field, reason := checkTimes(raw); field != "" {
			return nil, invalid(field, reason)
		}
		rec = &Record{}
		if err := json.Unmarshal([]byte(raw), rec); err != nil {
			return nil, invalid("metadata.annotations["+RecordAnnotation+"]", "not a lock record: "+err.Error())
		}
	}
	if _, err := ParsePolicy(string(rec.Policy)); err != nil {
		return nil, invalid("policy", err.Error())
	}
	if rec.Target == "" {
		return nil, invalid("target", "empty")
	}
	if rec.Freeze != nil && rec.Freeze.Until.IsZero() {
		return nil, invalid("freeze.until", "missing")
	}
	if version.Major == frozenRecordVersion.Major && rec.Freeze == nil {
		return nil, invalid("freeze", "missing: a version 2 record is a frozen lock")
	}
	if err := validateClaim(&rec.Holder); err != nil {
		return nil, invalid("holder."+err.field, err.reason)
	}
	for i := range rec.Waiters {
		if err := validateClaim(&rec.Waiters[i]); err != nil {
			return nil, invalid(fmt.Sprintf("waiters[%d].%s", i, err.field), err.reason)
		}
		if !hasTime(rec.Waiters[i].Expires) {
			return nil, invalid(fmt.Sprintf("waiters[%d].expires", i), "missing")
		}
	}
	return rec, nil
}

// hasTime reports whether t is a time: the zero time, which the record
// stores as null, is none.
func hasTime(t *metav1.MicroTime) bool { return t != nil && !t.IsZero() }

func validateClaim(c *Claim) *fieldErr {
	if c.ClaimID == "" {
		return &fieldErr{"session", "empty"}
	}
	for _, f := range []struct{ name, value string }{
		{"owner", c.Owner}, {"repo", c.Repo}, {"branch", c.Branch},
	} {
		if f.value == "" {
			return &fieldErr{f.name, "empty"}
		}
	}
	if _, err := c.buildNumber(); err != nil {
		return &fieldErr{"build", err.Error()}
	}
	if c.Since.IsZero() {
		return &fieldErr{"since", "missing"}
	}
	if c.Pod == nil && !hasTime(c.Expires) {
		return &fieldErr{"expires", "missing (a claim without a pod needs an expiry)"}
	}
	if c.Pod != nil && (c.Pod.Name == "" || c.Pod.Namespace == "") {
		return &fieldErr{"pod", "name and namespace are required"}
	}
	if r := c.CancelRequest; r != nil {
		if _, err := r.buildNumber(); err != nil || r.ClaimID == "" {
			return &fieldErr{"cancelRequest", "needs the build and session of the build that asked"}
		}
	}
	return nil
}

// Encode writes rec into cm's annotation and sets the labels and the pod
// owner reference that go with it.
func Encode(cm *corev1.ConfigMap, rec *Record) error {
	// A record read from a newer minor version still carries its fields.
	// A frozen record is major version 2, so that lockctl releases that do
	// not know freezes refuse it; once thawed it is version 1 again.
	// The minor of a frozen record is that of the 1.x fields it carries, so
	// a newer minor's fields keep their version across freeze and thaw.
	own := recordVersion
	if rec.Freeze != nil {
		own = frozenRecordVersion
	}
	if v, err := schema.Parse(rec.Version); err == nil && own.Minor < v.Minor {
		own.Minor = v.Minor
	}
	// The version is set on a copy: encode never changes the caller's
	// record, which may be shared (a decision's input, a test fixture).
	out := *rec
	out.Version = own.String()
	raw, err := json.Marshal(&out)
	if err != nil {
		return fmt.Errorf("encode lock record: %w", err)
	}
	for len(raw) > maxRecordBytes && len(out.History) > 0 {
		// The history is there for people; the write it would make too
		// large for the API server is a hand-over, a release or a renewal,
		// which must not fail: the oldest holds go first.
		out.History = out.History[1:]
		if raw, err = json.Marshal(&out); err != nil {
			return fmt.Errorf("encode lock record: %w", err)
		}
	}
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[ManagedByLabel] = ManagedByValue
	cm.Labels[KindLabel] = KindValue
	cm.Labels[TargetLabel] = TargetLabelValue(rec.Target)
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[RecordAnnotation] = string(raw)
	cm.Annotations[PurposeAnnotation] = fmt.Sprintf(
		"deploy lock for namespace %q, managed by lockctl: inspect with `lockctl status %s`, break with `lockctl release %s --force`",
		rec.Target, rec.Target, rec.Target)
	writeSummary(cm, &out)
	cm.OwnerReferences = ownerRefs(cm.Namespace, rec.Holder.Pod)
	return nil
}

// ownerRefs makes the holder's pod own the lock, so deleting the pod
// garbage-collects it. Owner references cannot cross namespaces, so a pod in
// another namespace is only recorded in the claim.
func ownerRefs(lockNamespace string, pod *PodRef) []metav1.OwnerReference {
	if pod == nil || pod.UID == "" || pod.Namespace != lockNamespace {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}
}

// Later returns the later of t and floor, so recorded times never go back.
func Later(t time.Time, floor metav1.MicroTime) metav1.MicroTime {
	if t.Before(floor.Time) {
		return floor
	}
	return metav1.NewMicroTime(t)
}

// checkTimes finds the first stored time of a claim, or the record's
// update, that the record's decoders would refuse, so a corrupt lock is
// reported by field rather than by a JSON decoder message. It takes the
// times as the decoders take them (keys matched as encoding/json matches
// them, the last of a repeated key) and skips the rest of the record.
func checkTimes(raw string) (field, reason string) {
	var doc struct {
		Updated json.RawMessage `json:"updated"`
		Holder  storedTimes     `json:"holder"`
		Waiters []storedTimes   `json:"waiters"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return "", "" // the decode reports it
	}
	if r := badTime(doc.Updated); r != "" {
		return "updated", r
	}
	claims := append([]storedTimes{doc.Holder}, doc.Waiters...)
	for i, c := range claims {
		prefix := "holder"
		if i > 0 {
			prefix = fmt.Sprintf("waiters[%d]", i-1)
		}
		if r := badTime(c.Since); r != "" {
			return prefix + ".since", r
		}
		if r := badTime(c.Expires); r != "" {
			return prefix + ".expires", r
		}
	}
	return "", ""
}

// badTime says why v, a stored time as raw JSON (nil when absent), is no
// time as the record stores them (metav1.MicroTime: RFC 3339 with six
// digits of fraction); "" when it is one, or absent, or null.
func badTime(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var t metav1.MicroTime
	if t.UnmarshalJSON(v) == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		var other any
		_ = json.Unmarshal(v, &other) // valid JSON: the record's json.Unmarshal took it
		return fmt.Sprintf("%v is not a time", other)
	}
	return fmt.Sprintf("%q is not an RFC 3339 time with microseconds (such as %s)", s, timeExample)
}

// Defaults for the record's fields left at their zero value.
const (
	// DefaultTTL is how long a holder without a pod keeps the lock.
	DefaultTTL = time.Hour
	// DefaultWaiterTTL is how long a waiter's place lasts between renewals;
	// waiters renew at two thirds of it.
	DefaultWaiterTTL = time.Minute
)

// ledgerOrNil returns raw, or nil for a ledger that is absent or null.
func ledgerOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}
