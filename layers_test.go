package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/lockctl/lockctl"

// layer names the layer of a package of this module by its folder; see
// CONTRIBUTING.md's Layout.
func layer(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	switch {
	case rel == "" || rel == "cmd":
		return "commands"
	case rel == "internal/cli" || strings.HasPrefix(rel, "internal/cli/"):
		return "cli"
	case strings.HasPrefix(rel, "internal/base/"):
		return "base"
	case strings.HasPrefix(rel, "internal/testing/"):
		return "testing"
	case slices.Contains(libraryPackages, rel):
		return "library"
	}
	return "other"
}

// libraryPackages are the packages of the design that the CLI is built on.
var libraryPackages = []string{"lock", "job", "scheduler", "run", "podwatch", "liveness", "servertime", "events"}

// mayImport says which layers a layer may import: its own and the ones
// below it. The test infrastructure may import anything but the commands;
// nothing but tests, benchmarks and hack/ may import it.
var mayImport = map[string][]string{
	"commands": {"commands", "cli", "library", "base", "other"},
	"cli":      {"cli", "library", "base"},
	"library":  {"library", "base"},
	"base":     {"base"},
	"testing":  {"testing", "cli", "library", "base"},
}

// TestLayers checks, over `go list`, that the folders are layers and imports
// only go down: no package the library imports imports the library back or
// the CLI plumbing, and the CLI plumbing is below the commands only.
func TestLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	require.NoError(t, err, "go list")
	imports := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		for _, imp := range f[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				imports[f[0]] = append(imports[f[0]], imp)
			}
		}
	}
	require.NotEmpty(t, imports)
	for pkg, imps := range imports {
		from := layer(pkg)
		allowed, ok := mayImport[from]
		if !ok {
			continue // bench, e2e, reliability, hack, dashboard: above the library
		}
		for _, imp := range imps {
			to := layer(imp)
			if to == "cli" && pkg == module+"/dashboard" {
				continue
			}
			if !slices.Contains(allowed, to) {
				t.Errorf("%s (%s) imports %s (%s): imports only go down", pkg, from, imp, to)
			}
		}
	}
}

// TestLayerNames keeps the layer map in step with the tree: every package of
// the module's internal folder is in a layer.
func TestLayerNames(t *testing.T) {
	for _, pkg := range []string{"internal/cli/term", "internal/base/schema", "internal/testing/testenv", "lock", "cmd"} {
		require.NotEqual(t, "other", layer(module+"/"+pkg), pkg)
	}
}
