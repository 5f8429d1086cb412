package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/lock"
)

// nullLists returns where the JSON value v, encoded from a value of type
// typ, has null for a list: the page's script reads lists' lengths. A field
// left out (omitempty) is no null.
func nullLists(typ reflect.Type, v any, path string) []string {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if v == nil {
		if typ.Kind() == reflect.Slice {
			return []string{path}
		}
		return nil
	}
	if typ.Implements(reflect.TypeFor[json.Marshaler]()) || reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Marshaler]()) {
		if !strings.HasPrefix(typ.PkgPath(), "github.com/lockctl/lockctl/") {
			return nil // its own encoding: a time, a quantity
		}
	}
	var out []string
	switch typ.Kind() {
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		l, _ := v.([]any)
		for i, e := range l {
			out = append(out, nullLists(typ.Elem(), e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for k, e := range m {
			out = append(out, nullLists(typ.Elem(), e, path+"."+k)...)
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if f.Anonymous && name == "" {
				out = append(out, nullLists(f.Type, v, path)...)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if e, ok := m[name]; ok {
				out = append(out, nullLists(f.Type, e, path+"."+name)...)
			}
		}
	}
	return out
}

// assertNoNullLists fails for every list in data, the JSON of a typ,
// that is null.
func assertNoNullLists(t *testing.T, typ reflect.Type, data []byte, what string) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(data, &v), what)
	assert.Empty(t, nullLists(typ, v, "$"), "%s: lists that are null, not []:\n%s", what, data)
}

// TestEmptyListsAreLists: every list the page reads is [] when empty, in
// a snapshot and an update as encoded, and in /api/snapshot of a lock
// namespace where no lock was ever taken, with no windows and no jobs.
func TestEmptyListsAreLists(t *testing.T) {
	t.Parallel()
	for _, v := range []any{&dashboard.Snapshot{}, &dashboard.Update{}, &dashboard.JobEntry{}, &dashboard.Window{}} {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		assertNoNullLists(t, reflect.TypeOf(v), data, reflect.TypeOf(v).String())
	}

	s := start(t)
	s.await(t, "the first", func(*dashboard.Snapshot) bool { return true })
	resp, body := get(t, s.srv.URL+"/api/snapshot", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assertNoNullLists(t, reflect.TypeFor[dashboard.Snapshot](), []byte(body), "/api/snapshot of an empty namespace")
	assert.Contains(t, body, `"locks":[]`)

	held := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		_, _, err := locks.TryAcquire(t.Context(), holder("main", "1"))
		require.NoError(t, err)
	})
	held.await(t, "the lock", func(s *dashboard.Snapshot) bool { return len(s.Locks) == 1 })
	_, body = get(t, held.srv.URL+"/api/snapshot", nil)
	assertNoNullLists(t, reflect.TypeFor[dashboard.Snapshot](), []byte(body), "/api/snapshot of a lock held")
}
