package record

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AppKind is the kind of application a GitOps controller deploys, as a
// holder names it (App).
type AppKind string

// The applications a holder can name: the objects each controller writes
// carry their application's name, which an enforced lock compares with the
// holder's (docs/enforcement.md).
const (
	// AppArgoCD is an Argo CD Application. Argo CD marks what it applies
	// with the annotation argocd.argoproj.io/tracking-id
	// (APP:GROUP/KIND:NS/NAME) or, in label tracking, the label
	// app.kubernetes.io/instance (APP); APP is the Application's name, or
	// NAMESPACE_NAME for an Application outside Argo CD's own namespace.
	AppArgoCD AppKind = "argocd"
	// AppFluxKustomization is a Flux Kustomization, whose objects carry the
	// labels kustomize.toolkit.fluxcd.io/name and /namespace.
	AppFluxKustomization AppKind = "flux-kustomization"
	// AppFluxHelmRelease is a Flux HelmRelease, whose objects carry the
	// labels helm.toolkit.fluxcd.io/name and /namespace.
	AppFluxHelmRelease AppKind = "flux-helmrelease"
)

// MaxApps is the most applications one claim may name.
const MaxApps = 16

// App is an application a holder deploys, named with --app:
//
//	argocd/NAME                  Argo CD Application NAME in Argo CD's own namespace
//	argocd/NAMESPACE/NAME        Argo CD Application NAME in NAMESPACE (apps in any namespace)
//	flux/kustomization/NS/NAME   Flux Kustomization NAME in NS
//	flux/helmrelease/NS/NAME     Flux HelmRelease NAME in NS
//
// Names and namespaces are Kubernetes object names (lower case).
type App struct {
	Kind AppKind
	// Namespace is the namespace of the application object; "" for an
	// Argo CD Application in Argo CD's own namespace.
	Namespace string
	Name      string
}

// appGrammar is the accepted forms, for errors.
const appGrammar = "argocd/NAME, argocd/NAMESPACE/NAME, flux/kustomization/NAMESPACE/NAME or flux/helmrelease/NAMESPACE/NAME"

// String is a as --app names it.
func (a App) String() string {
	switch a.Kind {
	case AppArgoCD:
		if a.Namespace == "" {
			return "argocd/" + a.Name
		}
		return "argocd/" + a.Namespace + "/" + a.Name
	case AppFluxKustomization:
		return "flux/kustomization/" + a.Namespace + "/" + a.Name
	case AppFluxHelmRelease:
		return "flux/helmrelease/" + a.Namespace + "/" + a.Name
	}
	return string(a.Kind) + "/" + a.Namespace + "/" + a.Name
}

// Marks is a's line in SummaryHolderAppsAnnotation: KIND:VALUE, where
// VALUE is what the controller writes on the objects of a, so a policy
// compares it with what an object carries:
//
//	argocd:APP                   APP as Argo CD tracks it: NAME, or NAMESPACE_NAME
//	flux-kustomization:NS/NAME   the labels' namespace/name
//	flux-helmrelease:NS/NAME
func (a App) marks() string {
	if a.Kind == AppArgoCD {
		if a.Namespace == "" {
			return string(AppArgoCD) + ":" + a.Name
		}
		return string(AppArgoCD) + ":" + a.Namespace + "_" + a.Name
	}
	return string(a.Kind) + ":" + a.Namespace + "/" + a.Name
}

// parseApp reads an application as --app names it (see App).
func parseApp(s string) (App, error) {
	bad := func(why string) (App, error) {
		return App{}, fmt.Errorf("application %q %s: use %s", s, why, appGrammar)
	}
	parts := strings.Split(s, "/")
	var a App
	switch {
	case parts[0] == "argocd" && len(parts) == 2:
		a = App{Kind: AppArgoCD, Name: parts[1]}
	case parts[0] == "argocd" && len(parts) == 3:
		a = App{Kind: AppArgoCD, Namespace: parts[1], Name: parts[2]}
	case parts[0] == "flux" && len(parts) == 4 && parts[1] == "kustomization":
		a = App{Kind: AppFluxKustomization, Namespace: parts[2], Name: parts[3]}
	case parts[0] == "flux" && len(parts) == 4 && parts[1] == "helmrelease":
		a = App{Kind: AppFluxHelmRelease, Namespace: parts[2], Name: parts[3]}
	case parts[0] == "flux" && len(parts) > 1 && parts[1] != "kustomization" && parts[1] != "helmrelease":
		return bad(fmt.Sprintf("names Flux kind %q", parts[1]))
	case parts[0] == "argocd" || parts[0] == "flux":
		return bad("has the wrong number of parts")
	default:
		return bad("names no known tool")
	}
	if a.Namespace != "" || a.Kind != AppArgoCD {
		if errs := validation.IsDNS1123Label(a.Namespace); len(errs) > 0 {
			return bad(fmt.Sprintf("has an invalid namespace %q (%s)", a.Namespace, errs[0]))
		}
	}
	if errs := validation.IsDNS1123Subdomain(a.Name); len(errs) > 0 {
		return bad(fmt.Sprintf("has an invalid name %q (%s)", a.Name, errs[0]))
	}
	return a, nil
}

// ParseApps reads the applications a holder names, in order, without
// repeats, refusing more than maxApps.
func ParseApps(ss []string) ([]App, error) {
	var out []App
	for _, s := range ss {
		a, err := parseApp(s)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) > MaxApps {
		return nil, fmt.Errorf("%d applications named, more than the %d a hold may name", len(out), MaxApps)
	}
	return out, nil
}

// AppStrings is apps as the record stores them (Claim.Apps).
func AppStrings(apps []App) []string {
	var out []string
	for _, a := range apps {
		out = append(out, a.String())
	}
	return out
}

// appMarks is the summary of a claim's applications: each one the record
// names that this lockctl reads, as App.Marks, one a line. An entry it
// does not read (a newer lockctl's kind) is left out: the policy then
// admits no controller for it, rather than one it cannot judge.
func appMarks(stored []string) string {
	var lines []string
	for _, s := range stored {
		if a, err := parseApp(s); err == nil {
			lines = append(lines, a.marks())
		}
	}
	return strings.Join(lines, "\n")
}
