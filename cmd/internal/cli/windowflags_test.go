package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWindowFlags(t *testing.T) {
	t.Parallel()
	w := WindowFlags{Schedule: "0 22 * * *", Duration: 8 * time.Hour, Reason: "nightly"}
	require.NoError(t, w.Validate("nightly"))
	var out bytes.Buffer
	w.SayAdded(&out, "nightly", "locks")
	assert.Equal(t, "freeze window \"nightly\" added to configmap locks/lockctl-freeze-windows: 0 22 * * * for 8h0m0s, every lock\n", out.String())

	w.Targets = []string{"production", "staging"}
	out.Reset()
	w.SayAdded(&out, "nightly", "locks")
	assert.Contains(t, out.String(), "for 8h0m0s, production, staging\n", "the targets named")

	assert.EqualError(t, (&WindowFlags{Duration: time.Hour, Reason: "r"}).Validate("a"), "--schedule is required", "the flag at fault")
	assert.EqualError(t, w.Validate(""), "NAME is required", "the name is an argument")
}
