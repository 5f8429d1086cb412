package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationEnforceCommand: lockctl enforce --mode deny returns once
// the API server applies the policy; acquire records the caller's
// Kubernetes user (a SelfSubjectReview), which status shows, as it shows
// the enforcement; another user's write is refused with what to do;
// --uninstall removes it and the write goes through.
func TestIntegrationEnforceCommand(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)

	_, errOut, code := lockctlIn(t, env, lockNS, "enforce", target, "--mode", "deny")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, errOut, `lock "`+target+`": made its lock readable by the policy`)
	assert.Contains(t, errOut, `lock "`+target+`": the API server refuses writes from anyone but the holder`)

	token, errOut, code := lockctlIn(t, env, lockNS, append([]string{"acquire", target}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	out, errOut, code := lockctlIn(t, env, lockNS, "status", target, "-o", "yaml")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, out, "user: admin", "acquire recorded the caller's user")
	assert.Contains(t, errOut, `lock "`+target+`" is enforced by the API server: deny`)

	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}
	env.Grant(t, target, "writer", subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}})
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "mallory"}
	mallory, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	write := func(ctx context.Context) error {
		_, err := mallory.CoreV1().ConfigMaps(target).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "app-"}}, metav1.CreateOptions{})
		return err
	}
	err = write(t.Context())
	require.Error(t, err, "enforce returned once the policy applied")
	assert.Contains(t, err.Error(), "lockctl refused this write: namespace "+target+" is locked by acme/web@main#1 (user admin)")
	assert.Contains(t, err.Error(), "with fencing token "+strings.TrimSpace(token))
	assert.Contains(t, err.Error(), "`lockctl acquire "+target+"`")

	_, errOut, code = lockctlIn(t, env, lockNS, "break-glass", target, "--reason", "roll back", "--for", "5m")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, errOut, `lock "`+target+`": break-glass for user admin by `)
	assert.Contains(t, errOut, `"roll back" (the lock was held by acme/web@main#1)`)
	_, errOut, code = lockctlIn(t, env, lockNS, "status", target)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, errOut, `lock "`+target+`": break-glass for user admin`)
	_, errOut, code = lockctlIn(t, env, lockNS, "break-glass", target, "--end")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, errOut, `lock "`+target+`": break-glass ended`)
	_, errOut, code = lockctlIn(t, env, lockNS, "break-glass", target)
	assert.Equal(t, cmdutil.CodeUsage, code, "no reason")
	assert.Contains(t, errOut, "--reason")

	_, errOut, code = lockctlIn(t, env, lockNS, "enforce", target, "--uninstall")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, errOut, `lock "`+target+`" is no longer enforced`)
	require.NoError(t, wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return write(ctx) == nil, nil
	}), "mallory writes once the policy is gone")
}

// TestIntegrationAcquireAsksWhoOnlyWhenEnforced: acquire records the
// caller's user only on a lock that lockctl enforce marked, and asks the
// API server who it is only then: a lock that is not enforced costs no
// SelfSubjectReview. --uninstall removes the mark.
func TestIntegrationAcquireAsksWhoOnlyWhenEnforced(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	plain, enforced, lockNS := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	asked := 0
	lockctl := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		who := f.WhoAmI
		f.WhoAmI = func(ctx context.Context) (record.User, error) { asked++; return who(ctx) }
		err := Run(t.Context(), f, append(args, "--kubeconfig", env.Kubeconfig, "-n", lockNS))
		if err != nil {
			cmdutil.PrintError(&errOut, err, 0)
		}
		return out.String(), errOut.String(), cmdutil.ExitCode(err)
	}

	_, errOut, code := lockctl(append([]string{"acquire", plain}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Zero(t, asked, "no SelfSubjectReview for a lock that is not enforced")
	out, errOut, code := lockctl("status", plain, "-o", "yaml")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.NotContains(t, out, "user: admin")

	_, errOut, code = lockctl("enforce", enforced, "--mode", "warn")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	_, errOut, code = lockctl(append([]string{"acquire", enforced}, identityFlags("web", "2")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Equal(t, 1, asked, "one SelfSubjectReview for the enforced lock")
	out, errOut, code = lockctl("status", enforced, "-o", "yaml")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, out, "user: admin")

	_, errOut, code = lockctl("enforce", enforced, "--uninstall")
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	cm, err := env.Kube.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(enforced), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, record.EnforcedAnnotation, "--uninstall removes the mark")
}
