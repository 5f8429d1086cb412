package cmd

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/servertime"
)

// skewedClock is the real clock off by a fixed offset.
type skewedClock struct {
	clock.RealClock
	off time.Duration
}

func (s skewedClock) Now() time.Time                  { return time.Now().Add(s.off) }
func (s skewedClock) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

// lockctlSkewed runs lockctl as a fresh process on a machine whose clock is
// off by off.
func lockctlSkewed(t *testing.T, env *testenv.Env, ns string, off time.Duration, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	local := skewedClock{off: off}
	f.Clock, f.ServerClock = local, servertime.New(local)
	err := Run(t.Context(), f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns))
	if err != nil {
		cmdutil.PrintError(&errOut, err, 0)
	}
	return errOut.String(), cmdutil.ExitCode(err)
}

// TestIntegrationCLIClockSkew: lockctl's own lock clients judge expiries
// on the API server's clock. A holder whose clock is an hour slow takes a
// lock for 30 minutes; a contender whose clock is an hour fast, which on
// its own clock would find that lock expired 90 minutes ago, waits and
// times out; the holder releases it.
func TestIntegrationCLIClockSkew(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	errOut, code := lockctlSkewed(t, env, ns, -time.Hour, append([]string{"acquire", "staging", "--ttl", "30m"}, identityFlags("web", "1")...)...)
	assert.Equal(t, cmdutil.CodeOK, code, "the slow holder takes the free lock; stderr:\n%s", errOut)

	errOut, code = lockctlSkewed(t, env, ns, time.Hour, append([]string{"acquire", "staging", "--timeout", "3s"}, identityFlags("api", "1")...)...)
	assert.Equal(t, cmdutil.CodeTimeout, code, "the fast contender does not take the live lock; stderr:\n%s", errOut)

	errOut, code = lockctlSkewed(t, env, ns, -time.Hour, append([]string{"release", "staging"}, identityFlags("web", "1")...)...)
	assert.Equal(t, cmdutil.CodeOK, code, "the holder still holds it; stderr:\n%s", errOut)
}
