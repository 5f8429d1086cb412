package enforce

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
)

// summarizer is a Summarizer that records the targets it was asked for.
type summarizer struct {
	wrote bool
	err   error
	asked []string
}

func (s *summarizer) Summarize(_ context.Context, target, _ string) (bool, error) {
	s.asked = append(s.asked, target)
	return s.wrote, s.err
}

var _ Summarizer = (*summarizer)(nil)

func TestEnforce(t *testing.T) {
	t.Parallel()
	s := Settings{Target: "prod", LockNamespace: "locks", Mode: ModeDeny, Kinds: DefaultKinds}
	tests := []struct {
		name           string
		locks          *summarizer
		settings       Settings
		wantSummarized bool
		wantErr        string
		wantPolicy     bool
	}{
		{name: "summary written, then the policy", locks: &summarizer{wrote: true}, settings: s, wantSummarized: true, wantPolicy: true},
		{name: "summary there already", locks: &summarizer{}, settings: s, wantPolicy: true},
		{name: "the lock cannot be made readable", locks: &summarizer{err: errors.New("forbidden")}, settings: s,
			wantErr: "make its lock readable by the policy: forbidden"},
		{name: "summarized, then a bad setting", locks: &summarizer{wrote: true}, settings: Settings{Target: "prod", LockNamespace: "locks", Mode: ModeDeny, Agents: []string{" "}},
			wantSummarized: true, wantErr: "an empty user name cannot be an agent or exempt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := kubetest.Clients(fake.NewClientset())
			summarized, err := Enforce(t.Context(), cs.AdmissionregistrationV1(), tt.locks, tt.settings)
			assert.Equal(t, tt.wantSummarized, summarized, "summarized")
			assert.Equal(t, []string{"prod"}, tt.locks.asked, "the lock first")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(t.Context(), Name("prod"), metav1.GetOptions{})
			assert.Equal(t, tt.wantPolicy, err == nil, "policy installed: %v", err)
		})
	}
}
