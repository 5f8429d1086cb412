package enforce

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

func TestParseKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Kind
		wantErr string
	}{
		{in: "deployments.apps", want: Kind{"apps", "deployments"}},
		{in: "services", want: Kind{"", "services"}},
		{in: "ingresses.networking.k8s.io", want: Kind{"networking.k8s.io", "ingresses"}},
		{in: "Deployments", wantErr: `kind "Deployments" is not a plural resource name such as deployments.apps or services`},
		{in: "", wantErr: `kind "" is not a plural resource name such as deployments.apps or services`},
		{in: "jobs.Batch_", wantErr: `kind "jobs.Batch_": API group "Batch_" is not a DNS subdomain`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKind(tt.in)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.in, got.String(), "String spells it back")
		})
	}
}

func TestSystemUser(t *testing.T) {
	t.Parallel()
	for user, want := range map[string]bool{
		"system:kube-controller-manager": true,
		"system:node:worker-1":           true,
		"system:apiserver":               true,
		"system:serviceaccount:kube-system:generic-garbage-collector": true,
		"system:serviceaccount:ci:deployer":                           false,
		"alice":                                                       false,
		"systemd":                                                     false,
	} {
		assert.Equal(t, want, SystemUser(user), user)
	}
}

// TestPolicyAndBinding: the policy matches the guarded kinds (with scale
// where there is one) and ConfigMaps in the target and lock namespaces, is
// bound to the lock's ConfigMap, and carries its settings where status
// reads them; the mode picks the actions, and only --require-holder denies
// a target without a lock, whatever the settings.
func TestPolicyAndBinding(t *testing.T) {
	t.Parallel()
	s := Settings{Target: "web", LockNamespace: "locks", Mode: ModeDeny, Strict: true, Kinds: []Kind{{"apps", "deployments"}, {"", "secrets"}}}
	require.NoError(t, s.Validate())
	p := Policy(s)
	assert.Equal(t, "lockctl-enforce-web", p.Name)
	assert.Equal(t, "true", p.Annotations[StrictAnnotation])
	assert.NotContains(t, p.Annotations, RequireHolderAnnotation)
	assert.Equal(t, []string{"web", "locks"}, p.Spec.MatchConstraints.NamespaceSelector.MatchExpressions[0].Values)
	var resources []string
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		for _, res := range r.Resources {
			resources = append(resources, r.APIGroups[0]+"/"+res)
		}
	}
	assert.Equal(t, []string{"/configmaps", "/secrets", "apps/deployments", "apps/deployments/scale"}, resources)
	assert.Equal(t, admissionregistrationv1.Fail, *p.Spec.FailurePolicy)

	b := Binding(s)
	assert.Equal(t, p.Name, b.Spec.PolicyName)
	assert.Equal(t, "lockctl-lock-web", b.Spec.ParamRef.Name)
	assert.Equal(t, "locks", b.Spec.ParamRef.Namespace)
	assert.Equal(t, admissionregistrationv1.AllowAction, *b.Spec.ParamRef.ParameterNotFoundAction)
	assert.Equal(t, ModeDeny, modeOf(b.Spec.ValidationActions))

	for mode, want := range map[Mode][]admissionregistrationv1.ValidationAction{
		"":        {admissionregistrationv1.Warn, admissionregistrationv1.Audit},
		ModeWarn:  {admissionregistrationv1.Warn, admissionregistrationv1.Audit},
		ModeAudit: {admissionregistrationv1.Audit},
		ModeDeny:  {admissionregistrationv1.Deny, admissionregistrationv1.Audit},
	} {
		got := Binding(Settings{Target: "web", LockNamespace: "locks", Mode: mode}).Spec.ValidationActions
		assert.Equal(t, want, got, "mode %q", mode)
	}
	s.RequireHolder = true
	assert.Equal(t, admissionregistrationv1.AllowAction, *Binding(s).Spec.ParamRef.ParameterNotFoundAction, "never refuse the write that creates the lock")
	assert.Equal(t, "true", Policy(s).Annotations[RequireHolderAnnotation])
}

func TestSettingsValidate(t *testing.T) {
	t.Parallel()
	assert.EqualError(t, Settings{Target: "Web", LockNamespace: "locks"}.Validate(), `target "Web" is not a namespace name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`)
	assert.EqualError(t, Settings{Target: "web", LockNamespace: "locks", Mode: "block"}.Validate(), `unknown mode "block": use "warn", "audit" or "deny"`)
	assert.EqualError(t, Settings{Target: "web", LockNamespace: "locks", Agents: []string{""}}.Validate(), "an empty user name cannot be an agent or exempt")
}

func TestManifests(t *testing.T) {
	t.Parallel()
	a := Settings{Target: "a", LockNamespace: "locks", Mode: ModeDeny, Kinds: DefaultKinds}
	b := Settings{Target: "b", LockNamespace: "locks", Mode: ModeWarn, Kinds: DefaultKinds}
	got := Manifests(a, b)
	require.Len(t, got, 8, "a policy and a binding per target, and the guard of the lock's creation")
	ga, gab := CreateGuard(a)
	assert.Equal(t, []any{Policy(a), Binding(a), ga, gab}, got[:4])
	gb, gbb := CreateGuard(b)
	assert.Equal(t, []any{Policy(b), Binding(b), gb, gbb}, got[4:])
	assert.Empty(t, Manifests(), "no targets, no manifests")
}
