package testenv

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxPrefixLen leaves room for the 5 random characters the API server adds
// to a generateName, within the 63 of a DNS label.
const maxPrefixLen = 63 - 5

// Namespace creates a namespace named after the test, plus a random suffix,
// and returns its name. The namespace is not deleted afterwards: without a
// controller-manager, deletion would hang in Terminating.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	ns, err := e.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: namespacePrefix(t.Name()),
			Labels:       map[string]string{"lockctl.dev/test": "true"},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err, "create namespace for %s", t.Name())
	return ns.Name
}

// namespacePrefix turns a test name into a DNS-label prefix ending in "-":
// lower case, runs of other characters folded to one "-", at most
// maxPrefixLen long.
func namespacePrefix(testName string) string {
	var b strings.Builder
	dash := true // no leading dash
	for _, r := range strings.ToLower(testName) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if len(s) > maxPrefixLen-1 {
		s = strings.TrimRight(s[:maxPrefixLen-1], "-")
	}
	if s == "" {
		s = "test"
	}
	return s + "-"
}
