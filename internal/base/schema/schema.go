// Package schema versions the JSON records lockctl keeps in ConfigMaps (lock
// records, job records), so that lockctl releases of one major version share
// them: a reader accepts any minor version of its major version, keeps the
// fields it does not know and writes them back unchanged, and refuses a
// record of another major version naming both versions.
//
// A version is "MAJOR.MINOR". A minor version only adds optional fields whose
// meaning survives an older writer that keeps them unchanged while it changes
// the rest; anything else needs a new major version.
package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/base/lazy"
)

// Version is a record schema version.
type Version struct {
	Major, Minor int
}

// String renders the version as "MAJOR.MINOR".
func (v Version) String() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// Less reports whether v is older than o.
func (v Version) Less(o Version) bool {
	return v.Major < o.Major || (v.Major == o.Major && v.Minor < o.Minor)
}

// Parse reads "MAJOR.MINOR" (or "MAJOR", meaning minor 0).
func Parse(s string) (Version, error) {
	maj, min, hasMinor := strings.Cut(s, ".")
	v := Version{}
	var err error
	if v.Major, err = number(maj); err != nil {
		return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR", s)
	}
	if hasMinor {
		if v.Minor, err = number(min); err != nil {
			return Version{}, fmt.Errorf("version %q is not MAJOR.MINOR", s)
		}
	}
	return v, nil
}

// MustParse is Parse for a version written in the code, such as a package's
// record version constant; it panics on a malformed one.
func MustParse(s string) Version {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func number(s string) (int, error) {
	if s == "" || len(s) > 9 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, strconv.ErrSyntax
	}
	return strconv.Atoi(s)
}

// Peek returns the string field "version" of the JSON object raw, "" when it
// has none. It fails only when the field is there and not a string.
func Peek(raw []byte) (string, error) {
	var doc struct {
		Version json.RawMessage `json:"version"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Version == nil || string(doc.Version) == "null" {
		return "", nil // the full decode reports a broken document
	}
	var s string
	if err := json.Unmarshal(doc.Version, &s); err != nil {
		return "", fmt.Errorf("%s is not a string", doc.Version)
	}
	return s, nil
}

// Fields returns the JSON names of the fields of the struct v points to or
// holds, including those of embedded structs, as encoding/json sees them.
func Fields(v any) map[string]bool {
	out := map[string]bool{}
	addFields(reflect.TypeOf(v), out)
	return out
}

// FieldSet is Fields of the struct type T, found by reflection on the
// first Get: a package-level FieldSet needs no package init
// (docs/adr/0100). The zero FieldSet is ready to use.
type FieldSet[T any] struct{ v lazy.Value[map[string]bool] }

// Get returns the JSON names of T's fields.
func (f *FieldSet[T]) Get() map[string]bool {
	return f.v.Get(func() map[string]bool {
		var zero T
		return Fields(zero)
	})
}

func addFields(t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			addFields(f.Type, out)
		case !f.IsExported():
		case name == "":
			out[f.Name] = true
		default:
			out[name] = true
		}
	}
}

// Unknown returns the members of the JSON object raw that are not among
// known. encoding/json matches names without regard to case, so a member
// that matches a known name that way is known too. It returns nil when there
// are none.
func Unknown(raw []byte, known map[string]bool) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	for k, v := range all {
		if isKnown(k, known) {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[k] = v
	}
	return out, nil
}

func isKnown(k string, known map[string]bool) bool {
	if known[k] {
		return true
	}
	for name := range known {
		if strings.EqualFold(name, k) {
			return true
		}
	}
	return false
}

// DecodeKeeping decodes the JSON object raw into v, a pointer to a struct
// type without a decoder of its own (a `type plain T` of the caller's type
// T), and returns the members of raw that known, v's fields, do not name
// (Unknown): what T.UnmarshalJSON keeps to write back.
func DecodeKeeping(raw []byte, v any, known map[string]bool) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, err
	}
	return Unknown(raw, known)
}

// EncodeKeeping encodes v, a struct without an encoder of its own, with
// the members of unknown added (Merge): T.MarshalJSON of a T that kept
// what it did not know (DecodeKeeping).
func EncodeKeeping(v any, unknown map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Merge(b, unknown)
}

// Merge adds the members of unknown to the JSON object encoded, which
// holds the known fields. Known fields win over unknown ones of the same name.
func Merge(encoded []byte, unknown map[string]json.RawMessage) ([]byte, error) {
	if len(unknown) == 0 {
		return encoded, nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &all); err != nil {
		return nil, err
	}
	for k, v := range unknown {
		if _, ok := all[k]; !ok {
			all[k] = v
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(all); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
