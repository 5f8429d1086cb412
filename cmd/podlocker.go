package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

// podLocker takes namespace locks for job pods through package lock. The
// lock is owned by the pod, and its identity comes from the pod's labels.
//
// NOTE: locks live in the lock namespace of the --context cluster and the
// holder pod is looked up there, so jobs with spec.lock should run in the
// build cluster of that context.
type podLocker struct{ c *lock.Client }

var _ scheduler.NamespaceLocker = podLocker{}

func newPodLocker(f *Factory, l *lockFlags) (scheduler.NamespaceLocker, error) {
	c, err := newLockClient(f, l)
	if err != nil {
		return nil, err
	}
	return podLocker{c: c}, nil
}

// TryAcquire implements scheduler.NamespaceLocker.
func (p podLocker) TryAcquire(ctx context.Context, target string, pod *corev1.Pod) (bool, error) {
	held, _, err := p.c.TryAcquire(ctx, lock.Request{
		Target:   target,
		Identity: podIdentity(pod),
		Pod:      &lock.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Session:  string(pod.UID),
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
func (p podLocker) Release(ctx context.Context, target string, pod *corev1.Pod) error {
	_, err := p.c.Release(ctx, target, podIdentity(pod), lock.ReleaseOptions{})
	return err
}

// podIdentity is the lock identity of a job pod: its refs and build ID,
// with the job's name and type standing in for a periodic job's repository.
func podIdentity(pod *corev1.Pod) lock.Identity {
	l := pod.Labels
	branch := l[job.LabelBaseRef]
	if pull := l[job.LabelPull]; pull != "" {
		branch = "PR-" + pull
	}
	return lock.Identity{
		Owner:  firstNonEmpty(l[job.LabelOrg], "lockctl"),
		Repo:   firstNonEmpty(l[job.LabelRepo], l[job.LabelJob]),
		Branch: firstNonEmpty(branch, strings.ToLower(l[job.LabelType])),
		Build:  l[job.LabelBuildID],
	}
}
