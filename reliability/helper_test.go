package reliability

import (
	"bufio"
	"context"
	"fmt"
	"k8s.io/utils/clock"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// The test binary doubles as a lock holder process that tests SIGKILL: run
// with helperEnv=holder, it takes the lock named by the other variables,
// prints "held UNIXNANO TOKEN", and renews the lock every third of its TTL, printing
// "renewed", as `lockctl run` does for a command in a terminal.
const (
	helperEnv     = "LOCKCTL_RELIABILITY_HELPER"
	helperNS      = "LOCKCTL_HELPER_NAMESPACE"
	helperTarget  = "LOCKCTL_HELPER_TARGET"
	helperRepo    = "LOCKCTL_HELPER_REPO"
	helperTTL     = "LOCKCTL_HELPER_TTL"
	helperHolding = "held"
)

func runHelper() {
	if mode := os.Getenv(helperEnv); mode == "reconciler" || mode == "reconciler-once" {
		runReconcilerHelper()
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		fail(err)
	}
	cs, err := kube.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	ttl, err := time.ParseDuration(os.Getenv(helperTTL))
	if err != nil {
		fail(err)
	}
	l := lock.New(cs.CoreV1(), cs.CoreV1(), os.Getenv(helperNS), clock.RealClock{}, lock.Options{})
	ctx := context.Background()
	h, err := l.Acquire(ctx, lock.Request{
		Target: os.Getenv(helperTarget), Identity: clitest.Identity(os.Getenv(helperRepo), 1), TTL: ttl,
	})
	if err != nil {
		fail(err)
	}
	fmt.Println(helperHolding, time.Now().UnixNano(), h.Token)
	for {
		time.Sleep(ttl / 3)
		if err := l.Renew(ctx, h, ttl); err != nil {
			fail(err)
		}
		fmt.Println("renewed")
	}
}

// holderProcess is a running helper.
type holderProcess struct {
	cmd  *exec.Cmd
	held chan time.Time // receives when the helper held the lock
	done chan struct{}  // closed when its output ended
}

// startHolder starts a helper holding target's lock in ns for ttl.
func startHolder(t *testing.T, kubeconfig, ns, target, repo string, ttl time.Duration) *holderProcess {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(),
		helperEnv+"=holder", "KUBECONFIG="+kubeconfig, helperNS+"="+ns, helperTarget+"="+target,
		helperRepo+"="+repo, helperTTL+"="+ttl.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	p := &holderProcess{cmd: cmd, held: make(chan time.Time, 1), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			// "held UNIXNANO TOKEN": when the helper held the lock, by its
			// own clock (the same machine's), not when the line was read.
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == helperHolding {
				if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					p.held <- time.Unix(0, ns)
				}
			}
		}
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("holder process stderr:\n%s", stderr.String())
		}
	})
	return p
}

// kill SIGKILLs the helper and waits until it is gone and its output read.
func (p *holderProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	_ = p.cmd.Wait()
}
