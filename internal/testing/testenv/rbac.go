package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Grant creates a Role named name in ns with rules, binds it to subject, and
// returns once the API server's authorizer allows every verb of every rule
// to the subject. The RBAC authorizer reads Roles and RoleBindings from its
// own informers, so a request sent right after the create may still be
// judged without them.
func (e *Env) Grant(t testing.TB, ns, name string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	rbac := e.Client.RbacV1()
	_, err := rbac.Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      rules,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = rbac.RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.AwaitAllowed(t, ns, subject, rules)
}

// AwaitAllowed returns once the API server's authorizer allows subject every
// verb of every rule in ns, and fails the test if that takes 30 s.
func (e *Env) AwaitAllowed(t testing.TB, ns string, subject rbacv1.Subject, rules []rbacv1.PolicyRule) {
	t.Helper()
	require.NoError(t, e.awaitAllowed(t.Context(), ns, userOf(subject), rules), "the rules bound to %s never took effect in %s", userOf(subject), ns)
}

// userOf is the user name the authorizer sees for a User or ServiceAccount
// subject.
func userOf(s rbacv1.Subject) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		return "system:serviceaccount:" + s.Namespace + ":" + s.Name
	}
	return s.Name
}

// awaitAllowed polls SubjectAccessReviews until user may do everything the
// rules grant in ns.
func (e *Env) awaitAllowed(ctx context.Context, ns, user string, rules []rbacv1.PolicyRule) error {
	var wants []authorizationv1.ResourceAttributes
	for _, r := range rules {
		for _, group := range r.APIGroups {
			for _, resource := range r.Resources {
				for _, verb := range r.Verbs {
					// NOTE: a rule for named objects allows nothing
					// unnamed: ask about its first name.
					name := ""
					if len(r.ResourceNames) > 0 {
						name = r.ResourceNames[0]
					}
					wants = append(wants, authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: resource, Verb: verb, Name: name})
				}
			}
		}
	}
	var denied string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, want := range wants {
			review, err := e.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &want},
			}, metav1.CreateOptions{})
			if err != nil {
				return false, err
			}
			if !review.Status.Allowed {
				denied = want.Verb + " " + want.Resource
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s still denied: %w", denied, err)
	}
	return nil
}
