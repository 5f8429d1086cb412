package enforce

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// Install creates the policies and bindings of s (Policy and Binding,
// and CreateGuard), or updates them to s when they exist (a
// compare-and-swap on the version read: a concurrent change makes it
// fail, not overwrite); created reports whether the main policy was new.
// An object of one of those names that lockctl did not make is left
// alone and named in the error.
func Install(ctx context.Context, c kube.AdmissionregistrationV1Interface, s Settings) (created bool, err error) {
	if err := s.Validate(); err != nil {
		return false, err
	}
	guard, guardBinding := CreateGuard(s)
	created, err = apply(ctx, c.ValidatingAdmissionPolicies(), Policy(s))
	if err != nil {
		return false, err
	}
	for _, p := range []*admissionregistrationv1.ValidatingAdmissionPolicy{guard} {
		if _, err := apply(ctx, c.ValidatingAdmissionPolicies(), p); err != nil {
			return created, err
		}
	}
	for _, b := range []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{Binding(s), guardBinding} {
		if _, err := apply(ctx, c.ValidatingAdmissionPolicyBindings(), b); err != nil {
			return created, err
		}
	}
	return created, nil
}

// object is a policy or a binding, and objects their client.
type (
	object interface {
		*admissionregistrationv1.ValidatingAdmissionPolicy | *admissionregistrationv1.ValidatingAdmissionPolicyBinding
		metav1.Object
		runtime.Object
	}
	objects[T object] interface {
		Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
		Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
		Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
		Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	}
)

// kindOf names obj's kind in messages.
func kindOf(obj runtime.Object) string {
	if _, ok := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok {
		return "ValidatingAdmissionPolicy"
	}
	return "ValidatingAdmissionPolicyBinding"
}

// apply creates obj, or updates the object of its name that lockctl made
// to it; it reports whether it created.
func apply[T object](ctx context.Context, c objects[T], obj T) (bool, error) {
	kind, name := kindOf(obj), obj.GetName()
	old, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := c.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return false, fmt.Errorf("create %s %q: %w", kind, name, err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("read %s %q: %w", kind, name, err)
	case !ours(old):
		return false, fmt.Errorf("%s %q exists and was not made by lockctl: remove or rename it first", kind, name)
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	if _, err := c.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("update %s %q: %w", kind, name, err)
	}
	return false, nil
}

// remove deletes the object name that lockctl made, and reports whether
// there was one.
func remove[T object](ctx context.Context, c objects[T], kind, name string) (bool, error) {
	obj, err := c.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %q: %w", kind, name, err)
	case !ours(obj):
		return false, fmt.Errorf("%s %q was not made by lockctl: left alone", kind, name)
	}
	uid := obj.GetUID()
	if err := c.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("delete %s %q: %w", kind, name, err)
	}
	return true, nil
}

// Uninstall deletes the policies and bindings of target that lockctl
// made, and nothing else; it reports whether there was anything to
// delete.
func Uninstall(ctx context.Context, c kube.AdmissionregistrationV1Interface, target string) (bool, error) {
	deleted := false
	// The bindings first: a binding without its policy is an error the
	// API server reports on every matching request's evaluation.
	for _, name := range []string{Name(target), CreateName(target)} {
		ok, err := remove(ctx, c.ValidatingAdmissionPolicyBindings(), "ValidatingAdmissionPolicyBinding", name)
		if err != nil {
			return deleted, err
		}
		deleted = deleted || ok
	}
	for _, name := range []string{Name(target), CreateName(target)} {
		ok, err := remove(ctx, c.ValidatingAdmissionPolicies(), "ValidatingAdmissionPolicy", name)
		if err != nil {
			return deleted, err
		}
		deleted = deleted || ok
	}
	return deleted, nil
}

func ours(m metav1.Object) bool {
	return m.GetLabels()[record.ManagedByLabel] == record.ManagedByValue && m.GetLabels()[record.KindLabel] == KindValue
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
	hasPolicy := err == nil && ours(p.ObjectMeta.GetObjectMeta())
	b, err := c.ValidatingAdmissionPolicyBindings().Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("read ValidatingAdmissionPolicyBinding %q: %w", name, err)
	}
	hasBinding := err == nil && ours(b.ObjectMeta.GetObjectMeta())
	guard, err := c.ValidatingAdmissionPolicyBindings().Get(ctx, CreateName(target), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return st, fmt.Errorf("read ValidatingAdmissionPolicyBinding %q: %w", CreateName(target), err)
	}
	hasGuard := err == nil && ours(guard.ObjectMeta.GetObjectMeta())
	switch {
	case hasPolicy && hasBinding && !hasGuard:
		st.Incomplete = "no guard of the lock's creation, " + CreateName(target)
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

// ErrTargetTerminating is returned by AwaitInEffect when the target
// namespace is being deleted: the API server refuses every write to it
// before any policy sees it.
var ErrTargetTerminating = errors.New("the namespace is being deleted")

// AwaitInEffect waits until the API server applies the policy of s, which
// it does asynchronously (its policy informer) after Install: it sends a
// dry-run create of a ConfigMap the policy always refuses, every
// interval, until the answer is the refusal of the policy with the
// settings of s (its digest), not of the one before. Only a deny-mode
// policy refuses; the caller must be allowed to create ConfigMaps in the
// target (a dry run stores nothing). timeout 0 means no limit beyond ctx.
func AwaitInEffect(ctx context.Context, cms kube.ConfigMapsGetter, s Settings, interval, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "lockctl-enforce-probe-",
		Annotations:  map[string]string{ProbeAnnotation: "true"},
	}}
	inEffect := "lockctl refused this write: a probe of the policy"
	settings := "with settings " + s.Digest()
	var last error
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		_, err := cms.ConfigMaps(s.Target).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		switch {
		case err == nil:
			return false, nil
		case apierrors.IsNotFound(err):
			return false, ErrNoTargetNamespace
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return false, ErrTargetTerminating
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			if strings.Contains(err.Error(), inEffect) && strings.Contains(err.Error(), settings) {
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
		if errors.Is(err, ErrNoTargetNamespace) || errors.Is(err, ErrTargetTerminating) {
			return err
		}
		return fmt.Errorf("probe the policy of %q with a dry-run ConfigMap: %w", s.Target, err)
	}
	return nil
}
