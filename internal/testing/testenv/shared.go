package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

// SharedStartTimeout bounds how long Get waits for the shared control plane
// to start.
const SharedStartTimeout = 3 * time.Minute

// shared is the package-wide control plane. Main sets mainRan before m.Run;
// the first Get starts the control plane under once; Main stops it after
// m.Run, when no test is running any more.
var shared struct {
	mainRan bool
	opts    Options
	once    sync.Once
	env     *Env
	err     error
}

// Main runs a package's tests around one shared control plane. Call it from
// TestMain:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// The control plane starts on the first call to Get, so a run that selects
// only unit tests (or -short) starts nothing, and stops after the last test.
// When tests fail, the directory with the component logs is kept and its path
// printed. Main returns, and the testing package exits with m.Run's code.
func Main(m *testing.M) { MainWith(m, Options{}) }

// MainWith is Main with the shared control plane started with o (say, a
// container log of the package's own).
func MainWith(m *testing.M, o Options) {
	flag.Parse()
	shared.mainRan = true
	shared.opts = o
	code := m.Run()
	stopSharedFleet(code != 0)
	if shared.env == nil {
		return
	}
	if code != 0 {
		shared.env.keep = true
		fmt.Fprintf(os.Stderr, "testenv: tests failed; component logs kept in %s\n", shared.env.Dir)
	}
	shared.env.Stop()
}

// RequireIntegrationEnv names the environment variable that makes an
// integration test fail rather than skip under -short: the Makefile sets it
// for the integration runs of `make test` and CI, so that no integration
// test is skipped there unnoticed.
const RequireIntegrationEnv = "LOCKCTL_REQUIRE_INTEGRATION"

// Get returns the package's shared control plane, starting it on first use.
// Under -short it skips the test, or fails it when RequireIntegrationEnv is
// set. It fails the test if the control plane
// could not start, including when the binaries are missing ("run `make
// tools`"): an integration test is never skipped silently, in CI or on a
// developer's machine. It also fails if TestMain does not call Main.
func Get(t testing.TB) *Env {
	t.Helper()
	checkIntegration(t)
	shared.once.Do(func() {
		// Not t.Context(): the control plane outlives this test.
		ctx, cancel := context.WithTimeoutCause(context.Background(), SharedStartTimeout,
			fmt.Errorf("control plane not ready after %s", SharedStartTimeout))
		defer cancel()
		shared.env, shared.err = Start(ctx, shared.opts)
		if shared.err == nil && testing.Verbose() {
			fmt.Fprintf(os.Stderr, "testenv: control plane ready in %s (%s)\n",
				shared.env.StartupTime.Round(time.Millisecond), shared.env.Dir)
		}
	})
	if shared.err != nil {
		t.Fatalf("testenv: %v", shared.err)
	}
	return shared.env
}

// checkIntegration skips t under -short, or fails it when
// RequireIntegrationEnv is set, and fails it when TestMain does not call
// Main.
func checkIntegration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		if os.Getenv(RequireIntegrationEnv) != "" {
			t.Fatalf("integration test skipped under -short while %s is set: run it without -short", RequireIntegrationEnv)
		}
		t.Skip("integration test: skipped under -short")
	}
	if !shared.mainRan {
		t.Fatal("testenv: no shared control plane: call testenv.Main(m) from TestMain")
	}
}
