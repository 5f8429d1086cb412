package run

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestMain shares one control plane among the run package's integration
// tests; unit tests start none.
func TestMain(m *testing.M) { testenv.Main(m) }
