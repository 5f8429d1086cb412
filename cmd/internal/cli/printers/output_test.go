package printers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func testLocks() []lock.LockView {
	mk := func(target, build string, token string) lock.LockView {
		return lock.LockView{
			TypeMeta:   metav1.TypeMeta{APIVersion: lock.APIVersion, Kind: "Lock"},
			ObjectMeta: metav1.ObjectMeta{Name: record.Name(target), Namespace: "ops"},
			Spec:       lock.LockViewSpec{Target: target},
			Status:     lock.LockViewStatus{State: lock.StateHeld, Token: token, Holder: &record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build}}},
		}
	}
	return []lock.LockView{mk("staging", "9", "200"), mk("prod", "10", "17"), mk("dev", "8", "3")}
}

func TestOutputForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cols := filepath.Join(dir, "cols")
	require.NoError(t, os.WriteFile(cols, []byte("TARGET   TOKEN\n.spec.target   {.status.token}\n"), 0o600))
	tests := []struct {
		name, output, sortBy string
		noHeaders            bool
		want                 string
	}{
		{name: "names", output: "name", want: "lock/lockctl-lock-staging\nlock/lockctl-lock-prod\nlock/lockctl-lock-dev\n"},
		{name: "jsonpath over the list", output: "jsonpath={.items[*].spec.target}", want: "staging prod dev"},
		{name: "go-template", output: `go-template={{range .items}}{{.status.holder.build}};{{end}}`, want: "9;10;8;"},
		{name: "custom columns, sorted as text", output: "custom-columns=T:spec.target,B:.status.holder.build", sortBy: "{.status.holder.build}",
			want: "T         B\nprod      10\ndev       8\nstaging   9\n"},
		{name: "custom columns file, sorted by target, no headers", output: "custom-columns-file=" + cols, sortBy: ".spec.target", noHeaders: true,
			want: "dev       3\nprod      17\nstaging   200\n"},
		{name: "missing paths", output: "custom-columns=T:.spec.target,X:.status.nothing",
			want: "T         X\nstaging   <none>\nprod      <none>\ndev       <none>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags, err := (&PrintFlags{Output: tt.output, NoHeaders: tt.noHeaders, SortBy: tt.sortBy, Forms: Forms{Wide: true, Table: true}}).ToPrinter()
			require.NoError(t, err, tt.output)
			var out bytes.Buffer
			p := NewLockPrinter(&out, flags, Options{})
			require.NoError(t, p.PrintAll(testLocks(), true))
			assert.Equal(t, tt.want, out.String(), tt.output)
		})
	}
}

func TestParseOutputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		output      string
		wide, table bool
		want        string
	}{
		{output: "wide", want: `invalid --output "wide": this command has no wide table`},
		{output: "custom-columns=A:.a", wide: true, want: `invalid --output "custom-columns=A:.a": use json, yaml, name, wide, jsonpath=`},
		{output: "json=x", table: true, want: "json takes no argument"},
		{output: "jsonpath=", table: true, want: "jsonpath needs an argument"},
		{output: "go-template={{.a", table: true, want: `invalid --output "go-template={{.a"`},
		{output: "custom-columns-file=/nonexistent", table: true, want: "read custom-columns-file"},
		{output: "custom-columns=A:.a,B", table: true, want: `column "B" is not HEADER:.json.path`},
		{output: "table", table: true, want: `invalid --output "table": use json, yaml, name, jsonpath=`},
	}
	for _, tt := range tests {
		_, err := (&PrintFlags{Output: tt.output, Forms: Forms{Wide: tt.wide, Table: tt.table}}).ToPrinter()
		require.Error(t, err, tt.output)
		assert.Contains(t, err.Error(), tt.want, tt.output)
	}
}

func TestSortByFindsNothing(t *testing.T) {
	t.Parallel()
	locks := testLocks()
	locks[1].Status.Holder = nil
	tests := []struct {
		name, sortBy string
		items        []lock.LockView
		want         string // the targets in order; "" for the error
	}{
		{name: "a misspelt path", sortBy: ".spec.targett", items: testLocks()},
		{name: "a path of one item", sortBy: ".spec.target", items: testLocks()[:1], want: "staging"},
		{name: "a path some items lack: they come first", sortBy: ".status.holder.build", items: locks, want: "prod,dev,staging"},
		{name: "a misspelt path of one item", sortBy: ".status.holdr", items: testLocks()[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			flags, err := (&PrintFlags{SortBy: tt.sortBy, Forms: Forms{Wide: true, Table: true}}).ToPrinter()
			require.NoError(t, err, "%s parses", tt.sortBy)
			items := append([]lock.LockView(nil), tt.items...)
			err = SortBy(items, flags)
			if tt.want == "" {
				var sortErr *SortByError
				require.ErrorAs(t, err, &sortErr, tt.sortBy)
				assert.Equal(t, fmt.Sprintf(`--sort-by %q finds no field in any of the %d objects: give a path of the objects as -o json prints them, such as .metadata.name`, tt.sortBy, len(items)), err.Error())
				return
			}
			require.NoError(t, err, tt.sortBy)
			var got []string
			for _, l := range items {
				got = append(got, l.Spec.Target)
			}
			assert.Equal(t, tt.want, strings.Join(got, ","), tt.sortBy)
		})
	}
}

// TestWatchFromNothing: -w over no objects prints no header until the
// first row, which comes under a header laid out to its widths.
func TestWatchFromNothing(t *testing.T) {
	t.Parallel()
	flags, err := (&PrintFlags{Forms: Forms{Wide: true, Table: true}}).ToPrinter()
	require.NoError(t, err)
	var out bytes.Buffer
	p := NewLockPrinter(&out, flags, Options{})
	require.NoError(t, p.PrintAll(nil, false))
	assert.Empty(t, out.String(), "no header over no rows")
	require.NoError(t, p.Print(testLocks()[0]))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 2, out.String())
	assert.Equal(t, strings.Index(lines[0], "HOLDER"), strings.Index(lines[1], "acme/web@main#9"), "the row lines up with its header:\n%s", out.String())
}
