package printers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kprinters "k8s.io/cli-runtime/pkg/printers"
	"k8s.io/client-go/util/jsonpath"
)

// The -o forms that take an argument, as kubectl spells them:
// -o jsonpath=TEMPLATE, -o custom-columns=SPEC.
var argForms = []string{
	"jsonpath", "jsonpath-as-json", "jsonpath-file", "go-template", "go-template-file",
	"template", "templatefile", "custom-columns", "custom-columns-file",
}

// OutputFlags are a reading command's -o, --no-headers and --sort-by, as
// kubectl get has them. -o takes the forms of kubectl: json, yaml, name,
// wide (for a command with a wide table), jsonpath=…, jsonpath-as-json=…,
// jsonpath-file=…, go-template=…, go-template-file=…, template=…,
// templatefile=… and custom-columns=… or custom-columns-file=…. Templates
// and columns are parsed by Validate. docs/output.md has them.
type OutputFlags struct {
	// Output is -o as given; "" is the command's table.
	Output string
	// NoHeaders drops the header of tables (--no-headers).
	NoHeaders bool
	// SortBy is a JSONPath expression the items are sorted by (--sort-by);
	// "" keeps the command's own order.
	SortBy string

	// Forms are the forms the command prints beyond json, yaml, name and
	// templates.
	Forms

	format  string // the form, without its argument
	printer kprinters.ResourcePrinter
	columns []column
	sortBy  *jsonpath.JSONPath
}

// Validate parses -o and --sort-by, reading template and column files;
// its errors name the flag and the problem.
func (o *OutputFlags) Validate() error {
	o.format, o.printer, o.columns, o.sortBy = o.Output, nil, nil, nil
	arg := ""
	if i := strings.IndexByte(o.Output, '='); i >= 0 {
		o.format, arg = o.Output[:i], o.Output[i+1:]
	}
	switch o.format {
	case "", "json", "yaml", "name":
		if arg != "" || strings.HasSuffix(o.Output, "=") {
			return fmt.Errorf("invalid --output %q: %s takes no argument", o.Output, o.format)
		}
	case "wide":
		if !o.Wide {
			return fmt.Errorf("invalid --output %q: this command has no wide table; use %s", o.Output, o.allowed())
		}
	default:
		if !contains(argForms, o.format) || !o.Table && strings.HasPrefix(o.format, "custom-columns") {
			return fmt.Errorf("invalid --output %q: use %s", o.Output, o.allowed())
		}
		if arg == "" {
			return fmt.Errorf("invalid --output %q: %s needs an argument: -o %s=…", o.Output, o.format, o.format)
		}
		if err := o.parse(arg); err != nil {
			return fmt.Errorf("invalid --output %q: %w", o.Output, err)
		}
	}
	if o.SortBy != "" {
		expr, err := relaxedJSONPath(o.SortBy)
		if err == nil {
			o.sortBy = jsonpath.New("sort-by").AllowMissingKeys(true)
			err = o.sortBy.Parse(expr)
		}
		if err != nil {
			return fmt.Errorf("invalid --sort-by %q: %w; give a JSON path such as .metadata.name", o.SortBy, err)
		}
	}
	return nil
}

func (o *OutputFlags) allowed() string {
	forms := []string{"json", "yaml", "name"}
	if o.Wide {
		forms = append(forms, "wide")
	}
	forms = append(forms, "jsonpath=…", "jsonpath-file=…", "go-template=…", "go-template-file=…")
	if o.Table {
		forms = append(forms, "custom-columns=…", "custom-columns-file=…")
	}
	return strings.Join(forms, ", ")
}

// parse builds the printer of a form with an argument.
func (o *OutputFlags) parse(arg string) error {
	if strings.HasSuffix(o.format, "file") {
		data, err := os.ReadFile(arg)
		if err != nil {
			return fmt.Errorf("read %s: %w", o.format, err)
		}
		arg = string(data)
	}
	switch o.format {
	case "jsonpath", "jsonpath-as-json", "jsonpath-file":
		p, err := kprinters.NewJSONPathPrinter(arg)
		if err != nil {
			return err
		}
		// NOTE: as kubectl: a key an object lacks prints nothing.
		p.AllowMissingKeys(true)
		if o.format == "jsonpath-as-json" {
			p.EnableJSONOutput(true)
		}
		o.printer = p
	case "go-template", "go-template-file", "template", "templatefile":
		p, err := kprinters.NewGoTemplatePrinter([]byte(arg))
		if err != nil {
			return err
		}
		p.AllowMissingKeys(true)
		o.printer = p
	case "custom-columns", "custom-columns-file":
		cols, err := parseColumns(arg, o.format == "custom-columns-file")
		if err != nil {
			return err
		}
		o.columns = cols
	}
	return nil
}

// IsTable reports whether the form is a table: the command's own (-o
// wide too) or custom columns.
func (o *OutputFlags) IsTable() bool {
	return o.Output == "" || o.Output == "wide" || o.columns != nil
}

// IsName reports whether the form is -o name.
func (o *OutputFlags) IsName() bool { return o.format == "name" }

// IsWide reports whether the form is -o wide.
func (o *OutputFlags) IsWide() bool { return o.Output == "wide" }

// IsList reports whether PrintAll prints the items as one List object
// (json, yaml, templates) rather than one at a time (name, tables).
func (o *OutputFlags) IsList() bool {
	return !o.IsTable() && o.format != "name"
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// Printer prints objects of one kind in the form OutputFlags chose: its
// command's table (Header and Row), custom columns, names, JSON, YAML or a
// template. A table keeps its column widths from one print to the next,
// growing them as needed, so the rows of -w line up.
type Printer[T any] struct {
	// W is where the objects go.
	W io.Writer
	// Flags are the parsed output flags.
	Flags *OutputFlags
	// Header is the command's table header; wide says -o wide.
	Header func(wide bool) []string
	// Row is the command's table row of an object.
	Row func(obj T, wide bool) []string

	table   Table
	printed int // objects printed so far
}

// PrintAll prints items: as rows under one header (nothing, not even the
// header, for no items), names one a line, or (list set) as one List
// object, else one object each, as -w prints them. --sort-by orders the
// items first.
func (p *Printer[T]) PrintAll(items []T, list bool) error {
	if err := SortBy(items, p.Flags); err != nil {
		return err
	}
	if list && p.Flags.IsList() {
		p.printed++
		return p.object(ListOf(items))
	}
	if p.Flags.IsTable() {
		// NOTE: no rows, no header: under -w the first row brings it,
		// laid out to that row's widths, as kubectl get -w does.
		if len(items) == 0 {
			return nil
		}
		rows := make([][]string, 0, len(items))
		for _, it := range items {
			r, err := p.row(it)
			if err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return p.table.Print(p.W, p.header(), rows, p.Flags.NoHeaders)
	}
	for _, it := range items {
		if err := p.Print(it); err != nil {
			return err
		}
	}
	return nil
}

// Print prints one object: a table row (under the header the first
// time), its name or the object.
func (p *Printer[T]) Print(obj T) error {
	if p.Flags.IsTable() {
		r, err := p.row(obj)
		if err != nil {
			return err
		}
		return p.table.Print(p.W, p.header(), [][]string{r}, p.Flags.NoHeaders)
	}
	if p.printed > 0 && p.Flags.format == "yaml" {
		if _, err := fmt.Fprintln(p.W, "---"); err != nil {
			return err
		}
	}
	p.printed++
	return p.object(obj)
}

func (p *Printer[T]) header() []string {
	if p.Flags.columns != nil {
		h := make([]string, len(p.Flags.columns))
		for i, c := range p.Flags.columns {
			h[i] = c.header
		}
		return h
	}
	return p.Header(p.Flags.IsWide())
}

func (p *Printer[T]) row(obj T) ([]string, error) {
	if p.Flags.columns != nil {
		return columnsRow(p.Flags.columns, obj)
	}
	return p.Row(obj, p.Flags.IsWide()), nil
}

// object prints v in a form that is not a table.
func (p *Printer[T]) object(v any) error {
	return PrintObject(p.W, p.Flags, v)
}

// PrintObject prints v in a form of flags that is not a table: JSON or
// YAML as Object writes them, KIND/NAME, or through a template.
func PrintObject(w io.Writer, flags *OutputFlags, v any) error {
	switch flags.format {
	case "json", "yaml":
		return Object(w, flags.format, v)
	case "name":
		u, err := toUnstructured(v)
		if err != nil {
			return err
		}
		if u.IsList() {
			return fmt.Errorf("-o name prints objects, not lists")
		}
		// NOTE: kubectl prints KIND.GROUP/NAME; lockctl's kinds have one
		// group, left out, so job/NAME reads as lockctl's commands take it.
		u.SetAPIVersion(u.GroupVersionKind().Version)
		return (&kprinters.NamePrinter{}).PrintObj(u, w)
	}
	if flags.printer == nil {
		return fmt.Errorf("unknown output format %q", flags.Output)
	}
	u, err := toUnstructured(v)
	if err != nil {
		return err
	}
	return flags.printer.PrintObj(u, w)
}

// toUnstructured is v as its JSON form: an object (or, with items, a
// list) the templates read as kubectl's read the API server's.
func toUnstructured(v any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode json: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("-o with a template prints objects, not %T", v)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

var _ runtime.Object = (*unstructured.Unstructured)(nil)

// column is one column of -o custom-columns: its header and the JSONPath
// of its cells.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// parseColumns reads kubectl's custom-columns: HEADER:.json.path pairs,
// comma-separated, or (file) a line of headers over a line of paths.
func parseColumns(spec string, file bool) ([]column, error) {
	var headers, paths []string
	if file {
		lines := strings.Split(strings.TrimSpace(spec), "\n")
		if len(lines) != 2 {
			return nil, fmt.Errorf("a custom-columns file has two lines, headers over paths; this one has %d", len(lines))
		}
		headers, paths = strings.Fields(lines[0]), strings.Fields(lines[1])
		if len(headers) != len(paths) {
			return nil, fmt.Errorf("%d headers over %d paths", len(headers), len(paths))
		}
	} else {
		for _, part := range strings.Split(spec, ",") {
			h, p, ok := strings.Cut(part, ":")
			if !ok || h == "" || p == "" {
				return nil, fmt.Errorf("column %q is not HEADER:.json.path", part)
			}
			headers, paths = append(headers, h), append(paths, p)
		}
	}
	cols := make([]column, len(headers))
	for i := range headers {
		expr, err := relaxedJSONPath(paths[i])
		if err != nil {
			return nil, err
		}
		jp := jsonpath.New(headers[i]).AllowMissingKeys(true)
		if err := jp.Parse(expr); err != nil {
			return nil, fmt.Errorf("column %q: %w", headers[i], err)
		}
		cols[i] = column{header: headers[i], path: jp}
	}
	return cols, nil
}

// relaxedJSONPath takes a path as kubectl's --sort-by and custom-columns
// do: .a.b, a.b or {.a.b}.
func relaxedJSONPath(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", fmt.Errorf("empty JSONPath expression")
	}
	if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
		p = p[1 : len(p)-1]
	}
	if !strings.HasPrefix(p, ".") {
		p = "." + p
	}
	return "{" + p + "}", nil
}

// columnsRow is the cells of obj's custom columns: "<none>" where the
// path finds nothing, values comma-separated where it finds several.
func columnsRow(cols []column, obj any) ([]string, error) {
	u, err := toUnstructured(obj)
	if err != nil {
		return nil, err
	}
	row := make([]string, len(cols))
	for i, c := range cols {
		results, err := c.path.FindResults(u.Object)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.header, err)
		}
		var vals []string
		for _, r := range results {
			for _, v := range r {
				var b bytes.Buffer
				if err := c.path.PrintResults(&b, []reflect.Value{v}); err != nil {
					return nil, err
				}
				vals = append(vals, b.String())
			}
		}
		row[i] = "<none>"
		if len(vals) > 0 {
			row[i] = strings.Join(vals, ",")
		}
	}
	return row, nil
}

// SortByError is a --sort-by path that finds nothing in any of the
// items to sort, most likely a misspelt one: kubectl refuses it too. It
// is a usage error.
type SortByError struct {
	// Path is --sort-by as given.
	Path string
	// Items is how many items the path was looked for in.
	Items int
}

func (e *SortByError) Error() string {
	return fmt.Sprintf("--sort-by %q finds no field in any of the %d objects: give a path of the objects as -o json prints them, such as .metadata.name", e.Path, e.Items)
}

// SortBy sorts items by flags' --sort-by, as kubectl does: numbers by
// value, anything else by its text; an item the path finds nothing in
// comes first. Items keep their order among equals. A path that finds
// nothing in any item is a *SortByError.
func SortBy[T any](items []T, flags *OutputFlags) error {
	if flags.sortBy == nil || len(items) == 0 {
		return nil
	}
	keys := make([]any, len(items))
	found := false
	for i, it := range items {
		u, err := toUnstructured(it)
		if err != nil {
			return err
		}
		results, err := flags.sortBy.FindResults(u.Object)
		if err != nil {
			return fmt.Errorf("--sort-by %q: %w", flags.SortBy, err)
		}
		if len(results) > 0 && len(results[0]) > 0 {
			keys[i], found = results[0][0].Interface(), true
		}
	}
	if !found {
		return &SortByError{Path: flags.SortBy, Items: len(items)}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return lessKey(keys[idx[a]], keys[idx[b]]) })
	sorted := make([]T, len(items))
	for i, k := range idx {
		sorted[i] = items[k]
	}
	copy(items, sorted)
	return nil
}

func lessKey(a, b any) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	fa, aNum := a.(float64)
	fb, bNum := b.(float64)
	if aNum && bNum {
		return fa < fb
	}
	return fmt.Sprint(a) < fmt.Sprint(b)
}
