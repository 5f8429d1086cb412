package deploytools

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// Flux applies manifests as Flux's kustomize-controller applies a
// Kustomization's (hack/fluxapply, on Flux's own apply library): labels
// kustomize.toolkit.fluxcd.io/name and /namespace set to the
// Kustomization's, server-side apply with field manager
// kustomize-controller.
type Flux struct {
	// Bin is the flux-apply program.
	Bin string
	// Kubeconfig is what it acts with: KubeconfigAs(…,
	// FluxKustomizeController) to act as Flux.
	Kubeconfig string
}

// NewFlux returns Flux's apply acting with kubeconfig.
func NewFlux(t testing.TB, kubeconfig string) *Flux {
	t.Helper()
	return &Flux{Bin: Tool(t, "flux-apply"), Kubeconfig: kubeconfig}
}

// Apply applies manifests (YAML documents) for the Kustomization
// kustomization (NAMESPACE/NAME) and returns what it printed (a line per
// object: "ConfigMap/shop/web created") with its errors; err is non-nil
// when it did not exit 0.
func (f *Flux) Apply(ctx context.Context, kustomization, manifests string) (string, error) {
	return f.run(ctx, manifests, "-kustomization", kustomization)
}

// Prune deletes the objects of manifests that carry the labels of
// kustomization, as Flux's garbage collection prunes them.
func (f *Flux) Prune(ctx context.Context, kustomization, manifests string) (string, error) {
	return f.run(ctx, manifests, "-kustomization", kustomization, "-delete")
}

func (f *Flux) run(ctx context.Context, manifests string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, f.Bin, append([]string{"-kubeconfig", f.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(manifests)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("flux-apply %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}
