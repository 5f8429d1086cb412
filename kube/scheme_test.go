package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestKubeScheme: each group version's codecs know that group's types and
// meta/v1's, and no other group's; they are built once.
func TestKubeScheme(t *testing.T) {
	t.Parallel()
	kinds := map[schema.GroupVersion]string{
		corev1.SchemeGroupVersion:                  "ConfigMap",
		eventsv1.SchemeGroupVersion:                "Event",
		authorizationv1.SchemeGroupVersion:         "SelfSubjectAccessReview",
		authenticationv1.SchemeGroupVersion:        "SelfSubjectReview",
		admissionregistrationv1.SchemeGroupVersion: "ValidatingAdmissionPolicy",
	}
	for gv := range kinds {
		c := kubeScheme(gv)
		assert.Same(t, c, kubeScheme(gv), "%s: built once", gv)
		for other, otherKind := range kinds {
			assert.Equal(t, other == gv, c.scheme.Recognizes(other.WithKind(otherKind)), "%s's scheme and %s %s", gv, other, otherKind)
		}
		assert.True(t, c.scheme.Recognizes(gv.WithKind("ListOptions")), "%s: meta/v1's options", gv)
		_, _, err := c.scheme.ObjectKinds(&metav1.Status{})
		assert.NoError(t, err, "%s: meta/v1's Status", gv)
	}
}

// TestAddGroupUnknown: a group version lockctl has no client of is an
// error, not an empty scheme.
func TestAddGroupUnknown(t *testing.T) {
	t.Parallel()
	err := addGroup(runtime.NewScheme(), schema.GroupVersion{Group: "apps", Version: "v1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "apps/v1")
}
