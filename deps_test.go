package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinaryLeavesOutHeavyPackages keeps out of the binary what ADR 0064,
// 0071 and 0073 took out of every command's start: client-go's clientset of
// every group and its informers, its typed clients with the scheme of every
// API group (kubernetes/scheme), apply configurations and discovery, every
// API group but the five lockctl uses (ADR 0080 added the two lockctl
// enforce needs), and Prometheus's client library (tests may import them;
// the binary may not).
func TestBinaryLeavesOutHeavyPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the binary's dependencies")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "k8s.io/client-go/rest", "the list is the binary's")
	require.Contains(t, deps, "k8s.io/api/core/v1", "the list is the binary's")
	for _, dep := range deps {
		assert.False(t, heavy(dep), "%s: ADR 0064, 0071 and 0073 keep it out of the binary", dep)
	}
}

// apiGroupsUsed are the k8s.io/api packages the binary may link: the groups
// lockctl's clients serve (kube's scheme): locks, job records and pods;
// Events; the preflight checks; and, for lockctl enforce, the caller's user
// (SelfSubjectReview) and the admission policy.
var apiGroupsUsed = []string{
	"k8s.io/api/core/v1", "k8s.io/api/events/v1", "k8s.io/api/authorization/v1",
	"k8s.io/api/authentication/v1", "k8s.io/api/admissionregistration/v1",
}

// heavy says whether the binary must leave dep out.
func heavy(dep string) bool {
	under := func(prefix string) bool { return dep == prefix || strings.HasPrefix(dep, prefix+"/") }
	switch {
	case under("k8s.io/client-go/kubernetes"), // the clientset, its typed clients and scheme
		under("k8s.io/client-go/informers"),
		under("k8s.io/client-go/listers"),
		under("k8s.io/client-go/applyconfigurations"),
		under("k8s.io/client-go/discovery"),
		under("k8s.io/client-go/gentype"),
		under("k8s.io/client-go/openapi"),
		under("github.com/google/gnostic-models"),
		under("google.golang.org/protobuf"),
		under("github.com/prometheus"):
		return true
	case strings.HasPrefix(dep, "k8s.io/api/"):
		return !slices.Contains(apiGroupsUsed, dep)
	}
	return false
}

// TestHeavy pins what heavy refuses and lets through.
func TestHeavy(t *testing.T) {
	for dep, want := range map[string]bool{
		"k8s.io/client-go/kubernetes":                    true,
		"k8s.io/client-go/kubernetes/scheme":             true,
		"k8s.io/client-go/kubernetes/typed/core/v1":      true,
		"k8s.io/client-go/applyconfigurations/core/v1":   true,
		"k8s.io/client-go/discovery":                     true,
		"k8s.io/client-go/informers":                     true,
		"k8s.io/api/apps/v1":                             true,
		"k8s.io/api/coordination/v1":                     true,
		"github.com/prometheus/client_golang/prometheus": true,
		"k8s.io/api/core/v1":                             false,
		"k8s.io/api/events/v1":                           false,
		"k8s.io/api/authorization/v1":                    false,
		"k8s.io/api/authentication/v1":                   false,
		"k8s.io/api/admissionregistration/v1":            false,
		"k8s.io/api/admissionregistration/v1beta1":       true,
		"k8s.io/client-go/kubernetesx":                   false,
		"k8s.io/client-go/rest":                          false,
		"k8s.io/client-go/tools/cache":                   false,
	} {
		assert.Equal(t, want, heavy(dep), dep)
	}
}
