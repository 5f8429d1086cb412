package enforce

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// locks is a Locks that records the targets it summarized and shows one
// lock view.
type locks struct {
	wrote bool
	err   error
	view  *lock.LockView
	asked []string
}

func (s *locks) Summarize(_ context.Context, target, _ string) (bool, error) {
	s.asked = append(s.asked, target)
	return s.wrote, s.err
}

func (s *locks) Get(context.Context, string) (*lock.LockView, error) { return s.view, nil }

var _ Locks = (*locks)(nil)

func TestEnforce(t *testing.T) {
	t.Parallel()
	s := Settings{Target: "prod", LockNamespace: "locks", Mode: ModeDeny, Kinds: DefaultKinds}
	userless := &lock.LockView{Status: lock.LockViewStatus{State: lock.StateHeld, Alive: true,
		Holder: &record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}}}}
	withUser := &lock.LockView{Status: lock.LockViewStatus{State: lock.StateHeld, Alive: true,
		Holder: &record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}, User: "alice"}}}
	inLockNS := s
	inLockNS.Target = "locks"
	system := s
	system.Target = "kube-system"
	tests := []struct {
		name           string
		locks          *locks
		settings       Settings
		force          bool
		wantSummarized bool
		wantAsked      bool
		wantErr        string
		wantPolicy     bool
	}{
		{name: "the policy, then the summary", locks: &locks{wrote: true}, settings: s, wantSummarized: true, wantAsked: true, wantPolicy: true},
		{name: "summary there already", locks: &locks{}, settings: s, wantAsked: true, wantPolicy: true},
		{name: "the lock cannot be made readable: nothing left installed", locks: &locks{err: errors.New("forbidden")}, settings: s,
			wantAsked: true, wantErr: "make its lock readable by the policy: forbidden"},
		{name: "a bad setting: nothing written", locks: &locks{wrote: true}, settings: Settings{Target: "prod", LockNamespace: "locks", Mode: ModeDeny, Agents: []string{" "}},
			wantErr: "an empty user name cannot be an agent or exempt"},
		{name: "the lock namespace", locks: &locks{}, settings: inLockNS, wantErr: `namespace "locks" is the lock namespace`},
		{name: "the lock namespace, forced", locks: &locks{}, settings: inLockNS, force: true, wantAsked: true, wantPolicy: true},
		{name: "a system namespace", locks: &locks{}, settings: system, wantErr: `namespace "kube-system" is a system namespace`},
		{name: "held without a user", locks: &locks{view: userless}, settings: s, wantErr: `lock "prod" is held by acme/web@main#41, whose claim has no Kubernetes user`},
		{name: "held without a user, forced", locks: &locks{view: userless}, settings: s, force: true, wantAsked: true, wantPolicy: true},
		{name: "held with a user", locks: &locks{view: withUser}, settings: s, wantAsked: true, wantPolicy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := kubetest.Clients(fake.NewClientset())
			summarized, err := Enforce(t.Context(), cs.AdmissionregistrationV1(), tt.locks, tt.settings, EnforceOptions{Force: tt.force})
			assert.Equal(t, tt.wantSummarized, summarized, "summarized")
			assert.Equal(t, tt.wantAsked, len(tt.locks.asked) == 1, "the lock summarized: %v", tt.locks.asked)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			for _, name := range []string{Name(tt.settings.Target), CreateName(tt.settings.Target)} {
				_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(t.Context(), name, metav1.GetOptions{})
				assert.Equal(t, tt.wantPolicy, err == nil, "policy %s installed: %v", name, err)
				_, err = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(t.Context(), name, metav1.GetOptions{})
				assert.Equal(t, tt.wantPolicy, err == nil, "binding %s installed: %v", name, err)
			}
		})
	}
}

// TestAwaitInEffectNamesTheNamespace: a target namespace being deleted
// or not there yet is named as the cause at once, not waited on until the
// timeout.
func TestAwaitInEffectNamesTheNamespace(t *testing.T) {
	t.Parallel()
	s := Settings{Target: "prod", LockNamespace: "locks", Mode: ModeDeny}
	for name, tt := range map[string]struct {
		err  error
		want error
	}{
		"terminating": {
			err: &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
				Message: `configmaps "x" is forbidden: unable to create new content in namespace prod because it is being terminated`,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "namespace prod is being terminated"}}}}},
			want: ErrTargetTerminating,
		},
		"missing": {err: apierrors.NewNotFound(corev1.Resource("namespaces"), "prod"), want: ErrNoTargetNamespace},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewClientset()
			cs.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.err })
			err := AwaitInEffect(t.Context(), kubetest.Clients(cs).CoreV1(), s, time.Millisecond, time.Minute)
			assert.ErrorIs(t, err, tt.want)
		})
	}
}
