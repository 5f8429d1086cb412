package enforce

import (
	"crypto/sha256"
	_ "embed" // the policy's CEL
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/lockctl/lockctl/lock/record"

	"sigs.k8s.io/yaml"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Mode is how the API server acts on a write the policy refuses.
type Mode string

const (
	// ModeWarn admits the write and returns the refusal as a warning,
	// which kubectl prints, and records it in the audit log: the first
	// step of a rollout.
	ModeWarn Mode = "warn"
	// ModeAudit admits the write and only records the refusal in the
	// audit log.
	ModeAudit Mode = "audit"
	// ModeDeny refuses the write.
	ModeDeny Mode = "deny"
)

// ParseMode returns the mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeWarn, ModeAudit, ModeDeny:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q: use %q, %q or %q", s, ModeWarn, ModeAudit, ModeDeny)
}

// actions are the binding's validation actions of m.
func (m Mode) actions() []admissionregistrationv1.ValidationAction {
	switch m {
	case ModeDeny:
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	case ModeAudit:
		return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	}
	return []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
}

// modeOf is the mode of a binding's validation actions.
func modeOf(actions []admissionregistrationv1.ValidationAction) Mode {
	switch {
	case slices.Contains(actions, admissionregistrationv1.Deny):
		return ModeDeny
	case slices.Contains(actions, admissionregistrationv1.Warn):
		return ModeWarn
	}
	return ModeAudit
}

// Kind is a guarded resource: its API group ("" for core) and plural
// resource name.
type Kind struct {
	Group    string
	Resource string
}

// String renders the kind as kubectl names it: resource.group, or the
// resource alone for the core group.
func (k Kind) String() string {
	if k.Group == "" {
		return k.Resource
	}
	return k.Resource + "." + k.Group
}

// ParseKind parses a kind as kubectl names it: "deployments.apps",
// "services", "ingresses.networking.k8s.io".
func ParseKind(s string) (Kind, error) {
	res, group, _ := strings.Cut(strings.TrimSpace(s), ".")
	if errs := validation.IsDNS1123Label(res); res == "" || len(errs) > 0 {
		return Kind{}, fmt.Errorf("kind %q is not a plural resource name such as deployments.apps or services", s)
	}
	if group != "" {
		if errs := validation.IsDNS1123Subdomain(group); len(errs) > 0 {
			return Kind{}, fmt.Errorf("kind %q: API group %q is not a DNS subdomain", s, group)
		}
	}
	return Kind{Group: group, Resource: res}, nil
}

// DefaultKinds are the kinds a deploy writes: workloads, their services
// and configuration, ingresses, autoscalers and disruption budgets.
var DefaultKinds = []Kind{
	{"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "daemonsets"}, {"apps", "replicasets"},
	{"batch", "jobs"}, {"batch", "cronjobs"},
	{"", "services"}, {"", "configmaps"}, {"", "secrets"},
	{"networking.k8s.io", "ingresses"},
	{"autoscaling", "horizontalpodautoscalers"},
	{"policy", "poddisruptionbudgets"},
}

// scalable are the kinds whose scale subresource is guarded with them.
var scalable = []Kind{{"apps", "deployments"}, {"apps", "statefulsets"}, {"apps", "replicasets"}}

// Settings describe the enforcement of one target's lock.
type Settings struct {
	// Target is the namespace whose writes are fenced.
	Target string
	// LockNamespace is where the target's lock lives.
	LockNamespace string
	// Mode is how refusals are acted on; "" means ModeWarn.
	Mode Mode
	// RequireHolder refuses writes while nobody holds the lock; false
	// admits them.
	RequireHolder bool
	// Strict also requires, while the lock is held, the current fencing
	// token in the written object's TokenAnnotation, so that a build whose
	// hold ended is refused even as the holder's user.
	Strict bool
	// Kinds are the guarded kinds; nil means DefaultKinds.
	Kinds []Kind
	// Agents are users admitted as the holder's agent while the lock is
	// held (a GitOps controller that applies what the holder committed);
	// never while frozen, and in strict mode only with the token.
	Agents []string
	// Exempt are users the policy never checks, besides the system's own
	// (see SystemUser): lockctl's reconcile loop, a cluster's operators.
	Exempt []string
}

// TokenAnnotation is where a written object carries the fencing token of
// the hold it was written under, for strict mode (lockctl stamp sets it).
const TokenAnnotation = "lockctl.dev/fencing-token"

// Labels and annotations of the policy objects.
const (
	// KindValue is the lock.KindLabel of the policy and binding.
	KindValue = "enforce"
	// RequireHolderAnnotation and StrictAnnotation record the settings
	// on the policy, for status.
	RequireHolderAnnotation = "enforce.lockctl.dev/require-holder"
	StrictAnnotation        = "enforce.lockctl.dev/strict"
	// ProbeAnnotation marks the dry-run request Install sends to see the
	// policy in effect; the policy refuses it always.
	ProbeAnnotation = "enforce.lockctl.dev/probe"
	// DigestAnnotation records Settings.Digest on the policy; the probe's
	// refusal quotes it.
	DigestAnnotation = "enforce.lockctl.dev/settings"
	// APIGroup and Resource name lockctl's virtual resource, on which the
	// rights are granted with RBAC: verbs VerbBreakGlass, VerbForce.
	APIGroup = "lockctl.dev"
	Resource = "locks"
	// VerbBreakGlass lets a user write the target whatever the lock says;
	// the write is admitted with an audit annotation.
	VerbBreakGlass = "breakglass"
	// VerbForce lets a user change or delete the lock's record out of
	// turn (lockctl release --force).
	VerbForce = "force"
	// VerbFreeze lets a user set or change a freeze (lockctl freeze);
	// VerbUnfreeze lets one lift a freeze before it ends (lockctl
	// unfreeze). Freezes written from freeze windows need neither.
	VerbFreeze   = "freeze"
	VerbUnfreeze = "unfreeze"
	// AuditKey is the audit annotation (prefixed with the policy's name
	// by the API server) of a write the lock refuses; the audit event's
	// response says whether break-glass (or warn or audit mode) admitted it.
	AuditKey = "refused-by-lock"
)

// Name is the name of the policy and binding of target.
func Name(target string) string { return "lockctl-enforce-" + target }

// Validate checks the settings.
func (s Settings) Validate() error {
	if errs := validation.IsDNS1123Label(s.Target); len(errs) > 0 {
		return fmt.Errorf("target %q is not a namespace name: %s", s.Target, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Label(s.LockNamespace); len(errs) > 0 {
		return fmt.Errorf("lock namespace %q is not a namespace name: %s", s.LockNamespace, strings.Join(errs, "; "))
	}
	if s.Mode != "" {
		if _, err := ParseMode(string(s.Mode)); err != nil {
			return err
		}
	}
	for _, u := range append(slices.Clone(s.Agents), s.Exempt...) {
		if strings.TrimSpace(u) == "" {
			return fmt.Errorf("an empty user name cannot be an agent or exempt")
		}
	}
	return nil
}

func (s Settings) kinds() []Kind {
	if s.Kinds == nil {
		return DefaultKinds
	}
	return s.Kinds
}

func (s Settings) mode() Mode {
	if s.Mode == "" {
		return ModeWarn
	}
	return s.Mode
}

// SystemUser reports whether the policy never checks user: the API
// server's and the control plane's own users (system:... except service
// accounts), nodes, and the service accounts of kube-system (the
// controllers, the garbage collector).
func SystemUser(user string) bool {
	const sa = "system:serviceaccount:"
	return strings.HasPrefix(user, "system:") && !strings.HasPrefix(user, sa) ||
		strings.HasPrefix(user, sa+"kube-system:")
}

// policyCEL is the CEL of the policy, a template of one target's settings
// (policy.cel.yaml says how it is read).
//
//go:embed policy.cel.yaml
var policyCEL string

// policyParts are the parts of policyCEL, rendered for one target.
type policyParts struct {
	MatchConditions  []admissionregistrationv1.MatchCondition  `json:"matchConditions"`
	Variables        []admissionregistrationv1.Variable        `json:"variables"`
	Validations      []admissionregistrationv1.Validation      `json:"validations"`
	AuditAnnotations []admissionregistrationv1.AuditAnnotation `json:"auditAnnotations"`
}

// celValues are what policyCEL is rendered with.
type celValues struct {
	Settings
	Name, LockName, TurnName, LockRef, Digest string
	Guarded                                   []string
	TokenAnnotation, AuditKey, WindowsBy      string
	K                                         summaryKeys
}

// summaryKeys are the annotations of the lock the policy reads, by the
// names policyCEL gives them.
type summaryKeys struct {
	Prefix, Record, Updated, Holder, HolderUser, HolderCredential, HolderApps string
	Since, Expires, Token, TokenPending, NextUser, WaiterUsers                string
	Frozen, Freeze, FreezeUntil, FreezeWindow, Windows, WindowsUntil          string
	BreakGlassUser, BreakGlassState, BreakGlass, Enforced, Probe              string
}

var keys = summaryKeys{
	Prefix: record.SummaryPrefix, Record: record.RecordAnnotation, Updated: record.SummaryUpdatedAnnotation,
	Holder: record.SummaryHolderAnnotation, HolderUser: record.SummaryHolderUserAnnotation,
	HolderCredential: record.SummaryHolderCredentialAnnotation, HolderApps: record.SummaryPrefix + "holder-apps",
	Since: record.SummarySinceAnnotation, Expires: record.SummaryExpiresAnnotation,
	Token: record.SummaryTokenAnnotation, TokenPending: record.SummaryTokenPendingAnnotation,
	NextUser: record.SummaryNextUserAnnotation, WaiterUsers: record.SummaryWaiterUsersAnnotation,
	Frozen: record.SummaryFrozenAnnotation, Freeze: record.SummaryFreezeAnnotation,
	FreezeUntil: record.SummaryFreezeUntilAnnotation, FreezeWindow: record.SummaryFreezeWindowAnnotation,
	Windows: record.SummaryWindowsAnnotation, WindowsUntil: record.SummaryWindowsUntilAnnotation,
	BreakGlassUser: record.BreakGlassUserAnnotation, BreakGlassState: record.BreakGlassStateAnnotation,
	BreakGlass: record.BreakGlassAnnotation, Enforced: record.EnforcedAnnotation, Probe: ProbeAnnotation,
}

// celFuncs render settings into CEL: q a string literal, list a list of
// strings, rights the authorizer's answer on a verb of the target's lock.
func celFuncs(s Settings) template.FuncMap {
	q := strconv.Quote
	return template.FuncMap{
		"q": q,
		"list": func(ss []string) string {
			quoted := make([]string, len(ss))
			for i, s := range ss {
				quoted[i] = q(s)
			}
			return "[" + strings.Join(quoted, ", ") + "]"
		},
		"rights": func(verb string) string {
			return fmt.Sprintf("authorizer.group(%s).resource(%s).namespace(%s).name(%s).check(%s).allowed()",
				q(APIGroup), q(Resource), q(s.LockNamespace), q(s.Target), q(verb))
		},
	}
}

// render returns the parts of the policy of s.
func (s Settings) render() policyParts {
	v := celValues{
		Settings: s, Name: Name(s.Target), LockName: record.Name(s.Target), TurnName: record.TurnName(s.Target),
		LockRef: s.LockNamespace + "/" + record.Name(s.Target), Digest: s.Digest(),
		TokenAnnotation: TokenAnnotation, AuditKey: AuditKey, K: keys,
		WindowsBy: " by configmap/" + record.FreezeWindowsName + "@",
	}
	v.Mode = s.mode()
	for _, k := range s.kinds() {
		v.Guarded = append(v.Guarded, k.Group+"/"+k.Resource)
	}
	var out strings.Builder
	// NOTE: a template or a document that does not parse is a bug of
	// this package, which TestPolicyCompiles finds.
	if err := template.Must(template.New("policy").Funcs(celFuncs(s)).Parse(policyCEL)).Execute(&out, v); err != nil {
		panic(fmt.Sprintf("render the policy of %q: %v", s.Target, err))
	}
	var parts policyParts
	if err := yaml.UnmarshalStrict([]byte(out.String()), &parts); err != nil {
		panic(fmt.Sprintf("read the policy of %q: %v", s.Target, err))
	}
	return parts
}

// Digest names the settings that make the policy: the probe's refusal
// quotes it, so that lockctl enforce waits for the policy it installed
// rather than the one before it.
func (s Settings) Digest() string {
	s.Mode = ""
	b, _ := json.Marshal(struct {
		Settings
		CEL string
	}{s, policyCEL})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Policy returns the ValidatingAdmissionPolicy of s.
func Policy(s Settings) *admissionregistrationv1.ValidatingAdmissionPolicy {
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	allOps := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}

	// The rules: the guarded kinds, their scale, and ConfigMaps (the lock).
	byGroup := map[string][]string{"": {"configmaps"}}
	for _, k := range s.kinds() {
		if !slices.Contains(byGroup[k.Group], k.Resource) {
			byGroup[k.Group] = append(byGroup[k.Group], k.Resource)
		}
		if slices.Contains(scalable, k) {
			byGroup[k.Group] = append(byGroup[k.Group], k.Resource+"/scale")
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var rules []admissionregistrationv1.NamedRuleWithOperations
	for _, g := range groups {
		rules = append(rules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: allOps,
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{g}, APIVersions: []string{"*"}, Resources: byGroup[g]},
		}})
	}
	parts := s.render()
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(s, Name(s.Target)),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: namespaces(s),
				ResourceRules:     rules,
				MatchPolicy:       &equivalent,
			},
			MatchConditions:  parts.MatchConditions,
			Variables:        parts.Variables,
			Validations:      parts.Validations,
			AuditAnnotations: parts.AuditAnnotations,
		},
	}
	p.Annotations[DigestAnnotation] = s.Digest()
	if s.RequireHolder {
		p.Annotations[RequireHolderAnnotation] = "true"
	}
	if s.Strict {
		p.Annotations[StrictAnnotation] = "true"
	}
	return p
}

// namespaces selects the target and the lock namespace.
func namespaces(s Settings) *metav1.LabelSelector {
	values := []string{s.Target}
	if s.LockNamespace != s.Target {
		values = append(values, s.LockNamespace)
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: values,
	}}}
}

// Binding returns the ValidatingAdmissionPolicyBinding of s: the policy
// with the lock's ConfigMap as its parameter. A target without a lock has
// no parameter, and its writes are admitted, with RequireHolder too:
// refusing them would refuse the write that creates the lock, and lock
// everyone out. The lock's creation is judged by CreateGuard instead.
func Binding(s Settings) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	notFound := admissionregistrationv1.AllowAction
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(s, Name(s.Target)),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: Name(s.Target),
			ParamRef: &admissionregistrationv1.ParamRef{
				Name: record.Name(s.Target), Namespace: s.LockNamespace, ParameterNotFoundAction: &notFound,
			},
			ValidationActions: s.mode().actions(),
		},
	}
}

// CreateName is the name of the policy and binding that judge the
// creation of the lock of target (CreateGuard).
func CreateName(target string) string { return Name(target) + "-create" }

// CreateGuard returns the policy and binding that refuse creating the
// lock of s.Target without the enforced mark (lock.EnforcedAnnotation):
// the main policy cannot judge it, having no parameter before the lock
// exists. A lock deleted and created again by the next contender so keeps
// its mark, and that contender records its user. The refusal names the
// mark in brackets, which a lockctl reads to add it and try again.
func CreateGuard(s Settings) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	fail := admissionregistrationv1.Fail
	name := CreateName(s.Target)
	q := strconv.Quote
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(s, name),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{s.LockNamespace},
				}}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "the-lock", Expression: "request.name == " + q(record.Name(s.Target))}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.?metadata.?annotations[?" + q(record.EnforcedAnnotation) + "].orValue('') != ''",
				Message: fmt.Sprintf("lockctl refused creating lock %s/%s: namespace %s is enforced (policy %s), and a new lock must be marked so [lockctl-enforced=%s]; lockctl 1.9 or later marks it",
					s.LockNamespace, record.Name(s.Target), s.Target, Name(s.Target), s.mode()),
				Reason: ptr(metav1.StatusReasonForbidden),
			}},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(s, name),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return p, b
}

func objectMeta(s Settings, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			record.ManagedByLabel: record.ManagedByValue,
			record.KindLabel:      KindValue,
			record.TargetLabel:    s.Target,
		},
		Annotations: map[string]string{
			record.PurposeAnnotation: fmt.Sprintf("lockctl enforces the deploy lock of namespace %q (lock %s/%s): inspect with `lockctl status %s`, remove with `lockctl enforce %s --uninstall`",
				s.Target, s.LockNamespace, record.Name(s.Target), s.Target, s.Target),
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Manifests returns the policies and bindings of each of settings, in
// order: what Install installs, for a GitOps repository to apply instead.
func Manifests(settings ...Settings) []any {
	objs := make([]any, 0, 4*len(settings))
	for _, s := range settings {
		gp, gb := CreateGuard(s)
		objs = append(objs, Policy(s), Binding(s), gp, gb)
	}
	return objs
}
