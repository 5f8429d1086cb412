package enforce

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The API server's own compiler and evaluator of admission policies
// (k8s.io/apiserver's validating admission policy plugin), run here on
// the policy this package renders: a broken expression fails make unit,
// and the rules are tested on requests as the API server builds them.

// celEnv is the environment the API server compiles policies in.
func celEnv() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
}

// compileErrors compiles every expression of p as the API server does and
// returns what does not compile, one line an expression.
func compileErrors(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) []string {
	t.Helper()
	compiler, err := plugincel.NewCompositedCompiler(celEnv())
	require.NoError(t, err)
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	var errs []string
	check := func(where string, r plugincel.CompilationResult) {
		if r.Error != nil {
			errs = append(errs, where+": "+r.Error.Error())
		}
	}
	for _, m := range p.Spec.MatchConditions {
		check("matchCondition "+m.Name, compiler.CompileCELExpression(&matchconditions.MatchCondition{Name: m.Name, Expression: m.Expression}, opts, environment.StoredExpressions))
	}
	for _, v := range p.Spec.Variables {
		check("variable "+v.Name, compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.StoredExpressions))
	}
	for i, v := range p.Spec.Validations {
		check("validation "+string(rune('0'+i)), compiler.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, opts, environment.StoredExpressions))
		if v.MessageExpression != "" {
			check("messageExpression "+string(rune('0'+i)), compiler.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, opts, environment.StoredExpressions))
		}
	}
	for _, a := range p.Spec.AuditAnnotations {
		check("auditAnnotation "+a.Key, compiler.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts, environment.StoredExpressions))
	}
	return errs
}

// evaluator runs one policy on requests, as the API server's plugin does
// (validating.compilePolicy).
type evaluator struct {
	v validating.Validator
}

func newEvaluator(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy) *evaluator {
	t.Helper()
	require.Empty(t, compileErrors(t, p), "the policy compiles")
	hasParams := p.Spec.ParamKind != nil
	opts := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgOpts := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}
	compiler, err := plugincel.NewCompositedCompiler(celEnv())
	require.NoError(t, err)
	var vars []plugincel.NamedExpressionAccessor
	for _, v := range p.Spec.Variables {
		vars = append(vars, &validating.Variable{Name: v.Name, Expression: v.Expression})
	}
	compiler.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)
	var conds, msgs, audits []plugincel.ExpressionAccessor
	for _, v := range p.Spec.Validations {
		conds = append(conds, &validating.ValidationCondition{Expression: v.Expression, Reason: v.Reason})
		if v.MessageExpression != "" {
			msgs = append(msgs, &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression})
		} else {
			msgs = append(msgs, nil)
		}
	}
	for _, a := range p.Spec.AuditAnnotations {
		audits = append(audits, &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression})
	}
	var matcher matchconditions.Matcher
	if len(p.Spec.MatchConditions) > 0 {
		var ms []plugincel.ExpressionAccessor
		for i := range p.Spec.MatchConditions {
			ms = append(ms, (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]))
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(ms, opts, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	return &evaluator{v: validating.NewValidator(
		compiler.CompileCondition(conds, opts, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(audits, opts, environment.StoredExpressions),
		compiler.CompileCondition(msgs, msgOpts, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil,
	)}
}

// rbac is the authorizer: the verbs on lockctl's virtual resource each
// user has.
type rbac map[string][]string

func (r rbac) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, v := range r[a.GetUser().GetName()] {
		if v == a.GetVerb() && a.GetAPIGroup() == APIGroup && a.GetResource() == Resource {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// req is one request to the API server, as admission sees it.
type req struct {
	op          admission.Operation
	user        string
	extra       map[string][]string
	resource    schema.GroupVersionResource
	kind        schema.GroupVersionKind
	subresource string
	namespace   string
	name        string
	object      map[string]any
	old         map[string]any
	options     runtime.Object
}

// verdict is what the policy said: refused (with its message), or not;
// skipped when the match conditions left the request alone.
type verdict struct {
	refused bool
	skipped bool
	message string
	err     string
}

func (e *evaluator) run(t *testing.T, r req, params runtime.Object, rights rbac) verdict {
	t.Helper()
	var obj, old runtime.Object
	// Cases share their objects' maps and run in parallel: each run sets
	// the kind on a copy of its own.
	if r.object != nil {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(r.object)}
		u.SetGroupVersionKind(r.kind)
		obj = u
	}
	if r.old != nil {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(r.old)}
		u.SetGroupVersionKind(r.kind)
		old = u
	}
	attrs := admission.NewAttributesRecord(obj, old, r.kind, r.namespace, r.name, r.resource, r.subresource, r.op, r.options, false,
		&user.DefaultInfo{Name: r.user, Extra: r.extra})
	va, err := admission.NewVersionedAttributes(attrs, r.kind, nil)
	require.NoError(t, err)
	res := e.v.Validate(t.Context(), r.resource, va, params, nil, celconfig.RuntimeCELCostBudget, rights)
	var out verdict
	for _, d := range res.Decisions {
		switch {
		case d.Evaluation == validating.EvalError:
			out.err += d.Message + "; "
		case d.Action == validating.ActionDeny:
			out.refused = true
			out.message += d.Message
		}
	}
	if len(res.Decisions) == 0 {
		out.skipped = true
	}
	return out
}

// times are the request times of the tests: t0 and seconds after it.
var t0 = time.Date(2026, 12, 7, 22, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func rfc(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func micro(t time.Time) string { return t.UTC().Format(metav1.RFC3339Micro) }

// contains reports whether every one of subs is in s.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
