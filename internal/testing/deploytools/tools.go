package deploytools

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Tool returns the path of a program hack/integration-tools.sh builds
// (helm3, helm4, flux-apply, kubectl …). Like testenv's control plane, a
// missing tool fails the test with what to run, and -short skips it
// unless $LOCKCTL_REQUIRE_INTEGRATION is set, when -short fails it.
func Tool(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		if os.Getenv(testenv.RequireIntegrationEnv) != "" {
			t.Fatalf("%s test skipped under -short while %s is set: run it without -short", name, testenv.RequireIntegrationEnv)
		}
		t.Skipf("runs %s: skipped under -short", name)
	}
	out, err := exec.Command(filepath.Join(repoRoot(), "hack", "integration-tools.sh"), "--path", name).Output()
	require.NoError(t, err, "hack/integration-tools.sh --path %s", name)
	path := strings.TrimSpace(string(out))
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not built (%s): run hack/integration-tools.sh %s (make integration-tools does)", name, path, name)
	}
	return path
}

// LockctlPath is a PATH variable (PATH=…) on which lockctl is the binary
// the tests build (clitest.Binary), ahead of the test's own PATH: where
// Helm 3 looks up its post-renderer and Helm 4's plugin its command.
func LockctlPath(t testing.TB) string {
	t.Helper()
	return "PATH=" + filepath.Dir(clitest.Binary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
}
