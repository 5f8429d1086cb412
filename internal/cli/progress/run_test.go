package progress

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockctl/lockctl/job"
)

// TestPodGone: an aborted job's pod is said to be deleted only if one was
// ever created.
func TestPodGone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		st   job.JobStatus
		want string
	}{
		{name: "aborted while triggered: no pod", st: job.JobStatus{State: job.Aborted}, want: " before its pod was created"},
		{name: "aborted while pending", st: job.JobStatus{State: job.Aborted, PodName: "deploy-1"}, want: `, pod "deploy-1" deleted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, podGone(&job.Job{Status: tt.st}), "status %+v", tt.st)
		})
	}
}
