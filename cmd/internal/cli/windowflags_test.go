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
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	require.NoError(t, w.Validate("nightly", now))
	var out bytes.Buffer
	w.SayAdded(&out, "nightly", "locks")
	assert.Equal(t, "freeze window \"nightly\" added to configmap locks/lockctl-freeze-windows: 0 22 * * * for 8h0m0s, every lock\n", out.String())

	w.Targets = []string{"production", "staging"}
	out.Reset()
	w.SayAdded(&out, "nightly", "locks")
	assert.Contains(t, out.String(), "for 8h0m0s, production, staging\n", "the targets named")

	assert.EqualError(t, (&WindowFlags{Duration: time.Hour, Reason: "r"}).Validate("a", now), "--schedule is required", "the flag at fault")
	assert.EqualError(t, w.Validate("", now), "NAME is required", "the name is an argument")

	always := WindowFlags{Schedule: "@hourly", Duration: 2 * time.Hour, Reason: "r"}
	assert.ErrorContains(t, always.Validate("a", now), "frozen all the time", "refused")
	always.Force = true
	assert.NoError(t, always.Validate("a", now), "--force adds it")
}
