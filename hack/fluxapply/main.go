// Command fluxapply applies Kubernetes manifests as Flux's
// kustomize-controller applies a Kustomization's, with Flux's own apply
// library (github.com/fluxcd/pkg/ssa): the objects are normalized, given
// the Kustomization's labels kustomize.toolkit.fluxcd.io/name and
// kustomize.toolkit.fluxcd.io/namespace, and applied server-side in
// stages (CRDs and namespaces first) with the field manager
// kustomize-controller, the apply options kustomize-controller sets
// (its exclusion, if-not-present and force selectors, the clean-up of
// kubectl's and its own earlier field managers) and force off unless
// -force. With -delete it deletes the objects instead, as Flux's garbage
// collection prunes them: only those that carry the Kustomization's
// labels, and not those marked kustomize.toolkit.fluxcd.io/prune: disabled.
//
// It acts as whoever its kubeconfig names: to act as Flux, write the
// controller's service account into a copy of the kubeconfig as the user
// to impersonate (users[].user.as:
// system:serviceaccount:flux-system:kustomize-controller).
//
// It prints one line per object (ConfigMap/shop/web created) on stdout,
// and exits 1 with the error when an apply fails, 2 on bad usage.
//
// It is its own Go module so that lockctl's go.mod does not depend on
// Flux. hack/integration-tools.sh builds it (tool flux-apply); the
// helpers of internal/testing/deploytools run it.
//
//	fluxapply -kubeconfig KUBECONFIG -kustomization flux-system/web -f manifests.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What kustomize-controller names itself and its API group: its field
// manager, the prefix of its labels, and the values of its selectors.
const (
	controllerName = "kustomize-controller"
	group          = "kustomize.toolkit.fluxcd.io"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fluxapply", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig to act with (default $KUBECONFIG)")
	kustomization := fs.String("kustomization", "", "the Kustomization applying, as NAMESPACE/NAME (required)")
	file := fs.String("f", "-", "manifests to apply (YAML or JSON documents); - reads stdin")
	force := fs.Bool("force", false, "recreate objects whose immutable fields changed (the Kustomization's spec.force)")
	del := fs.Bool("delete", false, "delete the objects, as Flux's garbage collection prunes them, instead of applying")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ns, name, ok := strings.Cut(*kustomization, "/")
	if !ok || ns == "" || name == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: fluxapply -kubeconfig KUBECONFIG -kustomization NAMESPACE/NAME [-f FILE|-] [-force] [-delete]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	in := stdin
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		defer f.Close()
		in = f
	}
	objects, err := ssautil.ReadObjects(in)
	if err != nil {
		fmt.Fprintf(stderr, "read manifests: %v\n", err)
		return 2
	}
	manager, err := newManager(*kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	var changes *ssa.ChangeSet
	if *del {
		changes, err = prune(ctx, manager, name, ns, objects)
	} else {
		changes, err = apply(ctx, manager, name, ns, objects, *force)
	}
	if changes != nil {
		for _, e := range changes.Entries {
			fmt.Fprintln(stdout, e.String())
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// newManager is kustomize-controller's resource manager on a client of
// kubeconfig.
func newManager(kubeconfig string) (*ssa.ResourceManager, error) {
	if kubeconfig == "" {
		return nil, errors.New("no kubeconfig: pass -kubeconfig or set $KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", kubeconfig, err)
	}
	// NOTE: no status poller: it only serves health checks (wait), which
	// this program does not run.
	return ssa.NewResourceManager(c, nil, ssa.Owner{Field: controllerName, Group: group}), nil
}

// apply applies objects as kustomize-controller's apply step does.
func apply(ctx context.Context, m *ssa.ResourceManager, name, ns string, objects []*unstructured.Unstructured, force bool) (*ssa.ChangeSet, error) {
	m.SetOwnerLabels(objects, name, ns)
	if err := normalize.UnstructuredList(objects); err != nil {
		return nil, err
	}
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	opts.ExclusionSelector = map[string]string{group + "/reconcile": "disabled", group + "/ssa": "ignore"}
	opts.IfNotPresentSelector = map[string]string{group + "/ssa": "IfNotPresent"}
	opts.ForceSelector = map[string]string{group + "/force": "enabled"}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation, group + "/checksum", "fluxcd.io/sync-checksum"},
		Labels:      []string{"fluxcd.io/sync-gc-mark"},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: controllerName, OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{group + "/ssa": "merge"},
	}
	return m.ApplyAllStaged(ctx, objects, opts)
}

// prune deletes objects as Flux's garbage collection does: only those
// labelled as the Kustomization's, never those whose pruning is disabled.
func prune(ctx context.Context, m *ssa.ResourceManager, name, ns string, objects []*unstructured.Unstructured) (*ssa.ChangeSet, error) {
	opts := ssa.DeleteOptions{
		PropagationPolicy: metav1.DeletePropagationBackground,
		Inclusions:        m.GetOwnerLabels(name, ns),
		Exclusions:        map[string]string{group + "/prune": "disabled"},
	}
	return m.DeleteAll(ctx, objects, opts)
}
