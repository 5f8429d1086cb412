package lock_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationShortHandedOverHoldIsNotConfirmed: against the real API
// server, a hold handed over and released within its confirmation delay
// (defaultConfirmAfter) writes nothing but its release, on the
// hand-over's version; a hold that runs longer is confirmed by itself once
// the delay has passed, without anyone waiting for it
// (docs/adr/0079-confirm-after-a-second.md).
func TestIntegrationShortHandedOverHoldIsNotConfirmed(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	req := func(repo string) lock.Request {
		return lock.Request{Target: "staging", Identity: clitest.Identity(repo, 1), Policy: record.PolicyFIFO, TTL: time.Minute}
	}
	stored := func() (*corev1.ConfigMap, *record.Record) {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
		require.NoError(t, err)
		rec, err := record.Decode(cm)
		require.NoError(t, err)
		return cm, rec
	}
	first := newClient(t, env.Kube, ns)
	a := mustAcquire(t, first, req("a"))

	// b and c wait behind a, in that order, each with a client of its own.
	bClient, cClient := newClient(t, env.Kube, ns), newClient(t, env.Kube, ns)
	bDone, bQueued := acquireAsync(t.Context(), bClient, req("b"))
	awaitQueued(t, bQueued, "b")
	cDone, cQueued := acquireAsync(t.Context(), cClient, req("c"))
	awaitQueued(t, cQueued, "c")

	cm, _ := stored()
	w, err := env.Client.CoreV1().ConfigMaps(ns).Watch(t.Context(), metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cm.Name).String(),
		ResourceVersion: cm.ResourceVersion,
	})
	require.NoError(t, err)
	defer w.Stop()

	_, err = first.ReleaseHeld(t.Context(), a, lock.ReleaseOptions{})
	require.NoError(t, err)
	b := await(t, bDone, "b")
	require.NoError(t, b.err)
	require.True(t, b.held.Holder.HandedOver, "b holds from the hand-over")
	time.Sleep(50 * time.Millisecond) // a short hold
	_, err = bClient.ReleaseHeld(t.Context(), b.held, lock.ReleaseOptions{})
	require.NoError(t, err)
	c := await(t, cDone, "c")
	require.NoError(t, c.err)
	require.True(t, c.held.Holder.HandedOver, "c holds from b's hand-over")

	// What the lock went through: a's hand-over to b, b's to c, and no
	// confirmation by b between them.
	var holders []string
	for len(holders) < 2 {
		select {
		case ev := <-w.ResultChan():
			got, ok := ev.Object.(*corev1.ConfigMap)
			require.True(t, ok, "%v", ev.Object)
			rec, err := record.Decode(got)
			require.NoError(t, err)
			holders = append(holders, rec.Holder.Repo+handedMark(rec.Holder.HandedOver))
		case <-time.After(waitTimeout):
			t.Fatalf("the watch brought %v", holders)
		}
	}
	assert.Equal(t, []string{"b (handed over)", "c (handed over)"}, holders, "b's short hold wrote only its release")

	// c holds on, nobody waiting for its confirmation: it comes by itself.
	require.Eventually(t, func() bool {
		_, rec := stored()
		return rec.Holder.Repo == "c" && !rec.Holder.HandedOver
	}, waitTimeout, 50*time.Millisecond, "c confirmed once its confirmation was due")
	_, err = cClient.ReleaseHeld(t.Context(), c.held, lock.ReleaseOptions{})
	require.NoError(t, err)
}

func handedMark(handed bool) string {
	if handed {
		return " (handed over)"
	}
	return ""
}
