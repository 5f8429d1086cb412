package integrations_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// pageBlock is a fenced block of a tool's page preceded by a marker:
// <!-- run: FLOW --> for commands, <!-- file: PATH --> for a file they
// read.
var pageBlock = regexp.MustCompile("(?s)<!-- (run|file): (\\S+) -->\n```[a-z]*\n(.*?)```")

// toolPage is a flow of a tool's page: its run blocks, in order, as one
// script, and the files they read.
type toolPage struct {
	script string
	files  map[string]string
}

// readToolPage reads the flows of docs/NAME.
func readToolPage(t *testing.T, name string) map[string]*toolPage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "docs", name))
	require.NoError(t, err)
	flows := map[string]*toolPage{}
	files := map[string]string{}
	for _, m := range pageBlock.FindAllStringSubmatch(string(data), -1) {
		if m[1] == "file" {
			files[m[2]] = m[3]
			continue
		}
		p := flows[m[2]]
		if p == nil {
			p = &toolPage{files: files}
			flows[m[2]] = p
		}
		p.script += m[3]
	}
	return flows
}

// TestIntegrationToolPages runs the commands of each tool's page (blocks
// marked <!-- run: FLOW -->, each flow's blocks in order as one bash
// script, with -e and -o pipefail) as a user would run them: lockctl, the
// flow's Helm as helm, and kubectl on PATH, the kubeconfig of a real API
// server, the files the page shows (<!-- file: PATH -->) in the working
// directory with a checkout's plugins/. The page's namespace, shop, is a
// namespace of the test's.
func TestIntegrationToolPages(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	kubectl := tool(t, "kubectl")
	tests := []struct {
		page, flow string
		// helm is the Helm the flow runs as helm (3 or 4), 0 for none.
		helm  int
		check func(t *testing.T, ns, out string)
	}{
		{page: "helm.md", flow: "helm3", helm: 3, check: helmSettled(env, 3)},
		{page: "helm.md", flow: "helm4", helm: 4, check: helmSettled(env, 4)},
		{page: "argocd.md", flow: "argocd", check: appsShown("argocd/web")},
		{page: "flux.md", flow: "flux", check: appsShown("flux/kustomization/flux-system/web")},
		{page: "kubectl.md", flow: "kubectl", check: func(t *testing.T, ns, out string) {
			cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), "web", metav1.GetOptions{})
			require.NoError(t, err)
			token := cm.Annotations[enforce.TokenAnnotation]
			assert.NotEmpty(t, token, "the object carries a token")
			assert.True(t, strings.HasSuffix(strings.TrimSpace(out), token), "the page's last get shows it")
		}},
	}
	pages := map[string]map[string]*toolPage{}
	for _, tt := range tests {
		if pages[tt.page] == nil {
			pages[tt.page] = readToolPage(t, tt.page)
		}
	}
	for _, tt := range tests {
		t.Run(tt.page+"/"+tt.flow, func(t *testing.T) {
			t.Parallel()
			p := pages[tt.page][tt.flow]
			require.NotNil(t, p, "%s has a flow %q", tt.page, tt.flow)
			ns, lockNS := env.Namespace(t), env.Namespace(t)
			shop := regexp.MustCompile(`\bshop\b`)

			bin := t.TempDir()
			links := map[string]string{"lockctl": clitest.Binary(t), "kubectl": kubectl}
			if tt.helm != 0 {
				links["helm"] = tool(t, fmt.Sprintf("helm%d", tt.helm))
			}
			for name, target := range links {
				require.NoError(t, os.Symlink(target, filepath.Join(bin, name)))
			}
			dir := t.TempDir()
			require.NoError(t, os.Symlink(filepath.Join(repoRoot(), "plugins"), filepath.Join(dir, "plugins")))
			for path, content := range p.files {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, path), []byte(shop.ReplaceAllString(content, ns)), 0o644))
			}

			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			home := t.TempDir()
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-x", "-c", shop.ReplaceAllString(p.script, ns))
			cmd.Dir = dir
			cmd.Env = []string{
				"PATH=" + bin + string(os.PathListSeparator) + "/usr/bin:/bin",
				"HOME=" + home, "KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS,
				"HELM_CONFIG_HOME=" + filepath.Join(home, "helm-config"), "HELM_CACHE_HOME=" + filepath.Join(home, "helm-cache"),
				"HELM_DATA_HOME=" + filepath.Join(home, "helm-data"),
			}
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Run(), "docs/%s, flow %s:\n%s\nstdout:\n%s", tt.page, tt.flow, stderr.String(), stdout.String())
			tt.check(t, ns, stdout.String())

			// Every hold the page takes, it releases.
			o := clitest.Run(t, time.Minute, home, []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}, "status", ns, "-o", "yaml")
			require.Zero(t, o.Code, o.Stderr)
			assert.Contains(t, o.Stderr, "is free", "docs/%s, flow %s leaves the lock free", tt.page, tt.flow)
		})
	}
}

// helmSettled checks a Helm page's flow: its release went through
// install, upgrade and rollback, none left pending, and was uninstalled.
func helmSettled(env *testenv.Env, major int) func(t *testing.T, ns, out string) {
	return func(t *testing.T, ns, out string) {
		assert.Regexp(t, `(?m)^3\s.*\bdeployed\s+web-0\.1\.0\b.*Rollback to 1\s*$`, out, "helm %d history shows the rollback deployed", major)
		assert.NotContains(t, out, "pending-", "no revision pending")
		secrets, err := env.Client.CoreV1().Secrets(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "owner=helm"})
		require.NoError(t, err)
		assert.Empty(t, secrets.Items, "uninstalled")
	}
}

// appsShown checks a GitOps page's flow: status showed the holder's
// application as the page named it.
func appsShown(app string) func(t *testing.T, ns, out string) {
	return func(t *testing.T, ns, out string) {
		assert.Regexp(t, `(?m)^TARGET .* APPS `, out)
		assert.Contains(t, out, " "+app+" ", "status -o wide shows the application")
	}
}
