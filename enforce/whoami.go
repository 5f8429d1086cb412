package enforce

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// The user extras the API server sets for a service account token
// (authentication.kubernetes.io/...): the pod a token is bound to, and
// the token's own ID.
const (
	podUIDExtra       = "authentication.kubernetes.io/pod-uid"
	credentialIDExtra = "authentication.kubernetes.io/credential-id"
)

// WhoAmI returns the caller's authenticated Kubernetes user, as the API
// server names it in a SelfSubjectReview (authentication.k8s.io/v1): the
// name an enforced lock admits the holder's writes by, and the credential
// strict enforcement tells two holders of one name apart by.
func WhoAmI(ctx context.Context, c kube.AuthenticationV1Interface) (record.User, error) {
	r, err := c.SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return record.User{}, fmt.Errorf("ask the API server who this is (SelfSubjectReview): %w", err)
	}
	info := r.Status.UserInfo
	if info.Username == "" {
		return record.User{}, errors.New("ask the API server who this is (SelfSubjectReview): no user name in the answer")
	}
	return record.User{Name: info.Username, Credential: Credential(info.Extra)}, nil
}

// Credential is the credential that extra (a user's extras, as the API
// server sets them) names, as the policy reads it from a request: the pod
// a service account token is bound to, which stays the same while the
// kubelet renews the token, else the token's ID; "" for neither.
func Credential[V ~[]string](extra map[string]V) string {
	if v := extra[podUIDExtra]; len(v) > 0 && v[0] != "" {
		return "pod-uid=" + v[0]
	}
	if v := extra[credentialIDExtra]; len(v) > 0 {
		return v[0]
	}
	return ""
}
