package run

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/scheduler"
)

// PodLocker takes namespace locks for job pods that ask for one
// (spec.lock): the lock is owned by the pod, so it lives as long as the pod
// does, and its identity comes from the pod's labels (PodIdentity).
//
// NOTE: locks live in the lock namespace of the client's cluster and the
// holder pod is looked up there, so jobs with spec.lock should run in the
// build cluster of that cluster.
type PodLocker struct{ c *lock.Client }

var _ scheduler.NamespaceLocker = PodLocker{}

// NewPodLocker returns a PodLocker taking locks through c.
func NewPodLocker(c *lock.Client) PodLocker { return PodLocker{c: c} }

// TryAcquire implements scheduler.NamespaceLocker.
func (p PodLocker) TryAcquire(ctx context.Context, target string, pod *corev1.Pod) (bool, error) {
	held, _, err := p.c.TryAcquire(ctx, lock.Request{
		Target:   target,
		Identity: PodIdentity(pod),
		Pod:      &record.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		ClaimID:  string(pod.UID),
	})
	if errors.Is(err, lock.ErrSuperseded) {
		return false, fmt.Errorf("lock %q for pod %q: %w: %w", target, pod.Name, scheduler.ErrLockSuperseded, err)
	}
	if err != nil {
		return false, fmt.Errorf("lock %q for pod %q: %w", target, pod.Name, err)
	}
	return held != nil, nil
}

// Release implements scheduler.NamespaceLocker.
func (p PodLocker) Release(ctx context.Context, target string, pod *corev1.Pod) error {
	_, err := p.c.Release(ctx, target, PodIdentity(pod), lock.ReleaseOptions{})
	return err
}

// PodIdentity is the lock identity of a job pod: its refs and build ID,
// with the job's name and type standing in for a periodic job's repository.
func PodIdentity(pod *corev1.Pod) record.Identity {
	l := pod.Labels
	branch := l[job.LabelBaseRef]
	if pull := l[job.LabelPull]; pull != "" {
		branch = "PR-" + pull
	}
	return record.Identity{
		Owner:  firstNonEmpty(l[job.LabelOrg], "lockctl"),
		Repo:   firstNonEmpty(l[job.LabelRepo], l[job.LabelJob]),
		Branch: firstNonEmpty(branch, strings.ToLower(l[job.LabelType])),
		Build:  l[job.LabelBuildID],
	}
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
