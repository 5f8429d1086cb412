package notify

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// MarksName is the ConfigMap, in the lock namespace, whose data marks the
// events a replica took to deliver: event ID → "replica time".
const MarksName = "lockctl-notifications"

// markRetention is how long a mark is kept: longer than any replica
// could see the same change late.
const markRetention = 24 * time.Hour

// marks claims events in MarksName with a compare-and-swap.
type marks struct {
	cms       kube.ConfigMapsGetter
	namespace string
	replica   string
	clk       clock.PassiveClock
}

// decideMark is the rule of a claim: with data as read at now, whether id
// is this replica's to deliver, and the data to write (nil: nothing),
// marks older than markRetention dropped.
func decideMark(data map[string]string, id, replica string, now time.Time) (mine bool, out map[string]string) {
	if _, ok := data[id]; ok {
		return false, nil
	}
	out = map[string]string{}
	for k, v := range data {
		_, at, _ := strings.Cut(v, " ")
		if t, err := time.Parse(time.RFC3339, at); err == nil && now.Sub(t) > markRetention {
			continue
		}
		out[k] = v
	}
	out[id] = replica + " " + now.UTC().Format(time.RFC3339)
	return true, out
}

// claim reports whether this replica marked id first: it reads the marks,
// decides (decideMark) and writes on the resourceVersion read; a lost
// race reads and decides again.
func (m *marks) claim(ctx context.Context, id string) (bool, error) {
	cms := m.cms.ConfigMaps(m.namespace)
	for {
		cm, err := cms.Get(ctx, MarksName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = nil
		} else if err != nil {
			return false, fmt.Errorf("read configmap %s/%s: %w", m.namespace, MarksName, err)
		}
		var data map[string]string
		if cm != nil {
			data = cm.Data
		}
		mine, out := decideMark(data, id, m.replica, m.clk.Now())
		if !mine {
			return false, nil
		}
		if cm == nil {
			_, err = cms.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: MarksName, Namespace: m.namespace,
					Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue},
					Annotations: map[string]string{record.PurposeAnnotation: "lockctl: the notifications sent, so that each is sent once by one replica"}},
				Data: out,
			}, metav1.CreateOptions{})
		} else {
			next := cm.DeepCopy()
			next.Data = out
			_, err = cms.Update(ctx, next, metav1.UpdateOptions{})
		}
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			continue
		}
		return false, fmt.Errorf("mark a notification in configmap %s/%s: %w", m.namespace, MarksName, err)
	}
}
