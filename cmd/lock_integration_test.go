package cmd

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func identityFlags(repo, build string) []string {
	return []string{"--owner", "acme", "--repo", repo, "--branch", "main", "--build", build}
}

// hintedCommand returns the lockctl command a hint line quotes, as
// arguments without the program name.
func hintedCommand(t *testing.T, stderr string) []string {
	t.Helper()
	m := regexp.MustCompile("`lockctl ([^`]*)`").FindStringSubmatch(stderr)
	require.NotNil(t, m, "a lockctl command quoted in %q", stderr)
	return strings.Fields(m[1])
}

func TestIntegrationAcquireMissingLockNamespace(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const missing = "no-such-lock-namespace"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{
			name: "acquire",
			args: append([]string{"acquire", "staging", "--timeout", "2m"}, identityFlags("web", "1")...),
			want: `error: acquire lock "staging": lock namespace "no-such-lock-namespace" does not exist`,
		},
		{
			name: "run",
			args: append([]string{"run", "--lock", "staging", "--timeout", "2m"}, append(identityFlags("web", "1"), "--", "true")...),
			want: `error: acquire lock "staging": lock namespace "no-such-lock-namespace" does not exist`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			// Flags before "--", where lockctlIn adds its own.
			args := append([]string{tt.args[0], "--lock-namespace", missing}, tt.args[1:]...)
			if tt.name == "run" {
				args = append(args[:len(args)-2], "--kubeconfig", env.Kubeconfig, "--", "true")
			}
			_, errOut, code := lockctlIn(t, env, ns, args...)
			assert.Equal(t, cmdutil.CodeError, code, "exit status; stderr:\n%s", errOut)
			lines := strings.Split(strings.TrimSpace(errOut), "\n")
			require.NotEmpty(t, lines)
			assert.Equal(t, tt.want, lines[len(lines)-2], "the error line; stderr:\n%s", errOut)
			assert.Equal(t, "hint: create it with `kubectl create namespace no-such-lock-namespace`, or keep locks in another namespace with --lock-namespace",
				lines[len(lines)-1], "the hint")
			// Generous: today's code waits the whole --timeout (2m).
			assert.Less(t, time.Since(start), time.Minute, "fails at once, not after --timeout")
		})
	}
}

func TestIntegrationCorruptLockHintRuns(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name("staging"), Namespace: ns,
		Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
		Annotations: map[string]string{record.RecordAnnotation: `{"target":"staging","holder":`},
	}}
	_, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	require.NoError(t, err)

	_, errOut, code := lockctlIn(t, env, ns, append([]string{"acquire", "staging", "--lock-namespace", ns}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeError, code, errOut)
	assert.Contains(t, errOut, "is invalid")
	_, hint, found := strings.Cut(errOut, "remove it with")
	require.True(t, found, "a hint in %q", errOut)
	fix := hintedCommand(t, hint)
	assert.Equal(t, []string{"release", "staging", "--lock-namespace", ns, "--force"}, fix, "the hinted command")

	_, errOut, code = lockctlIn(t, env, "default", fix...)
	assert.Equal(t, cmdutil.CodeOK, code, "the hinted command runs: %s", errOut)
	_, err = env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the corrupt lock is gone, got %v", err)
}

func TestIntegrationReleaseByNonHolderHint(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	_, errOut, code := lockctlIn(t, env, ns, append([]string{"acquire", "staging"}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)

	_, errOut, code = lockctlIn(t, env, ns, append([]string{"release", "staging"}, identityFlags("web", "2")...)...)
	require.Equal(t, cmdutil.CodeError, code, errOut)
	assert.Contains(t, errOut, `error: release lock "staging": lock on "staging" is held by acme/web@main#1, not by the caller`)
	assert.NotContains(t, errOut, "--owner", "the holder's identity flags are not the way around it")
	fix := hintedCommand(t, errOut)
	assert.Equal(t, []string{"release", "staging", "--lock-namespace", ns, "--force"}, fix, "the hinted command")

	_, errOut, code = lockctlIn(t, env, "default", fix...)
	assert.Equal(t, cmdutil.CodeOK, code, "the hinted command runs: %s", errOut)
	assert.Contains(t, errOut, `broke lock "staging" held by acme/web@main#1`, "says whose lock it broke")
}

func TestIntegrationAcquireReentrant(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	pod := func(name string) string {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
		_, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
		require.NoError(t, err)
		return name
	}
	tests := []struct {
		name   string
		target string
		first  []string // extra flags of the first acquire
		again  []string // extra flags of the second
		// wantQueued: the second waits (and times out) instead of re-entering.
		wantQueued bool
	}{
		{name: "same build, no pod", target: "no-pod"},
		{name: "same build, same pod", target: "same-pod", first: []string{"--pod", pod("build-123")}, again: []string{"--pod", "build-123"}},
		{name: "same build, another pod", target: "other-pod", first: []string{"--pod", pod("build-124")}, again: []string{"--pod", pod("build-124-retry")}, wantQueued: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"acquire", tt.target}, identityFlags("web", "123")...)
			token, errOut, code := lockctlIn(t, env, ns, append(args, tt.first...)...)
			require.Equal(t, cmdutil.CodeOK, code, errOut)

			start := time.Now()
			again, errOut, code := lockctlIn(t, env, ns, append(append(args, tt.again...), "--timeout", "3s")...)
			if tt.wantQueued {
				assert.Equal(t, cmdutil.CodeTimeout, code, "another pod of the same build waits: %s", errOut)
				return
			}
			assert.Equal(t, cmdutil.CodeOK, code, errOut)
			assert.Less(t, time.Since(start), 3*time.Second, "returns at once")
			assert.Equal(t, token, again, "the token of the hold")
			assert.Contains(t, errOut, `lock "`+tt.target+`" already held by acme/web@main#123 since`)
			assert.Contains(t, errOut, "nothing to do")
			l, err := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{}).Get(t.Context(), tt.target)
			require.NoError(t, err)
			assert.Empty(t, l.Status.Waiters, "nobody queued behind itself")
		})
	}
}
