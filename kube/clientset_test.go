package kube

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// The three groups' clients share one HTTP client (one connection) and one
// client-side rate limiter, and send client-go's User-Agent when the
// config names none, as client-go's clientset does.
func TestNewForConfig(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		paths  []string
		agents []string
		conns  atomic.Int32
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths, agents = append(paths, r.Method+" "+r.URL.Path), append(agents, r.UserAgent())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	// NOTE: a dialer of its own makes the config's transport its own too.
	// client-go caches one transport for all configs alike (every
	// plain-HTTP config of the package's parallel tests), so the connection
	// counted here was not this test's alone: one run of the package in 30
	// under -race counted two. It also means that three HTTP clients would
	// open three connections, not share one cached transport.
	cs, err := NewForConfig(&rest.Config{Host: srv.URL, QPS: 50, Burst: 100, Dial: (&net.Dialer{}).DialContext})
	require.NoError(t, err)
	ctx := t.Context()
	_, err = cs.CoreV1().ConfigMaps("ci").Get(ctx, "lock", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cs.EventsV1().Events("ci").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{}, metav1.CreateOptions{})
	require.NoError(t, err)

	assert.Equal(t, []string{
		"GET /api/v1/namespaces/ci/configmaps/lock",
		"POST /apis/events.k8s.io/v1/namespaces/ci/events",
		"POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
	}, paths, "each group at its path")
	for _, a := range agents {
		assert.Equal(t, rest.DefaultKubernetesUserAgent(), a, "client-go's User-Agent when the config has none")
	}
	assert.Equal(t, int32(1), conns.Load(), "one HTTP client, one connection, for the three groups")
	limiter := cs.core.client.GetRateLimiter()
	require.NotNil(t, limiter)
	assert.Same(t, limiter, cs.events.client.GetRateLimiter(), "one token bucket")
	assert.Same(t, limiter, cs.authz.client.GetRateLimiter(), "one token bucket")
}

func TestNewForConfigBurst(t *testing.T) {
	t.Parallel()
	_, err := NewForConfig(&rest.Config{Host: "https://127.0.0.1:1", QPS: 5})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "burst is required")
}

// NewInformer lists and watches with the tweaked options, transforms what
// it caches, and follows changes after its first list.
func TestNewInformer(t *testing.T) {
	t.Parallel()
	sel := labels.Set{"app.kubernetes.io/managed-by": "lockctl"}
	cs := fake.NewClientset(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ci", Labels: sel}})
	inf := NewInformer[*corev1.ConfigMapList](cs, cs.CoreV1().ConfigMaps("ci"), &corev1.ConfigMap{}, InformerOptions{
		Tweak: func(o *metav1.ListOptions) { o.LabelSelector = sel.String() },
		Transform: func(obj any) (any, error) {
			cm := obj.(*corev1.ConfigMap)
			cm.Data = map[string]string{"seen": "yes"}
			return cm, nil
		},
	})
	ctx := t.Context()
	go inf.RunWithContext(ctx)
	require.True(t, cache.WaitForCacheSync(ctx.Done(), inf.HasSynced))

	got, ok, err := inf.GetIndexer().GetByKey("ci/a")
	require.NoError(t, err)
	require.True(t, ok, "the listed object is cached")
	assert.Equal(t, map[string]string{"seen": "yes"}, got.(*corev1.ConfigMap).Data, "transformed before it is cached")
	byNS, err := inf.GetIndexer().ByIndex(cache.NamespaceIndex, "ci")
	require.NoError(t, err)
	assert.Len(t, byNS, 1, "indexed by namespace")

	// NOTE: the fake's watch does not replay what changed before it began.
	require.Eventually(t, func() bool {
		for _, a := range cs.Actions() {
			if _, ok := a.(k8stesting.WatchActionImpl); ok {
				return true
			}
		}
		return false
	}, testTimeout, testTick, "the informer watches after its first list")
	_, err = cs.CoreV1().ConfigMaps("ci").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ci", Labels: sel}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok, _ := inf.GetIndexer().GetByKey("ci/b")
		return ok
	}, testTimeout, testTick, "a change after the first list reaches the cache")
	var listed, watched bool
	for _, a := range cs.Actions() {
		switch a := a.(type) {
		case k8stesting.ListActionImpl:
			listed = true
			assert.Equal(t, sel.String(), a.GetListRestrictions().Labels.String(), "list tweaked")
		case k8stesting.WatchActionImpl:
			watched = true
			assert.Equal(t, sel.String(), a.GetWatchRestrictions().Labels.String(), "watch tweaked")
		}
	}
	assert.True(t, listed, "listed")
	assert.True(t, watched, "watched")
}
