// Package clitest builds the lockctl binary once per test binary and runs
// it as a user would, for the tests that drive lockctl from the outside.
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

// Binary builds lockctl (CGO_ENABLED=0) the first time it is called in a
// test binary and returns its path; later calls return the same path.
// Cleanup removes it: call it from TestMain after the tests ran.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "lockctl-test-"); buildErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		buildBin = filepath.Join(buildDir, "lockctl")
		cmd := exec.Command("go", "build", "-o", buildBin, ".")
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build lockctl: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return buildBin
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
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := Outcome{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		o.Code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run lockctl %v: %v", args, err)
	}
	return o
}
