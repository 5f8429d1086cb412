package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBinaryLeavesOutHeavyPackages keeps out of the binary what ADR 0064 and
// 0071 took out of every command's start: client-go's clientset of every
// group and its informers, and Prometheus's client library (tests may
// import them; the binary may not).
func TestBinaryLeavesOutHeavyPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the binary's dependencies")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err, "go list")
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "k8s.io/client-go/rest", "the list is the binary's")
	for _, dep := range deps {
		assert.NotContains(t, []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers"}, dep, "ADR 0064")
		assert.False(t, strings.HasPrefix(dep, "github.com/prometheus/"), "%s: ADR 0071, metrics instead", dep)
	}
}
