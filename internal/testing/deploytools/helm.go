package deploytools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Helm runs one Helm, 3 or 4, as a user: the kubeconfig it is given, and
// Helm's own homes (configuration, cache, data and its plugins) in a
// directory of the test, so that nothing of the machine's Helm is read and
// a plugin installed by one test is seen by it alone.
type Helm struct {
	// Major is 3 or 4.
	Major int
	// Bin is the helm program.
	Bin string
	// Kubeconfig is the kubeconfig it acts with.
	Kubeconfig string
	// Env is the environment it runs in beside its homes and KUBECONFIG:
	// PATH (where a --post-renderer is looked up), LOCKCTL_FENCING_TOKEN …
	Env  []string
	home string
}

// NewHelm returns Helm major (3 or 4), as hack/integration-tools.sh builds
// it (tool helm3 or helm4), acting with kubeconfig, running with PATH and
// env.
func NewHelm(t testing.TB, major int, kubeconfig string, env ...string) *Helm {
	t.Helper()
	require.Contains(t, []int{3, 4}, major, "Helm 3 or 4")
	return &Helm{Major: major, Bin: Tool(t, fmt.Sprintf("helm%d", major)), Kubeconfig: kubeconfig,
		Env: append([]string{"PATH=" + os.Getenv("PATH")}, env...), home: t.TempDir()}
}

// As is a copy of h that runs with kubeconfig and env in place of h's
// (its homes, and so its plugins, are h's).
func (h *Helm) As(kubeconfig string, env ...string) *Helm {
	c := *h
	c.Kubeconfig = kubeconfig
	c.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	return &c
}

// Run runs helm with args and returns its stdout and stderr together;
// err is non-nil when it did not exit 0.
func (h *Helm) Run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, h.Bin, args...)
	cmd.Env = append([]string{
		"HOME=" + h.home,
		"HELM_CONFIG_HOME=" + filepath.Join(h.home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(h.home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(h.home, "data"),
		"KUBECONFIG=" + h.Kubeconfig,
	}, h.Env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Create writes the chart `helm create NAME` makes into dir and returns its
// path.
func (h *Helm) Create(ctx context.Context, dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	_, err := h.Run(ctx, "create", path)
	return path, err
}

// Revision is one line of `helm history -o json`.
type Revision struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Chart       string `json:"chart"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
}

// History is the release's revisions in namespace, oldest first, as `helm
// history` reads them from its release Secrets.
func (h *Helm) History(ctx context.Context, release, namespace string) ([]Revision, error) {
	out, err := h.Run(ctx, "history", release, "-n", namespace, "-o", "json", "--max", "256")
	if err != nil {
		return nil, err
	}
	var revs []Revision
	if err := json.Unmarshal([]byte(out), &revs); err != nil {
		return nil, fmt.Errorf("helm history %s: %w: %s", release, err, out)
	}
	return revs, nil
}

// Statuses is each revision's status, oldest first (deployed, superseded,
// failed, pending-upgrade …).
func Statuses(revs []Revision) []string {
	out := make([]string, len(revs))
	for i, r := range revs {
		out[i] = r.Status
	}
	return out
}

// Pending is the revisions left pending-install, pending-upgrade or
// pending-rollback: a release in such a state refuses every later
// operation ("another operation (install/upgrade/rollback) is in
// progress").
func Pending(revs []Revision) []Revision {
	var out []Revision
	for _, r := range revs {
		if strings.HasPrefix(r.Status, "pending-") {
			out = append(out, r)
		}
	}
	return out
}

// InstallStampPlugin installs lockctl's Helm 4 post-renderer plugin from
// the repository (plugins/helm/lockctl-stamp), as docs/helm.md does, for
// `--post-renderer lockctl-stamp`; lockctl must be on h's PATH
// (LockctlPath) when it runs.
func (h *Helm) InstallStampPlugin(ctx context.Context) error {
	if h.Major != 4 {
		return fmt.Errorf("helm %d takes lockctl as --post-renderer lockctl --post-renderer-args stamp, no plugin", h.Major)
	}
	_, err := h.Run(ctx, "plugin", "install", filepath.Join(repoRoot(), "plugins", "helm", "lockctl-stamp"))
	return err
}

// StampArgs are the flags that make helm install, upgrade or template
// stamp manifests with lockctl stamp: Helm 3's post-renderer contract, or
// Helm 4's plugin (InstallStampPlugin).
func (h *Helm) StampArgs() []string {
	if h.Major == 3 {
		return []string{"--post-renderer", "lockctl", "--post-renderer-args", "stamp"}
	}
	return []string{"--post-renderer", "lockctl-stamp"}
}
