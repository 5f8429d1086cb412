package cmdutil

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestJoinRelease: a failed release replaces a job's or a command's
// outcome (the lock may still be held: exit 1, not the job's status), and
// joins any other error.
func TestJoinRelease(t *testing.T) {
	t.Parallel()
	work, rel := errors.New("pod lost"), errors.New("release lock \"staging\": conflict")
	outcome := &ExitError{Code: 3}
	tests := []struct {
		name      string
		err, rerr error
		want      []error
		wantNil   bool
	}{
		{name: "both fine", wantNil: true},
		{name: "released, the work failed", err: work, want: []error{work}},
		{name: "released, an outcome", err: outcome, want: []error{outcome}},
		{name: "the release failed after success", rerr: rel, want: []error{rel}},
		{name: "the release failed after an outcome: the release", err: outcome, rerr: rel, want: []error{rel}},
		{name: "both failed: both", err: work, rerr: rel, want: []error{work, rel}},
		{name: "the release failed after a silent failure", err: SilentError, rerr: rel, want: []error{rel}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := JoinRelease(tt.err, tt.rerr)
			if tt.wantNil {
				assert.NoError(t, got)
				return
			}
			for _, w := range tt.want {
				assert.ErrorIs(t, got, w, "err %v, release %v", tt.err, tt.rerr)
			}
			if len(tt.want) == 1 {
				assert.Equal(t, tt.want[0], got, "err %v, release %v: the one error as it is", tt.err, tt.rerr)
			}
		})
	}
}
