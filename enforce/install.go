package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// Install creates the policy and binding of s, or updates them to s when
// they exist (a compare-and-swap on the version read: a concurrent change
// makes it fail, not overwrite). An object of that name that lockctl did
// not make is left alone and named in the error.
func Install(ctx context.Context, c kube.AdmissionregistrationV1Interface, s Settings) error {
	if err := s.Validate(); err != nil {
		return err
	}
	p, b := Policy(s), Binding(s)
	policies := c.ValidatingAdmissionPolicies()
	old, err := policies.Get(ctx, p.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := policies.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ValidatingAdmissionPolicy %q: %w", p.Name, err)
		}
	case err != nil:
		return fmt.Errorf("read ValidatingAdmissionPolicy %q: %w", p.Name, err)
	default:
		if !ours(old.ObjectMeta) {
			return fmt.Errorf("ValidatingAdmissionPolicy %q exists and was not made by lockctl: remove or rename it first", p.Name)
		}
		p.ResourceVersion = old.ResourceVersion
		if _, err := policies.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ValidatingAdmissionPolicy %q: %w", p.Name, err)
		}
	}
	bindings := c.ValidatingAdmissionPolicyBindings()
	oldB, err := bindings.Get(ctx, b.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := bindings.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create ValidatingAdmissionPolicyBinding %q: %w", b.Name, err)
		}
	case err != nil:
		return fmt.Errorf("read ValidatingAdmissionPolicyBinding %q: %w", b.Name, err)
	default:
		if !ours(oldB.ObjectMeta) {
			return fmt.Errorf("ValidatingAdmissionPolicyBinding %q exists and was not made by lockctl: remove or rename it first", b.Name)
		}
		b.ResourceVersion = oldB.ResourceVersion
		if _, err := bindings.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update ValidatingAdmissionPolicyBinding %q: %w", b.Name, err)
		}
	}
	return nil
}

// Uninstall deletes the policy and binding of target that lockctl made,
// and nothing else; it reports whether there was anything to delete.
func Uninstall(ctx context.Context, c kube.AdmissionregistrationV1Interface, target string) (bool, error) {
	name := Name(target)
	deleted := false
	// The binding first: a binding without its policy is an error the API
	// server reports on every matching request's evaluation.
	b, err := c.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("read ValidatingAdmissionPolicyBinding %q: %w", name, err)
	case !ours(b.ObjectMeta):
		return false, fmt.Errorf("ValidatingAdmissionPolicyBinding %q was not made by lockctl: left alone", name)
	default:
		if err := c.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &b.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete ValidatingAdmissionPolicyBinding %q: %w", name, err)
		}
		deleted = true
	}
	p, err := c.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return deleted, fmt.Errorf("read ValidatingAdmissionPolicy %q: %w", name, err)
	case !ours(p.ObjectMeta):
		return deleted, fmt.Errorf("ValidatingAdmissionPolicy %q was not made by lockctl: left alone", name)
	default:
		if err := c.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}}); err != nil && !apierrors.IsNotFound(err) {
			return deleted, fmt.Errorf("delete ValidatingAdmissionPolicy %q: %w", name, err)
		}
		deleted = true
	}
	return deleted, nil
}

func ours(m metav1.ObjectMeta) bool {
	return m.Labels[lock.ManagedByLabel] == lock.ManagedByValue && m.Labels[lock.KindLabel] == KindValue
}

// State is how a target is enforced.
type State struct {
	// Enforced is true when both the policy and its binding exist.
	Enforced bool `json:"enforced"`
	// Mode is the binding's mode.
	Mode Mode `json:"mode,omitempty"`
	// RequireHolder and Strict are the policy's settings.
	RequireHolder bool `json:"requireHolder,omitempty"`
	Strict        bool `json:"strict,omitempty"`
	// Incomplete names what is missing when only one of the two exists.
	Incomplete string `json:"incomplete,omitempty"`
}

// Describe renders the state for status: "deny, strict, require-holder",
// or "no".
func (s State) Describe() string {
	if !s.Enforced {
		if s.Incomplete != "" {
			return "incomplete (" + s.Incomplete + "): run lockctl enforce again or --uninstall"
		}
		return "no"
	}
	parts := []string{string(s.Mode)}
	if s.Strict {
		parts = append(parts, "strict")
	}
	if s.RequireHolder {
		parts = append(parts, "require-holder")
	}
	return strings.Join(parts, ", ")
}

// Status reads how target is enforced. A caller who may not read the
// policies gets the API's Forbidden error.
func Status(ctx context.Context, c kube.AdmissionregistrationV1Interface, target string) (State, error) {
	name := Name(target)
	var st State
	p, err := c.ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("read ValidatingAdmissionPolicy %q: %w", name, err)
	}
	hasPolicy := err == nil && ours(p.ObjectMeta)
	b, err := c.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("read ValidatingAdmissionPolicyBinding %q: %w", name, err)
	}
	hasBinding := err == nil && ours(b.ObjectMeta)
	switch {
	case hasPolicy && hasBinding:
		st.Enforced = true
		st.Mode = modeOf(b.Spec.ValidationActions)
		st.RequireHolder = p.Annotations[RequireHolderAnnotation] == "true"
		st.Strict = p.Annotations[StrictAnnotation] == "true"
	case hasPolicy:
		st.Incomplete = "policy without binding"
	case hasBinding:
		st.Incomplete = "binding without policy"
	}
	return st, nil
}

// ErrNotInEffect is returned by AwaitInEffect when the API server did not
// apply the policy in time.
var ErrNotInEffect = errors.New("the API server has not applied the policy yet")

// ErrNoTargetNamespace is returned by AwaitInEffect when the target
// namespace does not exist: there is nothing to write to yet, so nothing
// tells whether the policy is in effect. It applies to the namespace's
// writes once the namespace is created.
var ErrNoTargetNamespace = errors.New("the namespace does not exist yet")

// AwaitInEffect waits until the API server applies target's policy,
// which it does asynchronously (its policy informer) after Install: it
// sends a dry-run create of a ConfigMap the policy always refuses, every
// interval, until the answer is the policy's refusal. Only a deny-mode
// policy refuses; the caller must be allowed to create ConfigMaps in the
// target (a dry run stores nothing). timeout 0 means no limit beyond ctx.
func AwaitInEffect(ctx context.Context, cms kube.ConfigMapsGetter, target string, interval, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "lockctl-enforce-probe-",
		Annotations:  map[string]string{ProbeAnnotation: "true"},
	}}
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		_, err := cms.ConfigMaps(target).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			return false, nil
		case apierrors.IsNotFound(err):
			return false, ErrNoTargetNamespace
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			if strings.Contains(err.Error(), "lockctl refused this write: a probe") {
				return true, nil
			}
			last = err
			if !strings.Contains(err.Error(), "lockctl") {
				// Forbidden by RBAC: the probe cannot tell.
				return false, err
			}
		default:
			last = err
		}
		return false, nil
	})
	if err != nil {
		if last != nil && ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ErrNotInEffect, last)
		}
		if ctx.Err() != nil {
			return ErrNotInEffect
		}
		if errors.Is(err, ErrNoTargetNamespace) {
			return err
		}
		return fmt.Errorf("probe the policy of %q with a dry-run ConfigMap: %w", target, err)
	}
	return nil
}
