package reliability

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// heavyEnv turns on the heavier variants of the tests.
const heavyEnv = "LOCKCTL_RELIABILITY_HEAVY"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		runHelper() // a child process started by a test; never returns
	}
	testenv.Main(m)
	clitest.Cleanup()
}

// heavy reports whether the heavier variants run.
func heavy() bool { return os.Getenv(heavyEnv) == "1" }

// rounds returns light, or heavyRounds under LOCKCTL_RELIABILITY_HEAVY=1.
func rounds(light, heavyRounds int) int {
	if heavy() {
		return heavyRounds
	}
	return light
}

// lockClient returns a lock client with a clientset of its own built from
// cfg.
func lockClient(t testing.TB, cfg *rest.Config, ns string) *lock.Client {
	t.Helper()
	return lockClientWith(t, cfg, ns, lock.Options{})
}

// lockClientWith is lockClient with o.
func lockClientWith(t testing.TB, cfg *rest.Config, ns string, o lock.Options) *lock.Client {
	t.Helper()
	cs, err := kube.NewForConfig(rest.CopyConfig(cfg))
	require.NoError(t, err)
	return lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, o)
}
