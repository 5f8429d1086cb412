// Package preflight finds missing RBAC permissions before a command writes
// anything, by asking the API server with SelfSubjectAccessReviews, so that a
// misconfigured ServiceAccount fails at once with the verb and resource it
// lacks instead of retrying a forbidden watch for ever.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/kube"
)

// Permission is one verb on one resource, in a namespace ("" for a
// cluster-scoped resource or all namespaces).
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	Namespace   string
}

// String reads like kubectl auth can-i: `watch pods -n ci`.
func (p Permission) String() string {
	r := p.Resource
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Namespace != "" {
		return fmt.Sprintf("%s %s -n %s", p.Verb, r, p.Namespace)
	}
	return p.Verb + " " + r
}

// Verbs returns a Permission for each verb on one resource.
func Verbs(resource, namespace string, verbs ...string) []Permission {
	out := make([]Permission, len(verbs))
	for i, v := range verbs {
		out[i] = Permission{Verb: v, Resource: resource, Namespace: namespace}
	}
	return out
}

// MissingError lists the permissions the API server of Where refused.
type MissingError struct {
	// Where names the cluster asked, such as `build cluster "gpu"`; empty
	// for the job cluster.
	Where string
	// Missing are the permissions refused, in the order asked.
	Missing []Permission
}

func (e *MissingError) Error() string {
	perms := make([]string, len(e.Missing))
	for i, p := range e.Missing {
		perms[i] = p.String()
	}
	where := ""
	if e.Where != "" {
		where = " in " + e.Where
	}
	return fmt.Sprintf("missing permissions%s: cannot %s", where, strings.Join(perms, ", "))
}

// Check asks whether the caller has every permission in perms, all at once,
// and returns a *MissingError naming those it lacks. An API server that can
// not be asked returns that error; one that refuses the review itself (no
// SelfSubjectAccessReview allowed, which every authenticated user has by
// default) is not taken as a missing permission: the first forbidden answer
// will tell.
func Check(ctx context.Context, reviews kube.SelfSubjectAccessReviewsGetter, where string, perms []Permission) error {
	allowed := make([]bool, len(perms))
	errs := make([]error, len(perms))
	var wg sync.WaitGroup
	for i, p := range perms {
		wg.Go(func() {
			allowed[i], errs[i] = can(ctx, reviews, p)
		})
	}
	wg.Wait()
	missing := &MissingError{Where: where}
	for i, p := range perms {
		var urlErr *url.Error
		switch {
		case errs[i] != nil && errors.As(errs[i], &urlErr):
			return errs[i] // the API server did not answer
		case errs[i] != nil:
			// the review itself was refused or not understood: no verdict

		case !allowed[i]:
			missing.Missing = append(missing.Missing, p)
		}
	}
	if len(missing.Missing) > 0 {
		return missing
	}
	return nil
}

// Can reports whether the caller has one permission; a review the API
// server refuses to answer counts as no.
func Can(ctx context.Context, reviews kube.SelfSubjectAccessReviewsGetter, p Permission) (bool, error) {
	ok, err := can(ctx, reviews, p)
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return false, nil
	}
	return ok, err
}

func can(ctx context.Context, reviews kube.SelfSubjectAccessReviewsGetter, p Permission) (bool, error) {
	r, err := reviews.SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace:   p.Namespace,
			Verb:        p.Verb,
			Group:       p.Group,
			Resource:    p.Resource,
			Subresource: p.Subresource,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("check permission to %s: %w", p, err)
	}
	return r.Status.Allowed, nil
}
