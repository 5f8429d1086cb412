package cmd

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/job"
)

// parseArgs runs `lockctl <path...> args` with the command at path replaced
// by newCmd(runF), and returns the options runF captured and the error.
func parseArgs[T any](t *testing.T, path []string, args []string, newCmd func(*Factory, func(*T) error) *cobra.Command) (*T, error) {
	t.Helper()
	te := newTestEnv(t)
	root := newRootCmd(te.f)
	parent := root
	for _, name := range path[:len(path)-1] {
		parent = findCmd(parent, name)
	}
	parent.RemoveCommand(findCmd(parent, path[len(path)-1]))
	var got *T
	parent.AddCommand(newCmd(te.f, func(o *T) error { got = o; return nil }))
	root.SetArgs(append(append([]string{}, path...), args...))
	return got, root.Execute()
}

// assertParsed checks what parseArgs returned: the wanted usage error, or
// the wanted options once clear has dropped what is not compared.
func assertParsed[T any](t *testing.T, got *T, err error, wantErr string, want T, clear func(*T)) {
	t.Helper()
	if wantErr != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), wantErr)
		assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
		return
	}
	require.NoError(t, err)
	clear(got)
	assert.Equal(t, want, *got)
}

// createJobPod creates the pod of a stored job in the fake cluster.
func createJobPod(t *testing.T, te *testEnv, name string, mod func(*corev1.Pod)) {
	t.Helper()
	j, err := job.NewStore(te.cs.CoreV1(), "default").Get(t.Context(), name)
	require.NoError(t, err)
	pod := job.NewPod(j, "default", "7")
	mod(pod)
	_, err = te.cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}
