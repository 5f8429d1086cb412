package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Two peers on one Lease run their commands one after the other, each
// exits with its command's status, and the Lease is left free.
func TestIntegrationPeerRunsUnderLease(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	dir := t.TempDir()
	script := func(id string, code int) string {
		f := filepath.Join(dir, id)
		return "date +%s%N > " + f + ".start; sleep 0.3; date +%s%N > " + f + ".end; exit " + strconv.Itoa(code)
	}
	codes := make([]int, 2)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			codes[i] = run([]string{"-kubeconfig", env.Kubeconfig, "-n", ns, "-l", "deploy", "-i", "peer-" + strconv.Itoa(i), "-fast",
				"--", "sh", "-c", script(strconv.Itoa(i), 3+i)}, io.Discard, io.Discard)
		})
	}
	wg.Wait()
	assert.Equal(t, []int{3, 4}, codes, "each exits with its command's status")

	stamp := func(name string) int64 {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, name)
		n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		require.NoError(t, err, name)
		return n
	}
	s0, e0, s1, e1 := stamp("0.start"), stamp("0.end"), stamp("1.start"), stamp("1.end")
	assert.True(t, e0 < s1 || e1 < s0, "the two commands never ran at once: %d-%d and %d-%d", s0, e0, s1, e1)

	lease, err := env.Client.CoordinationV1().Leases(ns).Get(t.Context(), "deploy", metav1.GetOptions{})
	require.NoError(t, err)
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		holder = *lease.Spec.HolderIdentity
	}
	assert.Empty(t, holder, "released on the command's end (ReleaseOnCancel)")
}
