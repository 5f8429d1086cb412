package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frontDoors are the library packages whose exports TestFrontDoor keeps to
// what the rest of the module uses (ADR 0095).
var frontDoors = []string{"lock"}

// TestFrontDoor fails for every top-level name (func, type, var, const;
// methods and struct fields are out of scope) that a package of frontDoors
// exports and no other package of the module needs. A name is needed when:
//
//   - another package names it (pkg.Name), in its code or in its tests:
//     a test of cmd, e2e or bench that builds a record or compares an
//     outcome is a user of the API as much as the code is. The package's
//     own tests, in-package or external (package lock_test), are not
//     users: they reach unexported names through export_test.go;
//   - it is a type that a needed name shows in its exported API (the type
//     of an exported field, a parameter or result of a func or of an
//     exported method, the type of a var or const): a caller holds values
//     of it, so it keeps a name the caller can write;
//   - it is a constant of a needed type declared in the package: an enum's
//     values go with their type.
//
// Everything else is the package's back room: unexport it.
func TestFrontDoor(t *testing.T) {
	for _, dir := range frontDoors {
		exported := exportedNames(t, dir)
		require.NotEmpty(t, exported.names, dir)
		used := usedFromOutside(t, ".", module+"/"+dir, dir)
		for _, name := range exported.unneeded(used) {
			t.Errorf("%s.%s (%s) is exported but no other package needs it: unexport it (ADR 0095)",
				dir, name, exported.names[name].pos)
		}
	}
}

// declared is one exported top-level name of a package.
type declared struct {
	pos string
	// shows are the names of the package's own types that this name's
	// exported API shows.
	shows []string
	// typ is, for a constant, the name of its declared type ("" if
	// untyped or not a type of the package).
	typ string
}

// exports are the exported top-level names of one package.
type exports struct {
	names map[string]declared
}

// unneeded lists, sorted, the exported names that used does not name and
// the rule of TestFrontDoor does not keep.
func (e exports) unneeded(used map[string]bool) []string {
	keep := map[string]bool{}
	var add func(string)
	add = func(name string) {
		d, ok := e.names[name]
		if !ok || keep[name] {
			return
		}
		keep[name] = true
		for _, s := range d.shows {
			add(s)
		}
	}
	for name := range used {
		add(name)
	}
	for changed := true; changed; {
		changed = false
		for name, d := range e.names {
			if !keep[name] && d.typ != "" && keep[d.typ] {
				add(name)
				changed = true
			}
		}
	}
	var out []string
	for name := range e.names {
		if !keep[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// exportedNames parses the package in dir (test files excluded) and
// returns its exported top-level names, with the package's types their
// exported API shows.
func exportedNames(t *testing.T, dir string) exports {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	e := exports{names: map[string]declared{}}
	methods := map[string][]string{} // receiver type → types its exported methods show
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err, name)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := receiverName(d.Recv.List[0].Type)
					methods[recv] = append(methods[recv], localIdents(d.Type)...)
					continue
				}
				e.names[d.Name.Name] = declared{pos: fset.Position(d.Pos()).String(), shows: localIdents(d.Type)}
			case *ast.GenDecl:
				var groupType ast.Expr // a const group repeats its last type
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							e.names[s.Name.Name] = declared{pos: fset.Position(s.Pos()).String(), shows: exportedAPI(s)}
						}
					case *ast.ValueSpec:
						if s.Type != nil || len(s.Values) > 0 {
							groupType = s.Type
						}
						for _, n := range s.Names {
							if !n.IsExported() {
								continue
							}
							dcl := declared{pos: fset.Position(n.Pos()).String(), shows: localIdents(s.Type)}
							if id, ok := groupType.(*ast.Ident); ok && d.Tok == token.CONST {
								dcl.typ = id.Name
							}
							e.names[n.Name] = dcl
						}
					}
				}
			}
		}
	}
	for recv, shows := range methods {
		if d, ok := e.names[recv]; ok {
			d.shows = append(d.shows, shows...)
			e.names[recv] = d
		}
	}
	return e
}

// exportedAPI lists the identifiers an exported type shows: its exported
// and embedded fields' types, its interface methods, or its whole
// underlying type.
func exportedAPI(s *ast.TypeSpec) []string {
	var out []string
	switch typ := s.Type.(type) {
	case *ast.StructType:
		for _, field := range typ.Fields.List {
			if len(field.Names) == 0 || slices.ContainsFunc(field.Names, (*ast.Ident).IsExported) {
				out = append(out, localIdents(field.Type)...)
			}
		}
	default:
		out = localIdents(s.Type)
	}
	return out
}

// localIdents lists the unqualified identifiers in expr (a type): the
// package's own names, and predeclared ones that match none of them.
func localIdents(expr ast.Expr) []string {
	if expr == nil {
		return nil
	}
	var out []string
	ast.Inspect(expr, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			return false // another package's name
		case *ast.Ident:
			out = append(out, x.Name)
		}
		return true
	})
	return out
}

// usedFromOutside walks the module at root and returns the names that
// files outside the folder dir select from the package path (pkg.Name),
// test files included.
func usedFromOutside(t *testing.T, root, path, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	used := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || filepath.Dir(p) == filepath.Clean(dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		names := importNames(f, path)
		if len(names) == 0 {
			return nil
		}
		f, err = parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && slices.Contains(names, id.Name) {
					used[sel.Sel.Name] = true
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	return used
}

// importNames lists the names under which f imports path.
func importNames(f *ast.File, path string) []string {
	var out []string
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != path {
			continue
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		out = append(out, name)
	}
	return out
}

// TestFrontDoorRule checks the rule on a package made up for it.
func TestFrontDoorRule(t *testing.T) {
	root := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(src), 0o600))
	}
	write("door/door.go", `package door

type Kind int

const (
	KindA Kind = iota
	KindB
)

const Loose = 3

type Shown struct{ N int }

type Hidden struct{ S Shown }

type Field struct{ n int }

type View struct {
	Kind  Kind
	Field Field
	inner Hidden
}

func (v View) Shown() *Shown { return nil }

func Get() View { return View{} }

func Unused() {}

var Sentinel = 1
`)
	write("door/door_test.go", `package door_test

import "example.com/m/door"

var _ = door.Unused
`)
	write("user/user.go", `package user

import d "example.com/m/door"

var _ = d.Get
`)
	write("user/user_test.go", `package user

import "example.com/m/door"

var _ = door.Sentinel
`)
	e := exportedNames(t, filepath.Join(root, "door"))
	used := usedFromOutside(t, root, "example.com/m/door", filepath.Join(root, "door"))
	assert.Equal(t, map[string]bool{"Get": true, "Sentinel": true}, used)
	assert.Equal(t, []string{"Hidden", "Loose", "Unused"}, e.unneeded(used))
}

// TestLockStoresTheLedgerUnread: lock keeps lockctl run's account of run
// jobs in its records through one hook (lock.Ledger) without reading it,
// so its code imports neither run nor the account's package; only its
// tests use runjobs, to drive the hook as run does (ADR 0095).
func TestLockStoresTheLedgerUnread(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("lock", "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		require.NoError(t, err, name)
		for _, p := range []string{module + "/run", module + "/runjobs"} {
			assert.Empty(t, importNames(f, p), "%s imports %s", name, p)
		}
	}
}
