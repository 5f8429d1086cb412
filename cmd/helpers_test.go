package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// update rewrites golden files: go test ./cmd -update
var update = flag.Bool("update", false, "rewrite golden files in testdata/")

type cobraCommand = cobra.Command

// testNow is the fake clock's start in command tests.
var testNow = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// testEnv is a Factory on fakes plus what the command printed.
type testEnv struct {
	f      *Factory
	cs     *fake.Clientset
	clock  *testingclock.FakeClock
	out    *bytes.Buffer
	errOut *bytes.Buffer
	env    map[string]string
	// local is the machine and shell outside CI: no git checkout.
	local identity.LocalEnv
}

func newTestEnv(t *testing.T, objs ...runtime.Object) *testEnv {
	t.Helper()
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	te := &testEnv{
		cs:     fake.NewClientset(objs...),
		clock:  testingclock.NewFakeClock(testNow),
		out:    out,
		errOut: errOut,
		env:    map[string]string{},
		local:  identity.LocalEnv{User: "dev", Host: "laptop", TerminalSession: 4242, PID: 5151},
	}
	// Number writes as the API server does, so tokens and preconditions
	// see real resourceVersions.
	var rv int
	te.cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		// Creates and updates: k8stesting.CreateAction and UpdateAction
		// are the same interface.
		w, ok := a.(interface{ GetObject() runtime.Object })
		if !ok {
			return false, nil, nil
		}
		if m, err := meta.Accessor(w.GetObject()); err == nil {
			rv++
			m.SetResourceVersion(strconv.Itoa(rv))
		}
		return false, nil, nil
	})
	logger := logrus.New()
	logger.Out = errOut
	logger.Formatter = &logrus.TextFormatter{DisableTimestamp: true}
	ns := "default"
	te.f = &Factory{
		IOStreams:    IOStreams{In: in, Out: out, ErrOut: errOut},
		ConfigFlags:  &kube.ConfigFlags{},
		Clientset:    func() (kube.Interface, error) { return kubetest.Clients(te.cs), nil },
		ClientsetFor: func(string) (kube.Interface, error) { return kubetest.Clients(te.cs), nil },
		Namespace:    func() (string, error) { return ns, nil },
		InPod:        func() (string, string, bool) { return "", "", false },
		Clock:        te.clock,
		Getenv:       func(k string) string { return te.env[k] },
		LocalEnv:     func() identity.LocalEnv { return te.local },
		Log:          logrus.NewEntry(logger),
		IsTerminal:   func() bool { return false },
	}
	return te
}

// run executes lockctl with args.
func (te *testEnv) run(args ...string) error {
	return Run(context.Background(), te.f, args)
}

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test ./cmd -update")
	assert.Equal(t, string(want), got, "output differs from %s (go test ./cmd -update rewrites it)", path)
}

// TestHelpGolden keeps every command's --help in testdata/help.
func TestHelpGolden(t *testing.T) {
	t.Parallel()
	root := newRootCmd(newTestEnv(t).f)
	var paths [][]string
	var walk func(prefix []string, cmds []*cobraCommand)
	walk = func(prefix []string, cmds []*cobraCommand) {
		for _, c := range cmds {
			if c.Hidden || c.Name() == "help" {
				continue
			}
			p := append(append([]string{}, prefix...), c.Name())
			paths = append(paths, p)
			walk(p, c.Commands())
		}
	}
	paths = append(paths, nil)
	walk(nil, root.Commands())
	for _, p := range paths {
		name := "lockctl"
		if len(p) > 0 {
			name = strings.Join(p, "-")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			require.NoError(t, te.run(append(p, "--help")...))
			golden(t, filepath.Join("help", name+".golden"), te.out.String())
		})
	}
}

// parseArgs runs `lockctl <path...> args` with the command at path replaced
// by newCmd(runF), and returns the options runF captured and the error.
func parseArgs[T any](t *testing.T, path []string, args []string, newCmd func(*Factory, func(*T) error) *cobra.Command) (*T, error) {
	t.Helper()
	return parseArgsIn(t, newTestEnv(t), path, args, newCmd)
}

// parseArgsIn is parseArgs on te, whose environment a test has set.
func parseArgsIn[T any](t *testing.T, te *testEnv, path []string, args []string, newCmd func(*Factory, func(*T) error) *cobra.Command) (*T, error) {
	t.Helper()
	root := newRootCmd(te.f)
	parent := root
	for _, name := range path[:len(path)-1] {
		parent = findCmd(parent, name)
	}
	parent.RemoveCommand(findCmd(parent, path[len(path)-1]))
	var got *T
	parent.AddCommand(newCmd(te.f, func(o *T) error { got = o; return nil }))
	root.SetArgs(append(append([]string{}, path...), args...))
	return got, root.Execute()
}

// assertParsed checks what parseArgs returned: the wanted usage error, or
// the wanted options once clear has dropped what is not compared.
func assertParsed[T any](t *testing.T, got *T, err error, wantErr string, want T, clear func(*T)) {
	t.Helper()
	if wantErr != "" {
		require.Error(t, err)
		assert.Contains(t, err.Error(), wantErr)
		assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
		return
	}
	require.NoError(t, err)
	clear(got)
	assert.Equal(t, want, *got)
}

func findCmd(root *cobra.Command, name string) *cobra.Command {
	for _, c := range root.Commands() {
		if c.Name() == name {
			return c
		}
	}
	return nil
}

// lockConfigMap builds the lock of target held by holder, as lockctl
// writes it.
func lockConfigMap(t *testing.T, target string, holder record.Claim, waiters ...record.Claim) *corev1.ConfigMap {
	t.Helper()
	rec := record.Record{Target: target, Policy: record.PolicyNewest, Holder: holder, Waiters: waiters, Updated: holder.Since}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name(target), Namespace: "default", UID: "lock-uid",
		Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
		Annotations: map[string]string{record.RecordAnnotation: string(raw)},
	}}
}

func ptrMicro(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// createJobPod creates the pod of a stored job in the fake cluster.
func createJobPod(t *testing.T, te *testEnv, name string, mod func(*corev1.Pod)) {
	t.Helper()
	j, err := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), name)
	require.NoError(t, err)
	pod := job.NewPod(j, "default", "7")
	mod(pod)
	_, err = te.cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}
