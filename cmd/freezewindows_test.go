package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/lock/record"
)

// windowsConfigMap is a freeze windows ConfigMap of the default namespace
// holding data, as written by hand.
func windowsConfigMap(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: "default"},
		Data:       map[string]string{record.FreezeWindowsKey: data},
	}
}

// brokenWindows has one good window and one whose duration is a typo.
const brokenWindows = `windows:
- {name: friday, schedule: "0 14 * * FRI", duration: 10h, reason: no deploys on Friday afternoon}
- {name: nightly, schedule: "0 22 * * *", duration: 8 hours, reason: nightly maintenance, targets: [production]}
`

func TestNewFreezeWindowsAddCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    freezeWindowsAddOptions
		wantErr string
	}{
		{
			name: "every flag", args: []string{"nightly", "--schedule", "0 22 * * *", "--duration", "8h", "--reason", "nightly", "--target", "production", "--target", "staging"},
			want: freezeWindowsAddOptions{Name: "nightly", WindowFlags: cli.WindowFlags{Schedule: "0 22 * * *", Duration: 8 * time.Hour, Reason: "nightly", Targets: []string{"production", "staging"}}},
		},
		{
			name: "every lock, in another lock namespace", args: []string{"friday", "--schedule", "@weekly", "--duration", "90m", "--reason", "r", "--lock-namespace", "locks"},
			want: freezeWindowsAddOptions{Name: "friday", WindowFlags: cli.WindowFlags{Schedule: "@weekly", Duration: 90 * time.Minute, Reason: "r"}, LockFlags: cli.LockFlags{LockNamespace: "locks"}},
		},
		{name: "no name", args: []string{"--schedule", "@daily", "--duration", "1h", "--reason", "r"}, wantErr: "accepts 1 arg"},
		{name: "no schedule", args: []string{"a", "--duration", "1h", "--reason", "r"}, wantErr: "--schedule is required"},
		{name: "bad schedule", args: []string{"a", "--schedule", "22:00", "--duration", "1h", "--reason", "r"}, wantErr: `invalid --schedule "22:00": expected exactly 5 fields, found 1: [22:00]; want a five-field cron schedule such as "0 22 * * *", or @daily`},
		{name: "no duration", args: []string{"a", "--schedule", "@daily", "--reason", "r"}, wantErr: `invalid --duration "0s": want a positive duration such as 8h or 90m`},
		{name: "no reason", args: []string{"a", "--schedule", "@daily", "--duration", "1h"}, wantErr: "--reason is required"},
		{name: "empty target", args: []string{"a", "--schedule", "@daily", "--duration", "1h", "--reason", "r", "--target", ""}, wantErr: `invalid --target [""]: empty target`},
		{
			name: "a target that is not a namespace name", args: []string{"a", "--schedule", "@daily", "--duration", "1h", "--reason", "r", "--target", "staging", "--target", "Production"},
			wantErr: `invalid --target "Production": not a namespace name (a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', ` +
				`and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')); the window would freeze nothing`,
		},
		{
			name: "a schedule that never fires", args: []string{"a", "--schedule", "0 0 30 2 *", "--duration", "1h", "--reason", "r"},
			wantErr: `invalid --schedule "0 0 30 2 *": it never fires within a year, so the window never freezes anything; check the day of the month and the month; add it anyway with --force`,
		},
		{
			name: "a window in force all of the time", args: []string{"a", "--schedule", "* * * * *", "--duration", "24h", "--reason", "r"},
			wantErr: `invalid --schedule "* * * * *": each freeze (24h0m long) starts before the one before has ended: the namespace would be frozen all the time; ` +
				`use lockctl freeze for a freeze until further notice; add it anyway with --force`,
		},
		{
			name: "hourly freezes of an hour", args: []string{"a", "--schedule", "@hourly", "--duration", "1h", "--reason", "r"},
			wantErr: `invalid --schedule "@hourly": each freeze (1h0m long) starts`,
		},
		{
			name: "forced", args: []string{"a", "--schedule", "0 0 30 2 *", "--duration", "1h", "--reason", "r", "--force"},
			want: freezeWindowsAddOptions{Name: "a", WindowFlags: cli.WindowFlags{Schedule: "0 0 30 2 *", Duration: time.Hour, Reason: "r", Force: true}},
		},
		{
			name: "a target forced is still refused", args: []string{"a", "--schedule", "@daily", "--duration", "1h", "--reason", "r", "--target", "Production", "--force"},
			wantErr: `invalid --target "Production": not a namespace name`,
		},
		{
			name: "nights leave days free", args: []string{"a", "--schedule", "0 22 * * *", "--duration", "23h59m", "--reason", "r"},
			want: freezeWindowsAddOptions{Name: "a", WindowFlags: cli.WindowFlags{Schedule: "0 22 * * *", Duration: 23*time.Hour + 59*time.Minute, Reason: "r"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"freeze-windows", "add"}, tt.args, newFreezeWindowsAddCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *freezeWindowsAddOptions) { o.f = nil })
		})
	}
}

func TestNewFreezeWindowsListCmd(t *testing.T) {
	t.Parallel()
	got, err := parseArgs(t, []string{"freeze-windows", "list"}, []string{"-o", "yaml"}, newFreezeWindowsListCmd)
	assertParsed(t, got, err, "", freezeWindowsListOptions{Output: "yaml"}, func(o *freezeWindowsListOptions) { o.f = nil })
	got, err = parseArgs(t, []string{"freeze-windows", "list"}, []string{"-o", "wide"}, newFreezeWindowsListCmd)
	assertParsed(t, got, err, `invalid argument "wide" for "-o, --output" flag`, freezeWindowsListOptions{}, nil)
}

func TestNewFreezeWindowsRemoveCmd(t *testing.T) {
	t.Parallel()
	got, err := parseArgs(t, []string{"freeze-windows", "remove"}, []string{"nightly"}, newFreezeWindowsRemoveCmd)
	assertParsed(t, got, err, "", freezeWindowsRemoveOptions{Name: "nightly"}, func(o *freezeWindowsRemoveOptions) { o.f = nil })
	got, err = parseArgs(t, []string{"freeze-windows", "remove"}, nil, newFreezeWindowsRemoveCmd)
	assertParsed(t, got, err, "accepts 1 arg", freezeWindowsRemoveOptions{}, nil)
}

// TestRunFreezeWindows: add writes a window a lockctl reads back, list
// shows it with its next freeze, a name used twice is refused, remove
// takes a broken entry away (and only it), and a name that is not there
// is an error.
func TestRunFreezeWindows(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("freeze-windows", "add", "nightly", "--schedule", "0 22 * * *", "--duration", "8h", "--reason", "nightly maintenance", "--target", "production"))
	assert.Equal(t, "10:00:00 freeze window \"nightly\" added to configmap default/lockctl-freeze-windows: 0 22 * * * for 8h0m0s, production\n", te.errOut.String())
	cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.FreezeWindowsName, metav1.GetOptions{})
	require.NoError(t, err)
	ws, err := record.ParseFreezeWindows([]byte(cm.Data[record.FreezeWindowsKey]))
	require.NoError(t, err, "what add writes reads back")
	require.Len(t, ws, 1)
	assert.Equal(t, "nightly", ws[0].Name)

	te.out.Reset()
	te.errOut.Reset()
	require.NoError(t, te.run("freeze-windows", "list"))
	assert.Equal(t, "NAME      SCHEDULE     DURATION   TARGETS      STATE                       REASON\n"+
		"nightly   0 22 * * *   8h0m0s     production   next 2026-12-02T22:00:00Z   nightly maintenance\n", te.out.String())
	assert.Empty(t, te.errOut.String())

	err = te.run("freeze-windows", "add", "nightly", "--schedule", "@daily", "--duration", "1h", "--reason", "again")
	require.Error(t, err)
	assert.Equal(t, `freeze window "nightly" already exists in configmap default/lockctl-freeze-windows`, err.Error())
	assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))

	err = te.run("freeze-windows", "remove", "weekly")
	require.Error(t, err)
	assert.Equal(t, `no freeze window "weekly" in configmap default/lockctl-freeze-windows`, err.Error())
}

// TestRunFreezeWindowsAddRefused: a window that cannot freeze what it
// means to is refused with exit 2, one line saying why, and nothing
// written.
func TestRunFreezeWindowsAddRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "a target that is not a namespace name", args: []string{"--schedule", "@daily", "--duration", "1h", "--target", "Production"}, want: `invalid --target "Production": not a namespace name`},
		{name: "never fires", args: []string{"--schedule", "0 0 30 2 *", "--duration", "1h"}, want: `it never fires within a year`},
		{name: "always on", args: []string{"--schedule", "* * * * *", "--duration", "24h"}, want: `the namespace would be frozen all the time`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			err := te.run(append([]string{"freeze-windows", "add", "w", "--reason", "r"}, tt.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "\n", "one line")
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit 2")
			_, err = te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.FreezeWindowsName, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "nothing written: %v", err)
		})
	}
}

func TestRunFreezeWindowsBroken(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t, windowsConfigMap(brokenWindows))
	require.NoError(t, te.run("freeze-windows", "list", "-o", "json"))
	assert.Contains(t, te.out.String(), `"invalid": "window 2 (\"nightly\"): duration \"8 hours\": want a positive duration such as 8h or 90m"`)
	assert.Contains(t, te.out.String(), `"name": "friday"`)
	assert.Equal(t, "10:00:00 warning: 1 of the freeze windows in configmap default/lockctl-freeze-windows cannot be read: "+
		"acquire and release refuse the locks of namespace \"default\" until they are fixed or removed\n", te.errOut.String())

	te.out.Reset()
	require.NoError(t, te.run("freeze-windows", "list"))
	assert.Contains(t, te.out.String(), `nightly   0 22 * * *     -          production   invalid: window 2 ("nightly"): duration "8 hours": want a positive duration such as 8h or 90m   nightly maintenance`)

	require.NoError(t, te.run("freeze-windows", "remove", "nightly"))
	cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.FreezeWindowsName, metav1.GetOptions{})
	require.NoError(t, err)
	ws, err := record.ParseFreezeWindows([]byte(cm.Data[record.FreezeWindowsKey]))
	require.NoError(t, err, "the broken entry is gone")
	require.Len(t, ws, 1)
	assert.Equal(t, "friday", ws[0].Name, "the other stays")
}

// TestRunStatusBrokenWindows: a broken entry in the windows ConfigMap does
// not hide the locks: status prints them, then fails naming the entry
// (key, value, reason); acquire refuses.
func TestRunStatusBrokenWindows(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t, windowsConfigMap(brokenWindows), heldLock(t, "42"))
	err := te.run("status")
	require.Error(t, err)
	assert.Equal(t, `freeze windows default/lockctl-freeze-windows, key windows.yaml: window 2 ("nightly"): duration "8 hours": `+
		`want a positive duration such as 8h or 90m; fix it in that ConfigMap, or remove it with lockctl freeze-windows remove nightly`, err.Error())
	assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))
	assert.Contains(t, te.out.String(), "staging", "the locks are shown")
	assert.Contains(t, te.out.String(), "acme/web@main#42", "with their holder")

	err = te.run("acquire", "production", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "43", "--no-wait")
	require.Error(t, err, "acquire refuses while the windows cannot be read")
	assert.Contains(t, err.Error(), `window 2 ("nightly"): duration "8 hours"`)
	assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))
}
