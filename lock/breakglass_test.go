package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// TestBreakGlassGrant: a grant is written beside the record, tied to the
// lock's state; status shows it while it lives; a change of holder, its
// end or EndBreakGlass drops it at the next write; a lock that does not
// exist has nothing to break.
func TestBreakGlassGrant(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, cs := newTestClient(t, now, nil)
	clk := c.clk.(*testingclock.FakeClock)
	ctx := t.Context()
	req := request("1")
	ops := record.Identity{Owner: "acme", Repo: "ops", Branch: "main", Build: "7"}
	grant := BreakGlassRequest{Target: req.Target, User: "carol", By: ops, Reason: "roll back", For: 10 * time.Minute}

	_, err := c.GrantBreakGlass(ctx, grant)
	var ne *notEnforcedError
	require.ErrorAs(t, err, &ne)
	_, err = c.GrantBreakGlass(ctx, BreakGlassRequest{Target: req.Target, By: ops, Reason: "x", For: time.Minute})
	require.ErrorIs(t, err, errNoUser)

	held, err := c.Acquire(ctx, req)
	require.NoError(t, err)
	g, err := c.GrantBreakGlass(ctx, grant)
	require.NoError(t, err)
	assert.Equal(t, `break-glass for user carol by acme/ops@main#7 until 2026-03-01T12:10:00Z: "roll back" (the lock was held by acme/web@main#1)`, g.Description)
	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "carol", cm.Annotations[record.BreakGlassUserAnnotation])
	assert.Equal(t, breakGlassState(cm.Annotations[record.SummaryTokenAnnotation], ""), cm.Annotations[record.BreakGlassStateAnnotation],
		"tied to the holder's token, as the policy reads it")
	assert.Equal(t, "2026-03-01T12:10:00.000000Z", cm.Annotations[breakGlassUntilAnnotation])
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	if assert.Len(t, rec.BreakGlass, 1, "the record remembers the grant for statistics") {
		assert.Equal(t, "carol", rec.BreakGlass[0].User)
		assert.Equal(t, "2026-03-01T12:10:00Z", rec.BreakGlass[0].Until.UTC().Format(time.RFC3339))
	}
	l, err := c.Get(ctx, req.Target)
	require.NoError(t, err)
	assert.Equal(t, g.Description, l.Status.BreakGlass)

	clk.Step(11 * time.Minute)
	l, err = c.Get(ctx, req.Target)
	require.NoError(t, err)
	assert.Empty(t, l.Status.BreakGlass, "its time is up")
	_, err = c.ReleaseHeld(ctx, held, ReleaseOptions{})
	require.NoError(t, err)
	cm, err = cs.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, record.BreakGlassUserAnnotation, "the next write dropped it")

	held, err = c.Acquire(ctx, request("2"))
	require.NoError(t, err)
	_, err = c.GrantBreakGlass(ctx, grant)
	require.NoError(t, err)
	_, err = c.ReleaseHeld(ctx, held, ReleaseOptions{})
	require.NoError(t, err)
	cm, err = cs.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, record.BreakGlassUserAnnotation, "the holder changed: the grant ended")

	_, err = c.GrantBreakGlass(ctx, grant)
	require.NoError(t, err)
	ended, err := c.EndBreakGlass(ctx, req.Target)
	require.NoError(t, err)
	assert.True(t, ended)
	ended, err = c.EndBreakGlass(ctx, req.Target)
	require.NoError(t, err)
	assert.False(t, ended)
}
