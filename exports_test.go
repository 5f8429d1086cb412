package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frontDoors are the library packages whose exports TestFrontDoor keeps to
// what the rest of the module uses (ADR 0095, ADR 0150).
var frontDoors = []string{"lock", "lock/record"}

// TestFrontDoor fails for every exported name of a package of frontDoors
// that no other package of the module needs: its top-level names (func,
// type, var, const), and the exported methods and struct fields of its
// types. A top-level name is needed when:
//
//   - the code of another package names it (pkg.Name). Tests are not
//     users: a name only tests of other packages reach (a test of cmd,
//     e2e or bench building a record) keeps the package's API wider than
//     its callers need. The package's own tests reach unexported names
//     through export_test.go;
//   - it is a type that a needed name shows in its exported API (the type
//     of an exported field, a parameter or result of a func or of an
//     exported method, the type of a var or const): a caller holds values
//     of it, so it keeps a name the caller can write;
//   - it is a constant of a needed type declared in the package: an enum's
//     values go with their type.
//
// A method or field of a needed type is needed when the code of another
// package selects that name (x.Name) or sets it in a composite literal
// (Name: v): without types, any value's member of that name counts. A
// field with a json tag is the wire format, which encoding/json reads and
// writes; a method that implements a standard interface (Error, String,
// Is, Unwrap, MarshalJSON …) is called through it.
//
// Everything else is the package's back room: unexport it.
func TestFrontDoor(t *testing.T) {
	for _, dir := range frontDoors {
		exported := exportedNames(t, dir)
		require.NotEmpty(t, exported.names, dir)
		used, selected := usedFromOutside(t, ".", module+"/"+dir, dir)
		for _, name := range exported.unneeded(used) {
			if frontDoorKept[dir+"."+name] != "" {
				continue
			}
			t.Errorf("%s.%s (%s) is exported but no other package's code needs it: unexport it (ADR 0095)",
				dir, name, exported.names[name].pos)
		}
		for _, name := range exported.unneededMembers(used, selected) {
			if frontDoorKept[dir+"."+name] != "" {
				continue
			}
			t.Errorf("%s.%s (%s) is exported but no other package's code needs it: unexport it (ADR 0095)",
				dir, name, exported.members[name].pos)
		}
	}
}

// frontDoorKept are names that no other package's code uses and that stay
// exported, each for the reason given.
var frontDoorKept = map[string]string{
	"lock.ErrNotHolder":                       "the sentinel callers match with errors.Is, as TokenError and NotHolderError say (STYLE 20)",
	"lock.Options.ConfirmAfter":               "a documented tuning of the client (ADR 0079); the integration tests shorten it",
	"lock.Options.LostPodGrace":               "a documented tuning of the client (lock's package doc); the integration tests shorten it",
	"lock.Options.WaiterTTL":                  "a documented tuning of the client (docs/lock-record.md); the integration and reliability tests shorten it",
	"lock.TokenError.HolderToken":             "a typed error's fields are what errors.As gives a caller; the message names it",
	"lock/record.RecordVersion":               "the format's version, which docs/lock-record.md names and a newer minor keeps",
	"lock/record.SummaryHolderAppsAnnotation": "one of the summary annotations enforced locks carry, read by GitOps integrations (docs/enforcement.md)",
	"lock/record.Estimate.Low":                "the range of a wait estimate, which the benchmarks measure against real waits (docs/benchmarks.md)",
	"lock/record.Estimate.High":               "the range of a wait estimate, which the benchmarks measure against real waits (docs/benchmarks.md)",
}

// TestFrontDoorKeptIsExported fails for an entry of frontDoorKept that
// names nothing its package exports any more.
func TestFrontDoorKeptIsExported(t *testing.T) {
	for key := range frontDoorKept {
		i := strings.LastIndex(key, "/")
		dir, name, _ := strings.Cut(key[i+1:], ".")
		dir = key[:i+1] + dir
		e := exportedNames(t, dir)
		_, top := e.names[name]
		_, member := e.members[name]
		assert.True(t, top || member, "%s: not exported by %s", key, dir)
	}
}

// interfaceMethods are methods called through a standard interface
// (error, fmt.Stringer, errors.Is/As/Unwrap, encoding/json, flag.Value).
var interfaceMethods = map[string]bool{
	"Error": true, "String": true, "Is": true, "As": true, "Unwrap": true,
	"MarshalJSON": true, "UnmarshalJSON": true, "Format": true, "GoString": true,
	"Set": true, "Type": true, "DeepCopyObject": true, "GetObjectKind": true,
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

// exports are the exported top-level names of one package, and the
// exported methods and struct fields of its types ("Type.Name").
type exports struct {
	names   map[string]declared
	members map[string]declared
	// wire are the members that are a struct field with a json tag.
	wire map[string]bool
}

// unneeded lists, sorted, the exported names that used does not name and
// the rule of TestFrontDoor does not keep.
func (e exports) unneeded(used map[string]bool) []string {
	keep := e.kept(used)
	var out []string
	for name := range e.names {
		if !keep[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// kept returns the top-level names the rule of TestFrontDoor keeps.
func (e exports) kept(used map[string]bool) map[string]bool {
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
	return keep
}

// unneededMembers lists, sorted, the exported methods and fields of kept
// types that no other package's code selects, that are not the wire format
// and that implement no standard interface.
func (e exports) unneededMembers(used, selected map[string]bool) []string {
	keep := e.kept(used)
	var out []string
	for key := range e.members {
		typ, name, _ := strings.Cut(key, ".")
		if keep[typ] && !selected[name] && !e.wire[key] && !interfaceMethods[name] {
			out = append(out, key)
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
	e := exports{names: map[string]declared{}, members: map[string]declared{}, wire: map[string]bool{}}
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
					if ast.IsExported(recv) {
						e.members[recv+"."+d.Name.Name] = declared{pos: fset.Position(d.Pos()).String()}
					}
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
							e.addFields(fset, s)
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

// addFields records the exported named fields of the struct type s, and
// which of them have a json tag.
func (e exports) addFields(fset *token.FileSet, s *ast.TypeSpec) {
	st, ok := s.Type.(*ast.StructType)
	if !ok {
		return
	}
	for _, field := range st.Fields.List {
		for _, n := range field.Names {
			if !n.IsExported() {
				continue
			}
			key := s.Name.Name + "." + n.Name
			e.members[key] = declared{pos: fset.Position(n.Pos()).String()}
			if field.Tag != nil {
				tag, _ := strconv.Unquote(field.Tag.Value)
				if j, ok := reflect.StructTag(tag).Lookup("json"); ok && j != "-" {
					e.wire[key] = true
				}
			}
		}
	}
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
// the code (test files excluded) outside the folder dir selects from the
// package path (pkg.Name), and every name that code outside dir selects
// from any value (x.Name) or sets in a composite literal (Name: v).
func usedFromOutside(t *testing.T, root, path, dir string) (used, selected map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	used, selected = map[string]bool{}, map[string]bool{}
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
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || filepath.Dir(p) == filepath.Clean(dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := importNames(f, path)
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := x.X.(*ast.Ident); ok && slices.Contains(names, id.Name) {
					used[x.Sel.Name] = true
				} else {
					selected[x.Sel.Name] = true
				}
			case *ast.KeyValueExpr:
				if id, ok := x.Key.(*ast.Ident); ok {
					selected[id.Name] = true
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	return used, selected
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
	Field Field `+"`json:\"field\"`"+`
	Extra int
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

var _ = d.Get().Kind
`)
	write("user/user_test.go", `package user

import "example.com/m/door"

var _ = door.Sentinel
`)
	e := exportedNames(t, filepath.Join(root, "door"))
	used, selected := usedFromOutside(t, root, "example.com/m/door", filepath.Join(root, "door"))
	assert.Equal(t, map[string]bool{"Get": true}, used, "a test is not a user")
	assert.Equal(t, []string{"Hidden", "Loose", "Sentinel", "Unused"}, e.unneeded(used))
	assert.Equal(t, []string{"Shown.N", "View.Extra", "View.Shown"}, e.unneededMembers(used, selected),
		"View.Kind is selected, View.Field is the wire format")
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
