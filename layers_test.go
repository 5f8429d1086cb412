package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/lockctl/lockctl"

// The layers, from the top: each may import only layers below it (and, in
// the library, only lower tiers of it). A package's layer comes from its
// folder: CONTRIBUTING.md's Layout says what each folder is for.
const (
	layerCommands = "commands" // main and cmd: cobra wiring, flags, printing
	layerCLI      = "cli"      // cmd/internal/...: CLI plumbing only cmd may use
	layerTools    = "tools"    // bench, e2e, reliability, integrations, deploy, hack: tests and programs beside the product
	layerLibrary  = "library"  // the top-level packages the CLI is built on
	layerBase     = "base"     // internal/base/...: utilities below the library
	layerTesting  = "testing"  // internal/testing/...: test infrastructure
)

// toolFolders are the top-level folders of layerTools.
var toolFolders = []string{"bench", "e2e", "reliability", "integrations", "deploy", "hack"}

// libraryTiers orders the library inside itself, lowest first: a package
// imports only packages of lower tiers. A new top-level package must be
// placed here, or TestLayers fails.
var libraryTiers = [][]string{
	{"kube", "liveness", "servertime", "metrics", "runjobs", "lock/record"},
	{"job", "lock", "podwatch", "preflight"},
	{"enforce", "events", "scheduler", "stats"},
	{"run", "notify"},
	{"dashboard"},
}

// layer returns the layer of a package of this module from its path, and
// for the library its tier (-1 elsewhere); "" means no layer fits.
func layer(pkg string) (string, int) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case rel == "" || rel == "cmd":
		return layerCommands, -1
	case strings.HasPrefix(rel, "cmd/internal/"):
		return layerCLI, -1
	case strings.HasPrefix(rel, "internal/base/"):
		return layerBase, -1
	case strings.HasPrefix(rel, "internal/testing/"):
		return layerTesting, -1
	case slices.Contains(toolFolders, top):
		return layerTools, -1
	}
	for tier, pkgs := range libraryTiers {
		if slices.Contains(pkgs, rel) {
			return layerLibrary, tier
		}
	}
	return "", -1
}

// mayImport says which layers a layer may import besides its own (the
// library's own tiers are checked apart). The tools and the test
// infrastructure sit beside the product: they may use any of it but the
// commands' plumbing (the tools drive the commands themselves), and nothing
// of the product may use them.
var mayImport = map[string][]string{
	layerCommands: {layerCLI, layerLibrary, layerBase},
	layerCLI:      {layerLibrary, layerBase},
	layerTools:    {layerCommands, layerLibrary, layerBase, layerTesting},
	layerLibrary:  {layerBase},
	layerBase:     {},
	layerTesting:  {layerLibrary, layerBase},
}

// TestLayers checks, over `go list` of every package of the module with its
// tests' imports, that each package has a layer and imports only go down:
// the library's tiers import lower tiers only, nothing below the commands
// imports the CLI plumbing, and only tests import the test infrastructure.
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...").Output()
	require.NoError(t, err, "go list")
	sc := bufio.NewScanner(bytes.NewReader(out))
	seen := 0
	for sc.Scan() {
		code, tests, _ := strings.Cut(sc.Text(), "|")
		f := strings.Fields(code)
		pkg := f[0]
		seen++
		from, tier := layer(pkg)
		if from == "" {
			t.Errorf("%s has no layer: put it in a layer's folder, or in libraryTiers", pkg)
			continue
		}
		check := func(imp string, test bool) {
			if imp != module && !strings.HasPrefix(imp, module+"/") || imp == pkg {
				return
			}
			to, toTier := layer(imp)
			switch {
			case to == "":
				return // reported as a package of its own
			case to == layerTesting && (test || strings.HasSuffix(pkg, "test")):
				return // tests, and test helpers beside a package (termtest), use the test infrastructure
			case strings.HasPrefix(strings.TrimPrefix(imp, module+"/"), strings.TrimPrefix(pkg, module+"/")+"/"):
				return // a package's own subpackages (cmd/internal/cli/term/termtest)
			case from == layerLibrary && to == layerLibrary:
				if toTier >= tier {
					t.Errorf("%s (library tier %d) imports %s (tier %d): the library imports only lower tiers", pkg, tier, imp, toTier)
				}
			case to != from && !slices.Contains(mayImport[from], to):
				t.Errorf("%s (%s) imports %s (%s): imports only go down", pkg, from, imp, to)
			}
		}
		for _, imp := range f[1:] {
			check(imp, false)
		}
		for _, imp := range strings.Fields(tests) {
			check(imp, true)
		}
	}
	require.NoError(t, sc.Err())
	require.Greater(t, seen, 30, "go list found too few packages")
}

// TestLayerOf pins the layer of a package of each kind of folder.
func TestLayerOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"":                         layerCommands,
		"cmd":                      layerCommands,
		"cmd/internal/cli/term":    layerCLI,
		"internal/base/schema":     layerBase,
		"internal/testing/testenv": layerTesting,
		"bench":                    layerTools,
		"hack/localcluster":        layerTools,
		"lock":                     layerLibrary,
		"dashboard":                layerLibrary,
		"kube":                     layerLibrary,
		"somethingnew":             "",
	} {
		got, _ := layer(strings.TrimSuffix(module+"/"+pkg, "/"))
		assert.Equal(t, want, got, pkg)
	}
	_, lock := layer(module + "/lock")
	_, run := layer(module + "/run")
	assert.Less(t, lock, run, "lock is below run")
}

// TestRecordHasNoClient checks, over `go list -deps` of lock/record without
// its tests, that the record package reaches no Kubernetes client and no
// other package of the module but the base utilities: it is the format and
// the rules, which do no I/O (ADR 0150).
func TestRecordHasNoClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./lock/record").Output()
	require.NoError(t, err, "go list")
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "k8s.io/client-go/"), "lock/record depends on %s", dep)
		if strings.HasPrefix(dep, module+"/") && dep != module+"/lock/record" {
			assert.True(t, strings.HasPrefix(dep, module+"/internal/base/"), "lock/record depends on %s", dep)
		}
	}
}

// cliLogging are the CLI's own logging packages: what the CLI plumbing
// imports, outside the standard library, whose path names a log. Only
// the CLI may import them: below it, packages log to the standard
// library's *slog.Logger, which the CLI bridges to its own
// (CONTRIBUTING.md).
func cliLogging(t *testing.T) []string {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./cmd/internal/cli").Output()
	require.NoError(t, err, "go list")
	var logging []string
	for _, imp := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(imp, "/")
		if strings.Contains(first, ".") && !strings.HasPrefix(imp, module) && strings.Contains(imp, "log") {
			logging = append(logging, imp)
		}
	}
	return logging
}

// TestLibraryLogsThroughSlog checks, over `go list` of the module's
// packages without their tests, that nothing below the CLI (the library,
// the base utilities) imports the CLI's logging packages, so that no
// caller of the library is tied to the CLI's logger.
func TestLibraryLogsThroughSlog(t *testing.T) {
	logging := cliLogging(t)
	require.Len(t, logging, 2, "the CLI's logger and the one under it: %v", logging)
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	require.NoError(t, err, "go list")
	checked := 0
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := f[0]
		if l, _ := layer(pkg); l != layerLibrary && l != layerBase {
			continue
		}
		checked++
		for _, imp := range f[1:] {
			if slices.Contains(logging, imp) {
				t.Errorf("%s imports %s: a library package logs to the *slog.Logger in its Options (CONTRIBUTING.md)", pkg, imp)
			}
		}
	}
	assert.Greater(t, checked, 10, "the library's packages were listed")
}

// apiPackages are the library packages whose exported API other programs
// build on; no type of a package under internal/ may appear in it.
var apiPackages = []string{"lock", "job", "scheduler", "run", "podwatch"}

// TestNoInternalTypesInExportedAPI parses the exported declarations of the
// apiPackages and fails for every exported function or method signature,
// exported struct field, interface method or exported type that names a type
// of a package under internal/: a caller outside this module could not name
// such a type, and one inside it would depend on a layer it should not see.
func TestNoInternalTypesInExportedAPI(t *testing.T) {
	for _, dir := range apiPackages {
		for _, leak := range internalTypesIn(t, dir) {
			t.Error(leak)
		}
	}
}

// internalTypesIn lists, as "file:line: what uses pkg.Type", every use of a
// type from a package under internal/ in the exported API of the package in
// dir (test files excluded).
func internalTypesIn(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files, dir)
	pkg := filepath.Base(dir)
	var leaks []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err, name)
		internal := internalImports(f)
		if len(internal) == 0 {
			continue
		}
		check := func(what string, expr ast.Expr) {
			if expr == nil {
				return
			}
			ast.Inspect(expr, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok {
					if path, ok := internal[id.Name]; ok {
						leaks = append(leaks, fmt.Sprintf("%s: %s uses %s.%s (%s)", fset.Position(sel.Pos()), what, id.Name, sel.Sel.Name, path))
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				what := pkg + "." + d.Name.Name
				if d.Recv != nil {
					recv := receiverName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					what = pkg + "." + recv + "." + d.Name.Name
				}
				check(what, d.Type)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							checkType(pkg+"."+s.Name.Name, s, check)
						}
					case *ast.ValueSpec:
						for i, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							check(pkg+"."+n.Name, s.Type)
							if s.Type == nil && i < len(s.Values) {
								if lit, ok := s.Values[i].(*ast.CompositeLit); ok {
									check(pkg+"."+n.Name, lit.Type) // var V = pkg.T{…}
								}
							}
						}
					}
				}
			}
		}
	}
	return leaks
}

// checkType checks the exported parts of an exported type: a struct's
// exported (and embedded) fields, an interface's methods, or the whole
// underlying type otherwise.
func checkType(what string, s *ast.TypeSpec, check func(string, ast.Expr)) {
	if s.TypeParams != nil {
		for _, tp := range s.TypeParams.List {
			check(what+" type parameter", tp.Type)
		}
	}
	switch typ := s.Type.(type) {
	case *ast.StructType:
		for _, field := range typ.Fields.List {
			if len(field.Names) == 0 {
				check(what+" embedded field", field.Type)
			}
			for _, n := range field.Names {
				if n.IsExported() {
					check(what+"."+n.Name, field.Type)
				}
			}
		}
	case *ast.InterfaceType:
		for _, m := range typ.Methods.List {
			if len(m.Names) == 0 {
				check(what+" embedded interface", m.Type)
			}
			for _, n := range m.Names {
				check(what+"."+n.Name, m.Type)
			}
		}
	default:
		check(what, s.Type)
	}
}

// internalImports maps the names a file uses for its imports of packages
// under internal/ to their paths.
func internalImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.HasPrefix(path, module+"/internal/") {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		m[name] = path
	}
	return m
}

// receiverName is the name of a method's receiver type: T in (T), (*T),
// (T[K]) or (*T[K]).
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// TestInternalTypesInFindsLeaks checks the checker on a package made up
// for it: each kind of exported declaration that names an internal type is
// found, and unexported ones, and the body of an exported function, are not.
func TestInternalTypesInFindsLeaks(t *testing.T) {
	dir := t.TempDir()
	src := `package leaky

import (
	"context"

	"github.com/lockctl/lockctl/internal/base/clients"
	sch "github.com/lockctl/lockctl/internal/base/schema"
)

type Options struct {
	Client  clients.Interface
	version sch.Version
}

type Checker interface {
	Check(ctx context.Context) (*sch.Version, error)
}

type Versions map[string]sch.Version

var Current = sch.Version{Major: 1}

func New(c clients.Interface) error { return nil }

func (o *Options) Version() []sch.Version { return nil }

func (o *options) hidden() sch.Version { return sch.Version{} }

func Parse(s string) (string, error) {
	v, err := sch.Parse(s)
	return v.String(), err
}

type options struct{ v sch.Version }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "leaky.go"), []byte(src), 0o600))
	var got []string
	for _, leak := range internalTypesIn(t, dir) {
		got = append(got, leak[strings.Index(leak, ": ")+2:strings.Index(leak, " (")])
	}
	leaky := filepath.Base(dir)
	assert.Equal(t, []string{
		leaky + ".Options.Client uses clients.Interface",
		leaky + ".Checker.Check uses sch.Version",
		leaky + ".Versions uses sch.Version",
		leaky + ".Current uses sch.Version",
		leaky + ".New uses clients.Interface",
		leaky + ".Options.Version uses sch.Version",
	}, got)
}
