// Package clitest is what the tests that drive lockctl from the outside
// (e2e, reliability, bench, deploy) share: the lockctl binary, built once
// per test binary and run as a user would, contenders queued for a lock,
// the holder identity lock tests use, and buffers safe for concurrent
// writers.
package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Binary builds lockctl the first time it is called in a test binary, as
// `make build` builds it (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), and
// returns its path; later calls return the same path. Cleanup removes it:
// call it from TestMain after the tests ran.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := Build()
	require.NoError(t, err)
	return bin
}

// Build is Binary for TestMain, which has no testing.TB: it returns the
// error of the build instead of failing a test.
func Build() (string, error) {
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "lockctl-test-"); buildErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		buildBin = filepath.Join(buildDir, "lockctl")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", buildBin, ".")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build lockctl: %v\n%s", err, out)
		}
	})
	return buildBin, buildErr
}

// Cleanup removes the binary Binary built, if it built one.
func Cleanup() {
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
}

// Outcome is what one lockctl process did.
type Outcome struct {
	Code           int
	Stdout, Stderr string
}

// Run runs the lockctl binary with args for at most timeout, in a clean
// environment (PATH, HOME=home) plus env, and returns its exit code and
// output. A process that cannot be started fails the test.
func Run(t testing.TB, timeout time.Duration, home string, env []string, args ...string) Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)
	return RunCmd(t, cmd)
}

// RunCmd runs cmd, a lockctl process, to its end and returns its exit code
// and output. A process that cannot be started fails the test.
func RunCmd(t testing.TB, cmd *exec.Cmd) Outcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := Outcome{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		o.Code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run lockctl %v: %v", cmd.Args[1:], err)
	}
	return o
}
