package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
)

// TestIntegrationCLIStatusOutput reads locks as a script would: a Lock
// object for a free lock and a held one, the fencing token acquire printed
// in every form of status and in acquire -o, RFC 3339 times, and status -A
// across two lock namespaces.
func TestIntegrationCLIStatusOutput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)

	o := c.run(t, "status", "staging", "-o", "json")
	require.Equal(t, 0, o.code, o.stderr)
	free := decodeLock(t, o.stdout, json.Unmarshal)
	assert.Equal(t, "Lock", free.Kind, "a free lock is a Lock, not a List")
	assert.Equal(t, lock.StateFree, free.Status.State)
	assert.Equal(t, "staging", free.Spec.Target)
	assert.Nil(t, free.Status.Holder)
	assert.Contains(t, o.stderr, `lock "staging" is free`)

	o = c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	token := strings.TrimSpace(o.stdout)
	require.Regexp(t, `^\d+$`, token, "acquire prints the bare token by default")

	for _, format := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"json", json.Unmarshal}, {"yaml", func(b []byte, v any) error { return yaml.Unmarshal(b, v) }}} {
		o = c.run(t, "status", "staging", "-o", format.name)
		require.Equal(t, 0, o.code, o.stderr)
		held := decodeLock(t, o.stdout, format.decode)
		assert.Equal(t, lock.StateHeld, held.Status.State, format.name)
		assert.Equal(t, token, held.Status.Token, "%s: the token acquire printed", format.name)
		require.NotNil(t, held.Status.Holder, format.name)
		assert.Equal(t, "acme/web@main#1", held.Status.Holder.Identity.String(), format.name)
		assert.False(t, held.CreationTimestamp.IsZero(), format.name)
		assertRFC3339(t, o.stdout, format.name)
	}
	o = c.run(t, "status")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^staging\s+acme/web@main#1\s+`+token+`\s`, o.stdout, "the table has the token")

	o = c.run(t, append([]string{"acquire", "staging", "-o", "yaml"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	again := decodeLock(t, o.stdout, func(b []byte, v any) error { return yaml.Unmarshal(b, v) })
	assert.Equal(t, token, again.Status.Token, "acquire -o yaml of a lock already held: the same token")

	// A second lock namespace: -A shows both, with their namespaces.
	other := testenv.Get(t).Namespace(t)
	o = c.run(t, append([]string{"acquire", "prod", "--lock-namespace", other}, id("api", 2)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	prodToken := strings.TrimSpace(o.stdout)
	o = c.run(t, "status", "-A")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `(?m)^NAMESPACE\s+TARGET\s+HOLDER\s+TOKEN\s`, o.stdout)
	assert.Regexp(t, `(?m)^`+c.namespace+`\s+staging\s+acme/web@main#1\s+`+token+`\s`, o.stdout)
	assert.Regexp(t, `(?m)^`+other+`\s+prod\s+acme/api@main#2\s+`+prodToken+`\s`, o.stdout)
	o = c.run(t, "status", "-A", "-o", "json")
	require.Equal(t, 0, o.code, o.stderr)
	var list struct {
		Kind  string          `json:"kind"`
		Items []lock.LockView `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &list), o.stdout)
	found := map[string]string{}
	for _, l := range list.Items {
		found[l.Namespace+"/"+l.Spec.Target] = l.Status.Token
	}
	assert.Equal(t, token, found[c.namespace+"/staging"], "items: %v", found)
	assert.Equal(t, prodToken, found[other+"/prod"], "items: %v", found)

	o = c.run(t, "status", "staging", "-A")
	assert.Equal(t, 2, o.code, "a name with -A is a usage error")

	// kubectl's forms, as docs/output.md shows them, and a misspelt
	// --sort-by: one error line, exit 2, nothing printed.
	o = c.run(t, append([]string{"acquire", "dev"}, id("web", 3)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	o = c.run(t, "status", "-o", "custom-columns=TARGET:.spec.target,HOLDER:.status.holder.build", "--sort-by=.spec.target", "--no-headers")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `^dev\s+3\nstaging\s+1\n$`, o.stdout, "sorted by target, no header")
	o = c.run(t, "status", "--sort-by=.spec.targett")
	assert.Equal(t, 2, o.code, "a --sort-by that finds nothing is a usage error")
	assert.Empty(t, o.stdout)
	assert.Regexp(t, `^\d\d:\d\d:\d\d error: --sort-by ".spec.targett" finds no field in any of the 2 objects: .*\n\d\d:\d\d:\d\d Run 'lockctl status --help' for usage.\n$`, o.stderr)
}

func decodeLock(t *testing.T, out string, decode func([]byte, any) error) lock.LockView {
	t.Helper()
	var l lock.LockView
	require.NoError(t, decode([]byte(out), &l), "output: %s", out)
	return l
}

// assertRFC3339 checks that every time field in a printed Lock parses as
// RFC 3339.
func assertRFC3339(t *testing.T, out, what string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		for _, key := range []string{"creationTimestamp", "since", "expires"} {
			_, v, ok := strings.Cut(strings.TrimSpace(line), `"`+key+`": `)
			if !ok {
				_, v, ok = strings.Cut(strings.TrimSpace(line), key+": ")
			}
			if !ok {
				continue
			}
			v = strings.Trim(strings.TrimSuffix(v, ","), `"`)
			_, err := time.Parse(time.RFC3339, v)
			assert.NoError(t, err, "%s: %s is RFC 3339", what, key)
			n++
		}
	}
	assert.GreaterOrEqual(t, n, 3, "%s: creationTimestamp, since and expires are printed", what)
}
