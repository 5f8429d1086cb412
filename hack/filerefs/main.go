// Command filerefs counts the references between the files of one Go
// package, for the figures of docs/adr/0150-lock-record-and-client.md: a
// reference is a file A using a top-level identifier (func, type, var,
// const) declared in another file B of the same package, counted once per
// pair (A, B). Test files are left out. It also counts the pairs that go
// against the grain, from A to a file B that itself depends on A (directly
// or through other files of the package), and the exported names and
// exported struct fields of the package.
//
//	go run ./hack/filerefs ./lock
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: filerefs ./pkg")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(dir string, out io.Writer) error {
	exports, err := exportData(dir)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p)
	})}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := conf.Check(dir, fset, files, info)
	if err != nil {
		return err
	}
	fileOf := func(pos token.Pos) string { return filepath.Base(fset.Position(pos).Filename) }
	refs := map[string]map[string]bool{}
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || obj.Parent() != pkg.Scope() {
			continue
		}
		from, to := fileOf(id.Pos()), fileOf(obj.Pos())
		if from == to {
			continue
		}
		if refs[from] == nil {
			refs[from] = map[string]bool{}
		}
		refs[from][to] = true
	}
	reaches := func(from, to string) bool {
		seen := map[string]bool{from: true}
		stack := []string{from}
		for len(stack) > 0 {
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for g := range refs[f] {
				if g == to {
					return true
				}
				if !seen[g] {
					seen[g] = true
					stack = append(stack, g)
				}
			}
		}
		return false
	}
	pairs, mutual, cyclic := 0, 0, 0
	for from, tos := range refs {
		for to := range tos {
			pairs++
			if refs[to][from] {
				mutual++
			}
			if reaches(to, from) {
				cyclic++
			}
		}
	}
	var exported, methods, fields int
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		exported++
		tn, ok := obj.(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for m := range named.Methods() {
			if m.Exported() {
				methods++
			}
		}
		if st, ok := named.Underlying().(*types.Struct); ok {
			for f := range st.Fields() {
				if f.Exported() {
					fields++
				}
			}
		}
	}
	fmt.Fprintf(out, "files\t%d\n", len(files))
	fmt.Fprintf(out, "references\t%d\n", pairs)
	fmt.Fprintf(out, "mutual\t%d\n", mutual)
	fmt.Fprintf(out, "against the grain\t%d\n", cyclic)
	fmt.Fprintf(out, "exported top-level names\t%d\n", exported)
	fmt.Fprintf(out, "exported methods\t%d\n", methods)
	fmt.Fprintf(out, "exported struct fields\t%d\n", fields)
	if os.Getenv("FILEREFS_VERBOSE") != "" {
		var lines []string
		for from, tos := range refs {
			for to := range tos {
				lines = append(lines, from+" -> "+to)
			}
		}
		slices.Sort(lines)
		fmt.Fprintln(out, strings.Join(lines, "\n"))
	}
	return nil
}

// exportData maps the import path of each dependency of the package in
// dir to its compiled export data, as go list builds it.
func exportData(dir string) (map[string]string, error) {
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		path, export, ok := strings.Cut(sc.Text(), " ")
		if ok && export != "" {
			m[path] = export
		}
	}
	return m, sc.Err()
}
