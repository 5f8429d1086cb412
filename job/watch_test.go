package job

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
)

// noWatchListGetter is a fake clientset's ConfigMaps getter declaring, as
// the clientset does, that it cannot serve streaming lists.
type noWatchListGetter struct{ kube.ConfigMapsGetter }

func (noWatchListGetter) IsWatchListSemanticsUnSupported() bool { return true }

// storedAt is the record of job name as stored at resourceVersion rv.
func storedAt(t *testing.T, name, rv string) *corev1.ConfigMap {
	t.Helper()
	j := newJob(name)
	j.Namespace, j.ResourceVersion = ns, rv
	j.Status.State = Pending
	cm, err := ToConfigMap(j)
	require.NoError(t, err)
	cm.ResourceVersion = rv
	return cm
}

// TestStoreWatchAfter: the records already shown are not given again when
// the informer first lists them; every change after them is, a record
// deleted included; with names, only the records named are.
func TestStoreWatchAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		names []string
		// push are the changes after the records shown, in order.
		push func(fw *watch.FakeWatcher, t *testing.T)
		want []string
	}{
		{
			name: "every change after the list",
			push: func(fw *watch.FakeWatcher, t *testing.T) {
				fw.Modify(storedAt(t, "a", "5"))
				fw.Add(storedAt(t, "c", "6"))
				fw.Delete(storedAt(t, "b", "1"))
			},
			want: []string{"a@5", "c@6", "b@1"},
		},
		{
			name:  "only the names given",
			names: []string{"a"},
			push: func(fw *watch.FakeWatcher, t *testing.T) {
				fw.Modify(storedAt(t, "b", "5"))
				fw.Add(storedAt(t, "c", "6"))
				fw.Modify(storedAt(t, "a", "7"))
				fw.Modify(storedAt(t, "a", "8"))
				fw.Delete(storedAt(t, "a", "8"))
			},
			want: []string{"a@7", "a@8", "a@8"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewClientset(storedAt(t, "a", "1"), storedAt(t, "b", "1"))
			fw := watch.NewFake()
			cs.PrependWatchReactor("configmaps", k8stesting.DefaultWatchReactor(fw, nil))
			s := NewStore(noWatchListGetter{kubetest.CoreV1(cs.CoreV1())}, ns, StoreOptions{})
			shown, err := s.List(t.Context(), ListOptions{})
			require.NoError(t, err)
			require.Len(t, shown, 2)

			done := errors.New("seen enough")
			var got []string
			errc := make(chan error, 1)
			go func() {
				errc <- s.WatchAfter(t.Context(), ListOptions{}, tt.names, shown, func(j *Job) error {
					got = append(got, j.Name+"@"+j.ResourceVersion)
					if len(got) == len(tt.want) {
						return done
					}
					return nil
				})
			}()
			tt.push(fw, t)
			require.ErrorIs(t, <-errc, done, "fn's error ends the watch")
			assert.Equal(t, tt.want, got, "changes given, in order")
		})
	}
}
