package kube_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
)

// sent is what a client put on the wire for one call.
type sent struct {
	Method, Path, Query, Accept, ContentType string
	Body                                     []byte
}

// recorder is an API server that records every request and answers with
// answer (an empty JSON object when nil).
type recorder struct {
	mu     sync.Mutex
	sent   []sent
	answer func(w http.ResponseWriter, r *http.Request)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.sent = append(rec.sent, sent{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Content-Type"), body})
	rec.mu.Unlock()
	if rec.answer != nil {
		rec.answer(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("watch") == "true" {
		return // an empty stream: the watch ends at once
	}
	_, _ = w.Write([]byte(`{}`))
}

func (rec *recorder) take() []sent {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := rec.sent
	rec.sent = nil
	return out
}

func newServer(t *testing.T, rec *recorder) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, QPS: -1}
}

// calls are one of each call lockctl makes, with the options it sets.
var calls = []struct {
	name string
	call func(ctx context.Context, c kube.Interface) error
	// want is the request lockctl's client sends (client-go's must send the
	// same).
	want sent
}{
	{
		name: "get configmap at a resourceVersion",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().ConfigMaps("ci").Get(ctx, "lockctl-lock-web", metav1.GetOptions{ResourceVersion: "0"})
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces/ci/configmaps/lockctl-lock-web", Query: "resourceVersion=0"},
	},
	{
		name: "list configmaps by label and field",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().ConfigMaps("ci").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=lockctl", FieldSelector: "metadata.name=x", ResourceVersion: "42", Limit: 500})
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces/ci/configmaps", Query: "fieldSelector=metadata.name%3Dx&labelSelector=app.kubernetes.io%2Fmanaged-by%3Dlockctl&limit=500&resourceVersion=42"},
	},
	{
		name: "watch configmaps from a resourceVersion",
		call: func(ctx context.Context, c kube.Interface) error {
			w, err := c.CoreV1().ConfigMaps("ci").Watch(ctx, metav1.ListOptions{LabelSelector: "a=b", ResourceVersion: "7", AllowWatchBookmarks: true})
			if err == nil {
				w.Stop()
			}
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces/ci/configmaps", Query: "allowWatchBookmarks=true&labelSelector=a%3Db&resourceVersion=7&watch=true"},
	},
	{
		name: "create configmap",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().ConfigMaps("ci").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "ci"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "lockctl"})
			return err
		},
		want: sent{Method: "POST", Path: "/api/v1/namespaces/ci/configmaps", Query: "fieldManager=lockctl", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "update configmap on its resourceVersion",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().ConfigMaps("ci").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "ci", ResourceVersion: "9"}}, metav1.UpdateOptions{})
			return err
		},
		want: sent{Method: "PUT", Path: "/api/v1/namespaces/ci/configmaps/lock", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "delete configmap with a precondition",
		call: func(ctx context.Context, c kube.Interface) error {
			rv := "9"
			return c.CoreV1().ConfigMaps("ci").Delete(ctx, "lock", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		},
		want: sent{Method: "DELETE", Path: "/api/v1/namespaces/ci/configmaps/lock", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "create pod",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().Pods("build").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-"}}, metav1.CreateOptions{})
			return err
		},
		want: sent{Method: "POST", Path: "/api/v1/namespaces/build/pods", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "list pods of all namespaces",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "lockctl.dev/job"})
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/pods", Query: "labelSelector=lockctl.dev%2Fjob"},
	},
	{
		name: "watch a pod with a timeout",
		call: func(ctx context.Context, c kube.Interface) error {
			secs := int64(30)
			w, err := c.CoreV1().Pods("build").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=p", TimeoutSeconds: &secs})
			if err == nil {
				w.Stop()
			}
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces/build/pods", Query: "fieldSelector=metadata.name%3Dp&timeout=30s&timeoutSeconds=30&watch=true"},
	},
	{
		name: "patch a pod's finalizers",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().Pods("build").Patch(ctx, "p", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`), metav1.PatchOptions{})
			return err
		},
		want: sent{Method: "PATCH", Path: "/api/v1/namespaces/build/pods/p", ContentType: "application/json-patch+json"},
	},
	{
		name: "delete pod now",
		call: func(ctx context.Context, c kube.Interface) error {
			grace := int64(0)
			return c.CoreV1().Pods("build").Delete(ctx, "p", metav1.DeleteOptions{GracePeriodSeconds: &grace})
		},
		want: sent{Method: "DELETE", Path: "/api/v1/namespaces/build/pods/p", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "follow a container's log",
		call: func(ctx context.Context, c kube.Interface) error {
			rc, err := c.CoreV1().Pods("build").GetLogs("p", &corev1.PodLogOptions{Container: "main", Follow: true}).Stream(ctx)
			if err == nil {
				rc.Close()
			}
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces/build/pods/p/log", Query: "container=main&follow=true"},
	},
	{
		name: "get node",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/nodes/n1"},
	},
	{
		name: "list namespaces",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			return err
		},
		want: sent{Method: "GET", Path: "/api/v1/namespaces"},
	},
	{
		name: "create event",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.EventsV1().Events("ci").Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: "lock-"}, Reason: "Acquired"}, metav1.CreateOptions{})
			return err
		},
		want: sent{Method: "POST", Path: "/apis/events.k8s.io/v1/namespaces/ci/events", ContentType: "application/vnd.kubernetes.protobuf"},
	},
	{
		name: "create self subject access review",
		call: func(ctx context.Context, c kube.Interface) error {
			_, err := c.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "update", Resource: "configmaps", Namespace: "ci"}}}, metav1.CreateOptions{})
			return err
		},
		want: sent{Method: "POST", Path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", ContentType: "application/vnd.kubernetes.protobuf"},
	},
}

// Each call goes to its path with its verb and query parameters, asks for
// protobuf first (logs: any type), and sends protobuf bodies, byte for byte
// as client-go's typed clients send the same call.
func TestClientsSendWhatClientGoSends(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	cfg := newServer(t, rec)
	own, err := kube.NewForConfig(cfg)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	theirs := kubetest.Clients(cs)
	const protobufFirst = "application/vnd.kubernetes.protobuf,application/json"
	for _, tt := range calls {
		require.NoError(t, tt.call(t.Context(), own), tt.name)
		got := rec.take()
		require.NoError(t, tt.call(t.Context(), theirs), tt.name)
		want := rec.take()
		require.Len(t, got, 1, tt.name)
		require.Len(t, want, 1, tt.name)

		assert.Equal(t, want[0], got[0], "%s: as client-go sends it", tt.name)
		assert.Equal(t, tt.want.Method, got[0].Method, tt.name)
		assert.Equal(t, tt.want.Path, got[0].Path, tt.name)
		assert.Equal(t, tt.want.Query, got[0].Query, tt.name)
		assert.Equal(t, tt.want.ContentType, got[0].ContentType, tt.name)
		if got[0].Path != "/api/v1/namespaces/build/pods/p/log" {
			assert.Equal(t, protobufFirst, got[0].Accept, tt.name)
		}
	}
}

// writeStatus answers with a Status error as the API server does.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(err.ErrStatus.Code))
	body, _ := runtime.Encode(scheme.Codecs.LegacyCodec(metav1.SchemeGroupVersion), &err.ErrStatus)
	_, _ = w.Write(body)
}

// A Status error decodes into the apierrors the library classifies: not
// found, conflict, forbidden, already exists, timeout, too many requests.
func TestClientsDecodeStatusErrors(t *testing.T) {
	t.Parallel()
	gr := corev1.Resource("configmaps")
	for _, tt := range []struct {
		name   string
		status *apierrors.StatusError
		is     func(error) bool
	}{
		{"not found", apierrors.NewNotFound(gr, "lock"), apierrors.IsNotFound},
		{"conflict", apierrors.NewConflict(gr, "lock", errors.New("the object has been modified")), apierrors.IsConflict},
		{"forbidden", apierrors.NewForbidden(gr, "lock", errors.New("no")), apierrors.IsForbidden},
		{"already exists", apierrors.NewAlreadyExists(gr, "lock"), apierrors.IsAlreadyExists},
		{"server timeout", apierrors.NewServerTimeout(gr, "get", 1), apierrors.IsServerTimeout},
		{"timeout", apierrors.NewTimeoutError("request did not complete", 1), apierrors.IsTimeout},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 0), apierrors.IsTooManyRequests},
		{"invalid", apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("ConfigMap").GroupKind(), "lock", nil), apierrors.IsInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{answer: func(w http.ResponseWriter, _ *http.Request) { writeStatus(w, tt.status) }}
			cfg := newServer(t, rec)
			own, err := kube.NewForConfig(cfg)
			require.NoError(t, err)
			_, err = own.CoreV1().ConfigMaps("ci").Update(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lock"}}, metav1.UpdateOptions{})
			require.Error(t, err)
			assert.True(t, tt.is(err), "%s: %v", tt.name, err)
			var status apierrors.APIStatus
			require.ErrorAs(t, err, &status, tt.name)
			assert.Equal(t, tt.status.ErrStatus.Reason, status.Status().Reason, tt.name)
		})
	}
}

// Answers in protobuf and in JSON decode into the typed object, and a
// watch's events into typed objects.
func TestClientsDecodeAnswers(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "lock", Namespace: "ci", ResourceVersion: "12"},
		Data:       map[string]string{"holder": "acme"},
	}
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	var pbBody bytes.Buffer
	require.NoError(t, pb.Encode(cm, &pbBody))
	jsonBody, err := runtime.Encode(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), cm)
	require.NoError(t, err)
	event, err := json.Marshal(map[string]any{"type": "MODIFIED", "object": json.RawMessage(jsonBody)})
	require.NoError(t, err)

	rec := &recorder{answer: func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(event)
		case r.URL.Path == "/api/v1/namespaces/ci/configmaps/pb":
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			_, _ = w.Write(pbBody.Bytes())
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(jsonBody)
		}
	}}
	own, err := kube.NewForConfig(newServer(t, rec))
	require.NoError(t, err)
	cms := own.CoreV1().ConfigMaps("ci")

	for _, name := range []string{"pb", "json"} {
		got, err := cms.Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(t, err, name)
		assert.Equal(t, cm.Data, got.Data, name)
		assert.Equal(t, "12", got.ResourceVersion, name)
	}

	w, err := cms.Watch(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	defer w.Stop()
	ev, ok := <-w.ResultChan()
	require.True(t, ok, "one event")
	assert.Equal(t, watch.Modified, ev.Type)
	got, ok := ev.Object.(*corev1.ConfigMap)
	require.True(t, ok, "a typed ConfigMap, not %T", ev.Object)
	assert.Equal(t, cm.Data, got.Data)
}
