package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Parse decodes a job document, YAML or JSON, strictly and validates it.
// Source names the document in errors ("job.yaml", "-" for stdin).
//
// A document that is not well-formed returns a *SyntaxError with the line;
// unknown or duplicate fields, values of the wrong type and invalid values
// return one *ValidationError listing every field at fault. Both match
// ErrInvalid. The returned job has its defaults applied.
func Parse(data []byte, source string) (*Job, error) {
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
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, &SyntaxError{Source: source, Msg: "empty document"}
	}
	if raw[0] != '{' {
		return nil, &SyntaxError{Source: source, Line: 1, Msg: "a job document must be a mapping"}
	}
	return raw, nil
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

var yamlLine = regexp.MustCompile(`line (\d+):\s*`)

func yamlSyntaxError(source string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.Join(strings.Fields(msg), " ")
	line := 0
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
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
