// Package e2e runs the lockctl binary as users and pipelines do, as
// separate processes against a real control plane.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// lockctlBin is the binary under test, built once by TestMain.
var lockctlBin string

func TestMain(m *testing.M) {
	var err error
	if lockctlBin, err = clitest.Build(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testenv.Main(m)
	clitest.Cleanup()
}

// cli runs lockctl against one control plane and namespace.
type cli struct {
	kubeconfig string
	namespace  string
}

func newCLI(t *testing.T) *cli {
	t.Helper()
	env := testenv.Get(t)
	return &cli{kubeconfig: env.Kubeconfig, namespace: env.Namespace(t)}
}

// outcome is what one lockctl process did.
type outcome struct {
	code   int
	stdout string
	stderr string
}

// command builds a lockctl process with the test cluster's kubeconfig and
// lock namespace, and a clean CI environment.
func (c *cli) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, lockctlBin, args...)
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.TempDir(),
		"KUBECONFIG=" + c.kubeconfig,
		"LOCKCTL_LOCK_NAMESPACE=" + c.namespace,
		"LOCKCTL_NAMESPACE=" + c.namespace,
	}
	return cmd
}

func (c *cli) run(t *testing.T, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return c.runCmd(t, c.command(ctx, args...))
}

func (c *cli) runCmd(t *testing.T, cmd *exec.Cmd) outcome {
	t.Helper()
	o := clitest.RunCmd(t, cmd)
	return outcome{code: o.Code, stdout: o.Stdout, stderr: o.Stderr}
}

// id returns the identity flags of acme/<repo>@main#<build>.
func id(repo string, build int) []string {
	return []string{"--owner", "acme", "--repo", repo, "--branch", "main", "--build", fmt.Sprint(build)}
}

// writeUnreachableKubeconfig writes a kubeconfig pointing at a port where
// nothing listens.
func writeUnreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
