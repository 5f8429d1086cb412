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
var libraryPackages = []string{"lock", "job", "scheduler", "run", "podwatch", "liveness", "servertime", "events", "preflight", "metrics", "kube", "enforce"}

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

	"github.com/lockctl/lockctl/internal/base/kubeclient"
	sch "github.com/lockctl/lockctl/internal/base/schema"
)

type Options struct {
	Client  kubeclient.Interface
	version sch.Version
}

type Checker interface {
	Check(ctx context.Context) (*sch.Version, error)
}

type Versions map[string]sch.Version

var Current = sch.Version{Major: 1}

func New(c kubeclient.Interface) error { return nil }

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
		leaky + ".Options.Client uses kubeclient.Interface",
		leaky + ".Checker.Check uses sch.Version",
		leaky + ".Versions uses sch.Version",
		leaky + ".Current uses sch.Version",
		leaky + ".New uses kubeclient.Interface",
		leaky + ".Options.Version uses sch.Version",
	}, got)
}
