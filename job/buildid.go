package job

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// buildIDKey is the data key of a build-ID counter ConfigMap.
const buildIDKey = "buildID"

// buildIDAttempts bounds the compare-and-swap retries of NextBuildID.
const buildIDAttempts = 50

// maxBuildIDBlock bounds how many build IDs one counter update reserves.
const maxBuildIDBlock = 1000

// counter is the build-ID counter of one job name in this process: the last
// ConfigMap written, so the next IDs cost one update instead of a read and an
// update; the IDs reserved and not handed out yet, left of them from next;
// and the
// callers waiting for IDs, so that concurrent callers share one update
// (group commit).
type counter struct {
	mu         sync.Mutex
	cm         *corev1.ConfigMap
	next, left uint64
	waiting    []chan idResult
	leading    bool
}

type idResult struct {
	id  uint64
	err error
}

// BuildIDCounterName returns the name of the ConfigMap counting the build IDs
// of a job name. The dot keeps it apart from job records, whose names are
// DNS labels.
func BuildIDCounterName(jobName string) string { return "lockctl.build-id." + jobName }

// NextBuildID returns the next build ID of a job name: "1" for the first,
// then higher ones, across processes and restarts. The counter is a
// ConfigMap per job name changed by compare-and-swap, so two callers never
// get the same ID. Callers in one process that ask at the same time share
// one update, which hands each of them its own ID, and an update reserves
// as many IDs as the store's build-ID block function (StoreOptions.BuildIDBlock)
// expects to be asked for soon: the rest are handed out later without a
// write. Reserved IDs this process never hands out are skipped, and two
// processes reserving blocks of one job name at once hand out their IDs
// interleaved in time (docs/adr/0009-build-id-blocks.md).
func (s *Store) NextBuildID(ctx context.Context, jobName string) (string, error) {
	c := s.counterFor(jobName)
	ch := make(chan idResult, 1)
	c.mu.Lock()
	c.waiting = append(c.waiting, ch)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()
	if lead {
		// NOTE: the allocator outlives this caller while others wait, so it
		// runs on a context that ctx's cancellation does not end.
		go s.allocate(context.WithoutCancel(ctx), jobName, c)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return "", r.err
		}
		return strconv.FormatUint(r.id, 10), nil
	case <-ctx.Done():
		return "", fmt.Errorf("next build id for job %q: %w", jobName, context.Cause(ctx))
	}
}

// allocateTimeout bounds one update of a build-ID counter.
const allocateTimeout = 30 * time.Second

// allocate serves the waiting callers batch by batch until none is left:
// from the IDs reserved earlier while they last, then from a new block.
func (s *Store) allocate(base context.Context, jobName string, c *counter) {
	for {
		c.mu.Lock()
		batch := c.waiting
		c.waiting = nil
		if len(batch) == 0 {
			c.leading = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for len(batch) > 0 && c.left > 0 {
			batch[0] <- idResult{id: c.next}
			batch, c.next, c.left = batch[1:], c.next+1, c.left-1
		}
		if len(batch) == 0 {
			continue
		}
		n := uint64(len(batch))
		block := n
		if s.idBlock != nil {
			block = max(block, uint64(min(max(s.idBlock(jobName), 0), maxBuildIDBlock)))
		}
		ctx, cancel := context.WithTimeout(base, allocateTimeout)
		last, err := s.reserve(ctx, jobName, c, block)
		cancel()
		if err != nil {
			for _, ch := range batch {
				ch <- idResult{err: err}
			}
			continue
		}
		first := last - block + 1
		for i, ch := range batch {
			ch <- idResult{id: first + uint64(i)}
		}
		c.next, c.left = first+n, block-n
	}
}

// reserve adds n to the counter with a compare-and-swap and returns the new
// value, the last of the n IDs reserved.
func (s *Store) reserve(ctx context.Context, jobName string, c *counter, n uint64) (uint64, error) {
	for range buildIDAttempts {
		if c.cm == nil {
			cm, err := s.readCounter(ctx, jobName)
			if err != nil {
				return 0, err
			}
			if cm == nil {
				created, err := s.createCounter(ctx, jobName, n)
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				if err != nil {
					return 0, fmt.Errorf("create build id counter for job %q: %w", jobName, err)
				}
				c.cm = created
				return n, nil
			}
			c.cm = cm
		}
		last, err := strconv.ParseUint(c.cm.Data[buildIDKey], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("build id counter %q holds %q: %w", c.cm.Name, c.cm.Data[buildIDKey], ErrCorrupt)
		}
		next := c.cm.DeepCopy()
		next.Data[buildIDKey] = strconv.FormatUint(last+n, 10)
		out, err := s.cms.Update(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			c.cm = nil
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("update build id counter %q: %w", next.Name, err)
		}
		c.cm = out
		return last + n, nil
	}
	return 0, fmt.Errorf("next build id for job %q: %w", jobName, ErrConflict)
}

func (s *Store) counterFor(jobName string) *counter {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.counters[jobName]
	if !ok {
		c = &counter{}
		s.counters[jobName] = c
	}
	return c
}

// readCounter returns the counter ConfigMap, nil if there is none.
func (s *Store) readCounter(ctx context.Context, jobName string) (*corev1.ConfigMap, error) {
	cm, err := s.cms.Get(ctx, BuildIDCounterName(jobName), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get build id counter for job %q: %w", jobName, err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm, nil
}

func (s *Store) createCounter(ctx context.Context, jobName string, n uint64) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      BuildIDCounterName(jobName),
			Namespace: s.namespace,
			Labels: map[string]string{
				LabelManagedBy: ManagedByValue,
				LabelKind:      KindBuildID,
				LabelJob:       jobName,
			},
		},
		Data: map[string]string{buildIDKey: strconv.FormatUint(n, 10)},
	}
	return s.cms.Create(ctx, cm, metav1.CreateOptions{})
}
