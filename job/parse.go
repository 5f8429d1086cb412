package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/base/lazy"
)

// MaxFileSize is the largest job file Parse accepts, in bytes: 1 MiB, the
// most a ConfigMap, which stores the job record, can hold. Callers reading
// a job file need not read more than MaxFileSize+1 bytes to know it is too
// large.
const MaxFileSize = 1 << 20

// Parse decodes a job document, YAML or JSON, strictly and validates it.
// Source names the document in errors ("job.yaml", "-" for stdin).
//
// Data larger than MaxFileSize returns a *TooLargeError; a document that is
// not well-formed, or a YAML stream with more than one non-empty document,
// returns a *SyntaxError with the line where known; unknown or duplicate
// fields, values of the wrong type and invalid values return one
// *ValidationError listing every field at fault. All match ErrInvalid. The
// returned job has its defaults applied.
func Parse(data []byte, source string) (*Job, error) {
	if len(data) > MaxFileSize {
		return nil, &TooLargeError{Source: source, Size: int64(len(data))}
	}
	raw, err := toJSON(data, source)
	if err != nil {
		return nil, err
	}
	j := &Job{}
	strict, err := kjson.UnmarshalStrict(raw, j)
	if err != nil {
		return nil, decodeError(err, source)
	}
	var errs field.ErrorList
	for _, se := range strict {
		errs = append(errs, strictFieldError(se))
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Source: source, Errors: errs}
	}
	Default(j)
	if err := Validate(j); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			ve.Source = source
		}
		return nil, err
	}
	return j, nil
}

// toJSON turns a YAML or JSON document into JSON, reporting syntax errors
// with their line.
func toJSON(data []byte, source string) ([]byte, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, &SyntaxError{Source: source, Msg: "empty document"}
	}
	raw, err := yaml.YAMLToJSONStrict(data)
	if trimmed[0] == '{' {
		// JSON, or a YAML flow mapping: JSON's syntax errors are the ones
		// to report when it is neither.
		var v any
		jerr := json.Unmarshal(data, &v)
		switch {
		case jerr == nil:
			return data, nil
		case err != nil:
			return nil, jsonSyntaxError(data, source, jerr)
		}
	}
	if err != nil {
		return nil, yamlSyntaxError(source, err)
	}
	// NOTE: the conversion above reads the first document only; count them
	// all, so a second job in the file is refused rather than dropped.
	docs, err := countDocuments(data)
	if err != nil {
		return nil, yamlSyntaxError(source, err)
	}
	empty := bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
	switch {
	case empty && docs == 0:
		return nil, &SyntaxError{Source: source, Msg: "empty document"}
	case empty:
		return nil, &SyntaxError{Source: source, Msg: "the first document is empty: put the job first, with no empty document before it"}
	case docs > 1:
		return nil, &SyntaxError{Source: source, Msg: fmt.Sprintf("job file holds %d documents; one job per file: put each job in a file of its own", docs)}
	}
	if raw[0] != '{' {
		return nil, &SyntaxError{Source: source, Line: 1, Msg: "a job document must be a mapping"}
	}
	return raw, nil
}

// countDocuments returns how many documents of the YAML stream in data are
// not empty. Comments, blank lines and the "---" of an empty document do
// not count. Aliases are not expanded.
func countDocuments(data []byte) (int, error) {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	n := 0
	for {
		var p docProbe
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if p.set {
			n++
		}
	}
}

// docProbe records whether a YAML document holds a value, without decoding
// it: the decoder does not call UnmarshalYAML for a null document.
type docProbe struct{ set bool }

func (p *docProbe) UnmarshalYAML(func(any) error) error {
	p.set = true
	return nil
}

func jsonSyntaxError(data []byte, source string, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return &SyntaxError{Source: source, Msg: err.Error()}
	}
	line, col := position(data, se.Offset)
	return &SyntaxError{Source: source, Line: line, Column: col, Msg: strings.TrimPrefix(se.Error(), "json: ")}
}

// position turns a byte offset into a 1-based line and column.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	before := data[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(offset) - bytes.LastIndexByte(before, '\n')
	if col > 1 {
		col-- // the offset is just past the offending byte
	}
	return line, col
}

// yamlLine finds the line in a YAML error; compiled on first use.
var yamlLine = lazy.Regexp{Expr: `line (\d+):\s*`}

func yamlSyntaxError(source string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := yamlLine.Get().FindStringSubmatchIndex(msg); m != nil {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
		msg = msg[:m[0]] + msg[m[1]:]
	}
	msg = strings.TrimPrefix(msg, "unmarshal errors: ")
	return &SyntaxError{Source: source, Line: line, Msg: msg}
}

// decodeError turns a JSON decoding error into a field error where it names
// a field (a value of the wrong type), else into a syntax error.
func decodeError(err error, source string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		detail := fmt.Sprintf("must be %s, not %s", typeName(te.Type.Kind().String()), te.Value)
		fe := field.Invalid(fieldPath(te.Field), field.OmitValueType{}, detail)
		return &ValidationError{Source: source, Errors: field.ErrorList{fe}}
	}
	return &SyntaxError{Source: source, Msg: strings.TrimPrefix(err.Error(), "json: ")}
}

func typeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case kind == "slice":
		return "a list"
	case kind == "struct", kind == "map", kind == "ptr":
		return "an object"
	}
	return "a " + kind
}

// strictFieldError reports an unknown or duplicate field at its path.
func strictFieldError(err error) *field.Error {
	msg := err.Error()
	var fe kjson.FieldError
	if !errors.As(err, &fe) {
		return field.Invalid(field.NewPath("document"), nil, msg)
	}
	path := fieldPath(fe.FieldPath())
	if strings.HasPrefix(msg, "duplicate field") {
		return field.Duplicate(path, fe.FieldPath())
	}
	return field.Forbidden(path, "unknown field")
}

// fieldPath turns a decoder path such as "spec.refs.pulls[0].number" into a
// field.Path that prints the same.
func fieldPath(p string) *field.Path {
	var path *field.Path
	for _, part := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if path == nil {
			path = field.NewPath(name)
		} else {
			path = path.Child(name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				path = path.Index(n)
			} else {
				path = path.Key(idx)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return path
}

// MarshalYAML renders a job as a Kubernetes-style YAML document.
func MarshalYAML(j *Job) ([]byte, error) {
	out, err := yaml.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("encode job %q: %w", j.Name, err)
	}
	return out, nil
}
