package lock

import (
	"context"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Summarize makes target's lock readable by an admission policy (lockctl
// enforce) and marks it enforced in mode (EnforcedAnnotation; "" removes
// the mark). A lock that does not exist is created free (as a released
// lock is kept, for its history: the next contender takes it as a new
// one, with its own policy), so that the policy has its parameter, unless
// mode is ""; a record without a summary, or with one that is not of it
// (written by a lockctl before record version 1.8), is written back as it
// was with its summary, and so is a lock whose freeze windows' intervals
// (SummaryWindowsAnnotation) are not those of now. A lock whose summary
// is current and whose mark is mode is not written. It reports whether
// it wrote.
func (c *Client) Summarize(ctx context.Context, target, mode string) (bool, error) {
	wrote := false
	mark := map[string]string{record.EnforcedAnnotation: mode}
	err := c.update(ctx, "summarize", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		wrote = false
		if cm == nil {
			if mode == "" {
				return change{}, nil
			}
			rec := &record.Record{Target: target, Policy: record.PolicyNewest, Updated: metav1.NewMicroTime(c.clk.Now())}
			rec.Free(rec.Updated)
			wrote = true
			return change{Decision: record.Decision{Record: rec, Create: true}, annotate: mark}, nil
		}
		if record.SummaryCurrent(cm) && cm.Annotations[record.EnforcedAnnotation] == mode {
			// The freeze windows' intervals are refreshed too: a window
			// added or passed since the last write.
			cp := cm.DeepCopy()
			if err := c.summarizeWindows(ctx, cp, target); err != nil {
				return change{}, err
			}
			if cp.Annotations[record.SummaryWindowsAnnotation] == cm.Annotations[record.SummaryWindowsAnnotation] &&
				cp.Annotations[record.SummaryWindowsUntilAnnotation] == cm.Annotations[record.SummaryWindowsUntilAnnotation] {
				return change{}, nil
			}
		}
		rec, err := c.decode(cm, target)
		if err != nil {
			return change{}, err
		}
		wrote = true
		return change{Decision: record.Decision{Record: rec}, annotate: mark}, nil
	})
	return wrote, err
}
