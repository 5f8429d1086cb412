package testenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Versions of the control-plane binaries. They must match
// hack/controlplane-tools.sh, which builds them into
// <tools dir>/<name>-<version>/<name>.
const (
	// KubeVersion is the version of kube-apiserver and kube-scheduler.
	KubeVersion = "v1.37.2"
	// EtcdVersion is the version of etcd.
	EtcdVersion = "v3.7.0"
	// KwokVersion is the version of kwok.
	KwokVersion = "v0.8.0"
)

// ToolsDirEnv names the environment variable that overrides the tools
// directory, for Go code and hack/controlplane-tools.sh alike.
const ToolsDirEnv = "LOCKCTL_TOOLS_DIR"

const modulePath = "github.com/lockctl/lockctl"

// ToolsMissingError reports control-plane binaries that have not been built.
type ToolsMissingError struct {
	// Dir is the tools directory that was searched.
	Dir string
	// Missing lists the absent binaries, relative to Dir.
	Missing []string
}

// Error implements error.
func (e *ToolsMissingError) Error() string {
	return fmt.Sprintf("control-plane binaries missing in %s: run `make tools` (not found: %s)",
		e.Dir, strings.Join(e.Missing, ", "))
}

// tools holds the absolute paths of the binaries Start runs.
type tools struct {
	apiserver, scheduler, etcd, kwok string
}

// DefaultToolsDir returns $LOCKCTL_TOOLS_DIR if set, else <repo root>/_output/tools,
// where the repo root is the nearest directory at or above the working
// directory whose go.mod declares module github.com/lockctl/lockctl.
func DefaultToolsDir() (string, error) {
	if dir := os.Getenv(ToolsDirEnv); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "_output", "tools"), nil
}

// findTools resolves every binary in dir and reports the missing ones.
func findTools(dir string) (tools, error) {
	t := tools{
		apiserver: filepath.Join(dir, "kube-apiserver-"+KubeVersion, "kube-apiserver"),
		scheduler: filepath.Join(dir, "kube-scheduler-"+KubeVersion, "kube-scheduler"),
		etcd:      filepath.Join(dir, "etcd-"+EtcdVersion, "etcd"),
		kwok:      filepath.Join(dir, "kwok-"+KwokVersion, "kwok"),
	}
	var missing []string
	for _, p := range []string{t.apiserver, t.scheduler, t.etcd, t.kwok} {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			rel, _ := filepath.Rel(dir, p)
			missing = append(missing, rel)
		}
	}
	if len(missing) > 0 {
		return tools{}, &ToolsMissingError{Dir: dir, Missing: missing}
	}
	return t, nil
}

// repoRoot walks up from the working directory to the go.mod of this module.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repo root: %w", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("find repo root: no go.mod for module %s at or above %s (set %s)", modulePath, wd, ToolsDirEnv)
		}
	}
}

func isModuleRoot(goMod string) bool {
	f, err := os.Open(goMod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == modulePath
		}
	}
	return false
}
