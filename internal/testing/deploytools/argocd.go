package deploytools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Argo CD's marks on the objects it applies.
const (
	// ArgoCDTrackingAnnotation is the annotation of Argo CD's default
	// (annotation) tracking: APP:GROUP/KIND:NAMESPACE/NAME.
	ArgoCDTrackingAnnotation = "argocd.argoproj.io/tracking-id"
	// ArgoCDInstanceLabel is the label of Argo CD's label tracking: APP.
	ArgoCDInstanceLabel = "app.kubernetes.io/instance"
)

// ArgoCDTracking is how Argo CD marks an application's objects (its
// application.resourceTrackingMethod).
type ArgoCDTracking string

// The tracking methods.
const (
	TrackAnnotation         ArgoCDTracking = "annotation"
	TrackLabel              ArgoCDTracking = "label"
	TrackAnnotationAndLabel ArgoCDTracking = "annotation+label"
)

// ArgoCD writes as Argo CD's application-controller syncs an
// Application: each object marked as the Application's (TrackingID, or
// the instance label), applied with kubectl's apply, the client-side apply
// Argo CD runs in-process by default.
type ArgoCD struct {
	// Kubectl is the kubectl program.
	Kubectl string
	// Kubeconfig is what it acts with: KubeconfigAs(…,
	// ArgoCDApplicationController) to act as Argo CD.
	Kubeconfig string
	// Tracking is how objects are marked; "" means TrackAnnotation, Argo
	// CD's default.
	Tracking ArgoCDTracking
}

// NewArgoCD returns Argo CD's writes acting with kubeconfig, with
// annotation tracking.
func NewArgoCD(t testing.TB, kubeconfig string) *ArgoCD {
	t.Helper()
	return &ArgoCD{Kubectl: Tool(t, "kubectl"), Kubeconfig: kubeconfig}
}

// TrackingID is the annotation Argo CD writes on the object of app
// (the instance name: NAME, or NAMESPACE_NAME for an Application outside
// Argo CD's namespace) of group, kind, namespace and name. The core group
// is "".
func TrackingID(app, group, kind, namespace, name string) string {
	return fmt.Sprintf("%s:%s/%s:%s/%s", app, group, kind, namespace, name)
}

// Apply syncs manifests (YAML documents) as the Application app into
// namespace (the destination of objects that name none) and returns
// kubectl's output; err is non-nil when it did not exit 0.
func (a *ArgoCD) Apply(ctx context.Context, app, namespace, manifests string) (string, error) {
	marked, err := Track(manifests, app, namespace, a.Tracking)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, a.Kubectl, "--kubeconfig", a.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(marked)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl apply as Argo CD (%s): %w\n%s", app, err, out)
	}
	return string(out), nil
}

// Track marks each object of manifests as app's, as Argo CD does with
// tracking ("" is TrackAnnotation), placing objects without a namespace
// in namespace, and returns them as JSON documents.
func Track(manifests, app, namespace string, tracking ArgoCDTracking) (string, error) {
	if tracking == "" {
		tracking = TrackAnnotation
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifests), 4096)
	var out bytes.Buffer
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return "", fmt.Errorf("read manifests: %w", err)
		}
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		if tracking != TrackLabel {
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			gvk := u.GroupVersionKind()
			ann[ArgoCDTrackingAnnotation] = TrackingID(app, gvk.Group, gvk.Kind, u.GetNamespace(), u.GetName())
			u.SetAnnotations(ann)
		}
		if tracking != TrackAnnotation {
			labels := u.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[ArgoCDInstanceLabel] = app
			u.SetLabels(labels)
		}
		b, err := json.Marshal(u.Object)
		if err != nil {
			return "", err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.String(), nil
}
