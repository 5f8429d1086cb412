package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestListReadsPages: List asks for listPageSize locks a request and
// follows the continue token to the last page, viewing every lock.
func TestListReadsPages(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	lockOf := func(target, repo string) corev1.ConfigMap {
		rec := recordOf(held(claim("h-"+target, repo, "main", "7"), t0))
		rec.Target = target
		return *lockObject(t, rec)
	}
	pages := map[string]*corev1.ConfigMapList{
		"": {ListMeta: metav1.ListMeta{Continue: "page-2", RemainingItemCount: ptr(int64(1))},
			Items: []corev1.ConfigMap{lockOf("staging", "api"), lockOf("qa", "web")}},
		"page-2": {Items: []corev1.ConfigMap{lockOf("production", "db")}},
	}
	var asked []metav1.ListOptions
	c, _ := newTestClient(t, now, func(cs *fake.Clientset) {
		cs.PrependReactor("list", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			o := a.(k8stesting.ListActionImpl).ListOptions
			asked = append(asked, o)
			return true, pages[o.Continue], nil
		})
	})
	got, err := c.List(t.Context())
	require.NoError(t, err)
	var targets []string
	for _, l := range got {
		targets = append(targets, l.Spec.Target)
	}
	assert.Equal(t, []string{"staging", "qa", "production"}, targets)
	require.Len(t, asked, 2)
	for _, o := range asked {
		assert.Equal(t, int64(listPageSize), o.Limit)
		assert.Contains(t, o.LabelSelector, record.KindLabel+"="+record.KindValue)
	}
	assert.Equal(t, "page-2", asked[1].Continue)
}
