package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestIntegrationCLIAcquireReentrant runs one CI build's acquire twice with
// the built binary in the same pod, as a second step of the same build (or
// a CI retry) does: the second returns at once with the token of the hold,
// and another pod with the same build number still waits.
func TestIntegrationCLIAcquireReentrant(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	pods := testenv.Get(t).Client.CoreV1().Pods(c.namespace)
	for _, name := range []string{"build-123", "build-123-retry"} {
		_, err := pods.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err, "create pod %s", name)
	}
	build := append(id("web", 123), "--pod", "build-123")

	first := c.run(t, append([]string{"acquire", "staging"}, build...)...)
	require.Equal(t, 0, first.code, "first acquire: %s", first.stderr)
	require.Regexp(t, `^\d+\n$`, first.stdout, "prints the fencing token")

	// A timeout makes the old behaviour (queueing behind itself) fail fast
	// with exit 4 instead of hanging.
	again := c.run(t, append([]string{"acquire", "staging", "--timeout", "1m"}, build...)...)
	require.Equal(t, 0, again.code, "re-entrant acquire: %s", again.stderr)
	assert.Regexp(t, `^\d+\n$`, again.stdout, "prints a fencing token")
	assert.Contains(t, again.stderr, `lock "staging" already held by acme/web@main#123`, "says it was already held")
	assert.NotContains(t, again.stderr, "waiting for lock", "never queues behind itself")

	other := c.run(t, append([]string{"acquire", "staging", "--timeout", "2s", "--pod", "build-123-retry"}, id("web", 123)...)...)
	assert.Equal(t, 4, other.code, "another pod of the same build waits like anyone else: %s", other.stderr)

	o := c.run(t, append([]string{"release", "staging"}, build...)...)
	require.Equal(t, 0, o.code, "release: %s", o.stderr)
	assert.True(t, lockGone(t, c, "staging"), "one release frees the lock")
}

// TestIntegrationCLIMissingLockNamespace: a lock namespace that does not
// exist is one error line naming it, exit 1, at once, even with no timeout.
func TestIntegrationCLIMissingLockNamespace(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	start := time.Now()
	o := c.run(t, append([]string{"acquire", "x", "--lock-namespace", "does-not-exist"}, id("web", 1)...)...)
	took := time.Since(start)
	assert.Equal(t, 1, o.code, "exit status: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: `, "one error line")
	assert.Contains(t, o.stderr, `"does-not-exist"`, "names the namespace")
	assert.Contains(t, o.stderr, "kubectl create namespace does-not-exist", "says what to do")
	assert.NotContains(t, o.stderr, "waiting for lock", "does not wait")
	t.Logf("missing lock namespace reported after %s", took)
}
