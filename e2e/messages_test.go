package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationCLINoKubeconfig: with no kubeconfig anywhere, lockctl says
// so and where it looked, not that localhost:8080 is unreachable.
func TestIntegrationCLINoKubeconfig(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	c := newCLI(t)
	cmd := c.command(t.Context(), "status")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	o := c.runCmd(t, cmd)
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "error: no kubeconfig found: looked at $KUBECONFIG (not set), ~/.kube/config ("+
		filepath.Join(home, ".kube", "config")+": not found), the in-cluster config (not in a pod")
	assert.Contains(t, o.stderr, "hint: point --kubeconfig or KUBECONFIG at a kubeconfig file")
	assert.NotContains(t, o.stderr, "localhost:8080")
}

// TestIntegrationCLIUntrustedServer: a kubeconfig without the cluster's CA
// gets a message naming the context and server, and a hint.
func TestIntegrationCLIUntrustedServer(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	cfg, err := clientcmd.LoadFromFile(c.kubeconfig)
	require.NoError(t, err)
	server := ""
	for _, cl := range cfg.Clusters {
		cl.CertificateAuthorityData, cl.CertificateAuthority = nil, ""
		server = cl.Server
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))

	o := c.run(t, "status", "--kubeconfig", path)
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, "error: the API server "+server+` of context "`+testenv.ContextName+`" is not trusted: x509: certificate signed by unknown authority`)
	assert.Contains(t, o.stderr, `hint: check the certificate-authority (or certificate-authority-data) of the cluster of context "`+testenv.ContextName+`"`)
}

// TestIntegrationCLIJobMessages: abort, get jobs, logs and wait name the
// job that is not there, and a second abort says the job is already aborted.
func TestIntegrationCLIJobMessages(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, "abort", "nosuch")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, `error: job "nosuch" not found in namespace "`+c.namespace+`"`)
	assert.Contains(t, o.stderr, "hint: list the jobs there with `lockctl get jobs -n "+c.namespace+"`")
	for _, args := range [][]string{{"logs", "nosuch"}, {"logs", "nosuch", "-f"}, {"wait", "nosuch"}} {
		o = c.run(t, args...)
		assert.Equal(t, 1, o.code, "%v: %s", args, o.stderr)
		assert.Contains(t, o.stderr, `error: job "nosuch" not found in namespace "`+c.namespace+`"`, args)
		assert.Contains(t, o.stderr, "hint: list the jobs there with `lockctl get jobs -n "+c.namespace+"`", args)
	}

	o = c.run(t, "submit", "-f", testenv.WriteJob(t, "abort-me", ""))
	require.Equal(t, 0, o.code, o.stderr)
	o = c.run(t, "get", "jobs", "--job", "nope")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `no job named "nope" in namespace "`+c.namespace+`"`)
	o = c.run(t, "get", "jobs", "nope")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, `error: job "nope" not found in namespace "`+c.namespace+`"`)

	o = c.run(t, "abort", "abort-me", "--reason", "bad commit")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stdout, `job "abort-me" aborted: bad commit`)
	o = c.run(t, "abort", "abort-me", "--reason", "again")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Empty(t, o.stdout)
	assert.Contains(t, o.stderr, `job "abort-me" already aborted: bad commit`)
}

// TestIntegrationCLIAcquireInterrupted: SIGINT while queued exits 130,
// says it left the queue, and did leave it.
func TestIntegrationCLIAcquireInterrupted(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...).code)
	p := startRun(t, c, append([]string{"acquire", "staging", "--progress", "plain"}, id("api", 1)...)...)
	p.waitFor(t, `waiting for lock "staging"`)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	code, stderr := p.wait(t)
	assert.Equal(t, 130, code, stderr)
	assert.Contains(t, stderr, `interrupted while waiting for lock "staging"; left the queue`)

	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	assert.Empty(t, rec.Waiters, "the interrupted waiter left the queue")
	assert.Equal(t, "web", rec.Holder.Repo)
}
