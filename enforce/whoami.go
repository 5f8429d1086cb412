package enforce

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/kube"
)

// WhoAmI returns the caller's authenticated Kubernetes user name, as the
// API server names it in a SelfSubjectReview (authentication.k8s.io/v1),
// the name an enforced lock admits the holder's writes by.
func WhoAmI(ctx context.Context, c kube.AuthenticationV1Interface) (string, error) {
	r, err := c.SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("ask the API server who this is (SelfSubjectReview): %w", err)
	}
	if r.Status.UserInfo.Username == "" {
		return "", errors.New("ask the API server who this is (SelfSubjectReview): no user name in the answer")
	}
	return r.Status.UserInfo.Username, nil
}
