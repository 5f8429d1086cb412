package dashboard

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// Snapshot is what the page shows at one moment, sent to the browsers as
// JSON (GET /api/snapshot, and each server-sent event of /events).
type Snapshot struct {
	// Seq counts the snapshots of this process.
	Seq uint64 `json:"seq"`
	// Now is when the snapshot was made, on the clock locks are judged on
	// (the API server's), to the microsecond; the page counts ages and
	// words liveness on its own clock corrected by it (and by the event
	// stream's "clock" events).
	Now metav1.MicroTime `json:"now"`
	// LockNamespace is the namespace of the locks; "" means every
	// namespace.
	LockNamespace string `json:"lockNamespace"`
	// Locks are the locks, by namespace and name: those status lists, and
	// free ones kept for their history.
	Locks []LockEntry `json:"locks"`
	// Windows are the freeze windows' next freezes, soonest first.
	Windows []Window `json:"windows"`
	// ShowJobs is false when the page shows no jobs.
	ShowJobs bool `json:"showJobs"`
	// JobNamespace is the namespace of the job records.
	JobNamespace string `json:"jobNamespace,omitempty"`
	// Jobs are the newest job records, newest first.
	Jobs []JobEntry `json:"jobs"`
	// JobsTotal counts every job record watched, shown or not.
	JobsTotal int `json:"jobsTotal"`
	// Problems are what keeps the page from being complete (a watch
	// refused), for people.
	Problems []string `json:"problems,omitempty"`

	// locksJSON are the Locks encoded, made once per version of each lock
	// (cachedView), when the hub made the snapshot.
	locksJSON []json.RawMessage
}

// LockEntry is one lock on the page.
type LockEntry struct {
	// Lock is the lock as `lockctl status -o json` prints it, so fields
	// added there reach the page.
	Lock lock.LockView `json:"lock"`
	// History is the lock's last holds (at most lock.KeptHistory), newest
	// first, as `lockctl history` shows them.
	History []record.HistoryEntry `json:"history"`
	// Expires, when set, is the holder's expiry the lock's liveness is
	// worded from, and Lock.Status.Liveness is empty: the page words it on
	// its clock, as status does at its moment ("expires in 59m3s",
	// "expired 4s ago"). Words judged at one moment would change the entry
	// every second; the expiry changes only when the lock does, so an
	// entry stays the same bytes until its lock changes or its state does
	// with time (Hub: an entry's due time).
	Expires *metav1.MicroTime `json:"expires,omitempty"`
}

// Window is the freeze a recurring freeze window makes next, or the one
// it makes now.
type Window struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Reason    string      `json:"reason"`
	Schedule  string      `json:"schedule"`
	Targets   []string    `json:"targets,omitempty"`
	Start     metav1.Time `json:"start"`
	End       metav1.Time `json:"end"`
	// Active is true while the freeze is in force.
	Active bool `json:"active"`
}

// JobEntry is one job record on the page: what `lockctl get jobs` shows,
// without the pod spec.
type JobEntry struct {
	Name        string    `json:"name"`
	Job         string    `json:"job"`
	Type        job.Type  `json:"type"`
	State       job.State `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	Description string    `json:"description,omitempty"`
	Pod         string    `json:"pod,omitempty"`
	BuildID     string    `json:"buildID,omitempty"`
	Cluster     string    `json:"cluster"`
	// Branch is the base ref of the job's refs.
	Branch string `json:"branch,omitempty"`
	// Started is when the job was submitted; Pending when its pod was
	// created; Completed when it ended.
	Started   *metav1.Time `json:"started,omitempty"`
	Pending   *metav1.Time `json:"pending,omitempty"`
	Completed *metav1.Time `json:"completed,omitempty"`
	Terminal  bool         `json:"terminal"`
}

func newJobEntry(j *job.Job) JobEntry {
	e := JobEntry{
		Name: j.Name, Job: j.Spec.Job, Type: j.Spec.Type, State: j.Status.State,
		Reason: j.Status.Reason, Description: j.Status.Description,
		Pod: j.Status.PodName, BuildID: j.Status.BuildID, Cluster: j.ClusterAlias(),
		Pending: j.Status.PendingTime, Completed: j.Status.CompletionTime,
		Terminal: j.IsTerminal(),
	}
	if e.State == "" {
		e.State = job.Triggered
	}
	if j.Spec.Refs != nil {
		e.Branch = j.Spec.Refs.BaseRef
	}
	switch {
	case j.Status.StartTime != nil:
		t := metav1.NewTime(j.Status.StartTime.Time)
		e.Started = &t
	case !j.CreationTimestamp.IsZero():
		t := j.CreationTimestamp
		e.Started = &t
	}
	return e
}
