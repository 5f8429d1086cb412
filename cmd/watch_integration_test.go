package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestIntegrationStatusAndHistoryWatch: on the real API server, status -w
// and history -w print the lock as it is, then a row for each change made
// by other processes: a waiter queued, the lock handed over to it (one
// holding row, though the waiter then confirms), then released.
func TestIntegrationStatusAndHistoryWatch(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	_, errOut, code := lockctlIn(t, env, ns, append([]string{"acquire", "staging"}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)

	watch := func(ctx context.Context, args ...string) (*syncWriter, <-chan error) {
		out := &syncWriter{writes: make(chan string, 100)}
		done := make(chan error, 1)
		go func() {
			f := NewFactory(IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &bytes.Buffer{}})
			done <- Run(ctx, f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns))
		}()
		return out, done
	}
	// squeezed is out with each run of spaces made one, as rows compare.
	squeezed := func(out *syncWriter) string {
		var b strings.Builder
		for _, l := range strings.SplitAfter(out.String(), "\n") {
			b.WriteString(strings.Join(strings.Fields(l), " "))
			if strings.HasSuffix(l, "\n") {
				b.WriteString("\n")
			}
		}
		return b.String()
	}
	awaitOut := func(out *syncWriter, want string) {
		t.Helper()
		for !strings.Contains(squeezed(out), want) {
			<-out.writes
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	status, statusDone := watch(ctx, "status", "-w", "--no-headers", "-o", "custom-columns=TARGET:.spec.target,STATE:.status.state,HOLDER:.status.holder.build,WAITING:.status.waiters[*].build")
	history, historyDone := watch(ctx, "history", "staging", "-w", "--no-headers")
	awaitOut(status, "staging held 1 <none>\n")
	awaitOut(history, "holding\n")

	// A waiter, handed the lock by the release: it confirms its hold.
	waited := make(chan string, 1)
	go func() {
		_, errOut, code := lockctlIn(t, env, ns, append([]string{"acquire", "staging"}, identityFlags("api", "2")...)...)
		waited <- fmt.Sprintf("exit %d: %s", code, errOut)
	}()
	awaitOut(status, "staging held 1 2\n")
	_, errOut, code = lockctlIn(t, env, ns, append([]string{"release", "staging"}, identityFlags("web", "1")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	assert.Contains(t, <-waited, "exit 0: ", "the waiter took the lock")
	_, errOut, code = lockctlIn(t, env, ns, append([]string{"release", "staging"}, identityFlags("api", "2")...)...)
	require.Equal(t, cmdutil.CodeOK, code, errOut)
	awaitOut(status, "staging free <none> <none>\n")
	awaitOut(history, "released\n")
	cancel()
	require.ErrorIs(t, <-statusDone, context.Canceled)
	require.ErrorIs(t, <-historyDone, context.Canceled)
	rows := strings.Split(strings.TrimSuffix(squeezed(status), "\n"), "\n")
	assert.Equal(t, "staging held 1 <none>", rows[0], "the lock as it was")
	assert.Equal(t, "staging free <none> <none>", rows[len(rows)-1], "then free once released")
	lines := strings.Split(strings.TrimSuffix(history.String(), "\n"), "\n")
	require.Len(t, lines, 4, "a row per holder and per hold that ended, the waiter handed the lock once:\n%s", history.String())
	assert.Contains(t, lines[0], "acme/web@main#1")
	assert.Contains(t, lines[0], "holding")
	assert.Contains(t, lines[1], "handed over to acme/api@main#2")
	assert.Contains(t, lines[2], "acme/api@main#2")
	assert.Contains(t, lines[2], "holding")
	assert.Contains(t, lines[3], "released")
}
