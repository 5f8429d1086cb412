package job

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds Parse arbitrary job documents. Parse must never panic,
// must report every bad document as an error matching ErrInvalid, and a
// job it accepts must parse again from its own YAML rendering (what submit
// stores and the reconciler reads back).
//
// The seed corpus is every job file in ../testdata plus
// testdata/fuzz/FuzzParse; run it longer with
//
//	go test ./job -run '^$' -fuzz '^FuzzParse$' -fuzztime 30s
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".json") {
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"{",
		"[]",
		"null",
		"kind: Job\napiVersion: lockctl.dev/v1alpha1\nmetadata: {name: a}\nspec: {job: a, type: periodic, podSpec: {containers: [{name: m, image: i}]}}\n",
		"a: &a [*a, *a]\n",
		"spec: {maxConcurrency: 1e400}\n",
		"metadata: {name: \"a\\u0000b\"}\n",
		strings.Repeat("[", 200) + strings.Repeat("]", 200),
		"---\nkind: Job\n---\n",
		"kind: Job\n---\nkind: Job\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := Parse(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %T %v, want an error matching ErrInvalid", data, err, err)
			}
			if err.Error() == "" {
				t.Fatalf("Parse(%q): empty error message", data)
			}
			return
		}
		out, err := MarshalYAML(j)
		if err != nil {
			t.Fatalf("MarshalYAML of the job parsed from %q: %v", data, err)
		}
		if _, err := Parse(out, "fuzz-again"); err != nil {
			t.Fatalf("Parse accepted %q but not its own rendering %q: %v", data, out, err)
		}
	})
}
