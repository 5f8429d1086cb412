package enforce

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockctl/lockctl/lock"
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

// q renders s as a CEL string literal.
func q(s string) string { return strconv.Quote(s) }

// list renders ss as a CEL list of strings.
func list(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = q(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// ann is the CEL of annotation key of obj ("params", "object",
// "oldObject"), "" when obj is null or has no such annotation.
func ann(obj, key string) string {
	return fmt.Sprintf("(%[1]s != null && has(%[1]s.metadata.annotations) && %[2]s in %[1]s.metadata.annotations ? %[1]s.metadata.annotations[%[2]s] : '')", obj, q(key))
}

// fresh is the CEL that says obj carries a summary made from its record.
func fresh(obj string) string {
	return fmt.Sprintf("(%[1]s != '' && %[2]s.contains('\"updated\":\"' + %[1]s + '\"'))",
		ann(obj, lock.SummaryUpdatedAnnotation), ann(obj, lock.RecordAnnotation))
}

// manualFreeze is the CEL of the description of obj's freeze when it is
// one set with lockctl freeze, ” when there is none or it is a freeze
// window's. A summary without freeze-window (lockctl 0.2.0) tells a
// window's freeze by who set it (lock.Freeze.FromWindow).
func manualFreeze(obj, fresh string) string {
	desc := ann(obj, lock.SummaryFreezeAnnotation)
	return fmt.Sprintf("%s && %s == 'true' && %s == '' && !%s.contains(%s) ? %s : ''",
		fresh, ann(obj, lock.SummaryFrozenAnnotation), ann(obj, lock.SummaryFreezeWindowAnnotation),
		desc, q(" by configmap/"+lock.FreezeWindowsName+"@"), desc)
}

// freezeUntil is the CEL of the end of obj's freeze: its freeze-until,
// else the time its description starts with (lock.Freeze.Describe: a
// summary without freeze-until), else ”.
func freezeUntil(obj string) string {
	desc := ann(obj, lock.SummaryFreezeAnnotation)
	return fmt.Sprintf("%[1]s != '' ? %[1]s : %[2]s.startsWith('frozen until ') && %[2]s.indexOf(' by ') > 13 ? %[2]s.substring(13, %[2]s.indexOf(' by ')) : ''",
		ann(obj, lock.SummaryFreezeUntilAnnotation), desc)
}

// Policy returns the ValidatingAdmissionPolicy of s.
func Policy(s Settings) *admissionregistrationv1.ValidatingAdmissionPolicy {
	lockName := lock.Name(s.Target)
	fail := admissionregistrationv1.Fail
	equivalent := admissionregistrationv1.Equivalent
	allOps := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete}

	// The rules: the guarded kinds, their scale, and ConfigMaps (the lock).
	byGroup := map[string][]string{"": {"configmaps"}}
	var guarded []string
	for _, k := range s.kinds() {
		if !slices.Contains(byGroup[k.Group], k.Resource) {
			byGroup[k.Group] = append(byGroup[k.Group], k.Resource)
		}
		guarded = append(guarded, k.Group+"/"+k.Resource)
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
	namespaces := []string{s.Target}
	if s.LockNamespace != s.Target {
		namespaces = append(namespaces, s.LockNamespace)
	}

	user := "request.userInfo.username"
	isLock := fmt.Sprintf("request.namespace == %s && request.resource.group == '' && request.resource.resource == 'configmaps' && request.name == %s",
		q(s.LockNamespace), q(lockName))
	isProbe := fmt.Sprintf("request.namespace == %s && request.resource.resource == 'configmaps' && %s != ''", q(s.Target), ann("object", ProbeAnnotation))
	isGuarded := fmt.Sprintf("request.namespace == %s && %s.exists(k, k == request.resource.group + '/' + request.resource.resource) && (!has(request.subResource) || request.subResource in ['', 'scale'])",
		q(s.Target), list(guarded))
	system := fmt.Sprintf("(%[1]s.startsWith('system:') && !%[1]s.startsWith('system:serviceaccount:')) || %[1]s.startsWith('system:serviceaccount:kube-system:')", user)
	// The lock's turn object is a hint every waiter may write (see
	// lock.TurnName): it never decides who holds the lock.
	isTurn := fmt.Sprintf("request.namespace == %s && request.resource.group == '' && request.resource.resource == 'configmaps' && request.name == %s",
		q(s.LockNamespace), q(lock.TurnName(s.Target)))
	conditions := []admissionregistrationv1.MatchCondition{
		{Name: "not-the-system", Expression: "!(" + system + ")"},
		{Name: "not-the-turn", Expression: "!(" + isTurn + ")"},
		{Name: "guarded-or-lock", Expression: fmt.Sprintf("(%s) || (%s) || (%s)", isGuarded, isLock, isProbe)},
	}
	if len(s.Exempt) > 0 {
		conditions = append(conditions, admissionregistrationv1.MatchCondition{Name: "not-exempt", Expression: fmt.Sprintf("!(%s in %s)", user, list(s.Exempt))})
	}

	rights := func(verb string) string {
		return fmt.Sprintf("authorizer.group(%s).resource(%s).namespace(%s).name(%s).check(%s).allowed()",
			q(APIGroup), q(Resource), q(s.LockNamespace), q(s.Target), q(verb))
	}
	strict := "true"
	if s.Strict {
		strict = "variables.stamped == variables.token"
	}
	whenFree := "true"
	if s.RequireHolder {
		whenFree = "false"
	}
	waiters := func(obj string) string {
		return fmt.Sprintf("%s.split('\\n').filter(w, w != '')", ann(obj, lock.SummaryWaiterUsersAnnotation))
	}
	vars := []admissionregistrationv1.Variable{
		{Name: "user", Expression: user},
		{Name: "isLock", Expression: isLock},
		{Name: "isProbe", Expression: isProbe},
		{Name: "fresh", Expression: fresh("params")},
		{Name: "holder", Expression: "variables.fresh ? " + ann("params", lock.SummaryHolderAnnotation) + " : ''"},
		{Name: "holderUser", Expression: "variables.fresh ? " + ann("params", lock.SummaryHolderUserAnnotation) + " : ''"},
		{Name: "since", Expression: ann("params", lock.SummarySinceAnnotation)},
		{Name: "token", Expression: fmt.Sprintf("!variables.fresh ? '' : %s == 'true' ? params.metadata.resourceVersion : %s",
			ann("params", lock.SummaryTokenPendingAnnotation), ann("params", lock.SummaryTokenAnnotation))},
		{Name: "frozen", Expression: "variables.fresh && " + ann("params", lock.SummaryFrozenAnnotation) + " == 'true'"},
		{Name: "freeze", Expression: ann("params", lock.SummaryFreezeAnnotation)},
		{Name: "agent", Expression: fmt.Sprintf("variables.user in %s", list(s.Agents))},
		{Name: "asHolder", Expression: "variables.holderUser == '' || variables.user == variables.holderUser || variables.agent"},
		{Name: "stamped", Expression: fmt.Sprintf("request.operation == 'DELETE' || (has(request.subResource) && request.subResource != '') ? variables.token : %s", ann("object", TokenAnnotation))},
		{Name: "admitted", Expression: fmt.Sprintf("variables.isLock ? true : variables.isProbe ? false : variables.frozen ? false : variables.holder != '' ? (variables.asHolder && %s) : %s", strict, whenFree)},
		// The break-glass grant (lock.BreakGlassUserAnnotation): it admits
		// its user while the lock is in the state it was granted in.
		{Name: "state", Expression: "variables.token + '|' + (variables.frozen ? variables.freeze : '')"},
		{Name: "granted", Expression: fmt.Sprintf("%s != '' && variables.user == %s && %s == variables.state",
			ann("params", lock.BreakGlassUserAnnotation), ann("params", lock.BreakGlassUserAnnotation), ann("params", lock.BreakGlassStateAnnotation))},
		{Name: "breakGlass", Expression: "!variables.isLock && !variables.isProbe && !variables.admitted && variables.granted"},
		// The lock's record: its version before (oldObject) and after
		// (object) the write.
		{Name: "oldHeld", Expression: fresh("oldObject") + " && " + ann("oldObject", lock.SummaryHolderAnnotation) + " != ''"},
		{Name: "oldUser", Expression: "variables.oldHeld ? " + ann("oldObject", lock.SummaryHolderUserAnnotation) + " : ''"},
		{Name: "oldHolder", Expression: "variables.oldHeld ? " + ann("oldObject", lock.SummaryHolderAnnotation) + " : ''"},
		{Name: "oldNext", Expression: ann("oldObject", lock.SummaryNextUserAnnotation)},
		{Name: "oldWaiters", Expression: waiters("oldObject")},
		{Name: "newFresh", Expression: fresh("object")},
		{Name: "newHolder", Expression: ann("object", lock.SummaryHolderAnnotation)},
		{Name: "newUser", Expression: ann("object", lock.SummaryHolderUserAnnotation)},
		{Name: "newWaiters", Expression: waiters("object")},
		// A freeze set with lockctl freeze (not from a window), before and
		// after the write; lapsed when the write is at or after its end.
		{Name: "oldFreeze", Expression: manualFreeze("oldObject", fresh("oldObject"))},
		{Name: "newFreeze", Expression: manualFreeze("object", "variables.newFresh")},
		{Name: "oldUntil", Expression: freezeUntil("oldObject")},
		{Name: "lapsed", Expression: fmt.Sprintf("variables.oldUntil != '' && %[1]s != '' && timestamp(%[1]s) >= timestamp(variables.oldUntil)", ann("object", lock.SummaryUpdatedAnnotation))},
		{Name: "newGrantee", Expression: ann("object", lock.BreakGlassUserAnnotation)},
		{Name: "grants", Expression: fmt.Sprintf("variables.isLock && variables.newGrantee != '' && (variables.newGrantee != %s || %s != %s || %s != %s)",
			ann("oldObject", lock.BreakGlassUserAnnotation), ann("object", lock.BreakGlassStateAnnotation), ann("oldObject", lock.BreakGlassStateAnnotation),
			ann("object", lock.BreakGlassAnnotation), ann("oldObject", lock.BreakGlassAnnotation))},
		{Name: "freezes", Expression: "variables.isLock && variables.newFreeze != '' && variables.newFreeze != variables.oldFreeze"},
		{Name: "unfreezes", Expression: "variables.isLock && variables.oldFreeze != '' && variables.newFreeze == '' && !variables.lapsed"},
		{Name: "recordOK", Expression: strings.Join([]string{
			"!variables.isLock ? true :",
			"request.operation == 'DELETE' ? (!variables.oldHeld || variables.user == variables.oldUser) :",
			"!variables.newFresh ? false :",
			"variables.newWaiters.all(w, w == variables.user || w in variables.oldWaiters) && (",
			"(variables.newHolder == variables.oldHolder && variables.newUser == variables.oldUser) ? true :",
			"variables.newHolder == '' ? (!variables.oldHeld || variables.user == variables.oldUser) :",
			"!variables.oldHeld ? (variables.newUser == variables.user || variables.newUser == '') :",
			"variables.user == variables.oldUser ? (variables.newUser == variables.user || variables.newUser == '' || variables.newUser in variables.oldWaiters) :",
			"(variables.user == variables.oldNext && variables.newUser == variables.user))",
		}, " ")},
	}

	lockRef := s.LockNamespace + "/" + lockName
	t := q(s.Target)
	targetMessage := strings.Join([]string{
		"'lockctl refused this write: ' + (",
		"variables.isProbe ? 'a probe of the policy of lock " + lockRef + ", which is in effect' :",
		"variables.frozen ? 'namespace ' + " + t + " + ' is frozen (' + variables.freeze + '; lock " + lockRef + "); wait for the freeze to end, or declare break-glass with `lockctl break-glass ' + " + t + " + ' --reason ...` (verb " + VerbBreakGlass + " on " + Resource + "." + APIGroup + " ' + " + t + " + ')' :",
		"variables.holder != '' && !variables.asHolder ? 'namespace ' + " + t + " + ' is locked by ' + variables.holder + ' (user ' + variables.holderUser + ') since ' + variables.since + ' with fencing token ' + variables.token + ' (lock " + lockRef + "); take your turn with `lockctl acquire ' + " + t + " + '`, wait for its release, or declare break-glass with `lockctl break-glass ' + " + t + " + ' --reason ...`' :",
		"variables.holder != '' ? 'the object does not carry the fencing token ' + variables.token + ' of the hold of ' + variables.holder + ' (lock " + lockRef + ") in annotation " + TokenAnnotation + " (it has \\'' + variables.stamped + '\\'): a build whose hold has ended may not write; stamp the manifests with `lockctl stamp` under the current hold' :",
		"'namespace ' + " + t + " + ' is written only by the holder of its lock " + lockRef + ", and nobody holds it; take it with `lockctl acquire ' + " + t + " + '` first')",
	}, " ")
	recordMessage := "'lockctl refused this change of lock " + lockRef + ": ' + (" +
		"request.operation != 'DELETE' && !variables.newFresh ? 'its summary annotations (" + lock.SummaryPrefix + "*) do not match its record; write it with lockctl 1.8 or later' : " +
		"'it would make ' + (variables.newUser == '' ? 'nobody' : variables.newUser) + ' holder out of turn, or record another user in its queue, as user ' + variables.user + " +
		"(variables.oldHeld ? ' while ' + variables.oldHolder + ' (user ' + variables.oldUser + ') holds it' : '') + '; use lockctl, or lockctl release --force with the right to (verb " + VerbForce + " on " + Resource + "." + APIGroup + ")')"

	grantMessage := "'lockctl refused this change of lock " + lockRef + ": ' + (variables.newGrantee != variables.user ? " +
		"'break-glass is declared by its user only, and this grants it to ' + variables.newGrantee + ', as user ' + variables.user : " +
		"'declaring break-glass takes verb " + VerbBreakGlass + " on " + Resource + "." + APIGroup + " ' + " + t + " + ', which user ' + variables.user + ' has not') + '; ask who grants the rights on the lock'"
	freezeMessage := "'lockctl refused this change of lock " + lockRef + ": ' + (variables.freezes ? " +
		"'freezing it (' + variables.newFreeze + ') takes verb " + VerbFreeze + "' : " +
		"'lifting its freeze (' + variables.oldFreeze + ') before it ends takes verb " + VerbUnfreeze + "') + ' on " + Resource + "." + APIGroup + " ' + " + t + " + ', which user ' + variables.user + ' has not; ask who grants the rights on the lock'"

	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: objectMeta(s),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: namespaces,
				}}},
				ResourceRules: rules,
				MatchPolicy:   &equivalent,
			},
			MatchConditions: conditions,
			Variables:       vars,
			Validations: []admissionregistrationv1.Validation{
				{Expression: "variables.admitted || variables.breakGlass", MessageExpression: targetMessage, Reason: ptr(metav1.StatusReasonForbidden)},
				{Expression: "variables.recordOK || " + rights(VerbForce), MessageExpression: recordMessage, Reason: ptr(metav1.StatusReasonForbidden)},
				{Expression: "!variables.grants || (variables.newGrantee == variables.user && " + rights(VerbBreakGlass) + ")", MessageExpression: grantMessage, Reason: ptr(metav1.StatusReasonForbidden)},
				{Expression: "variables.freezes ? " + rights(VerbFreeze) + " : variables.unfreezes ? " + rights(VerbUnfreeze) + " : true", MessageExpression: freezeMessage, Reason: ptr(metav1.StatusReasonForbidden)},
			},
			// NOTE: the API server evaluates audit annotations without the
			// authorizer; the grant needs none, so the annotation tells a
			// break-glass write (admitted) from a refused one (or one only
			// warned about in warn or audit mode).
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{
				Key: AuditKey,
				ValueExpression: "!variables.isLock && !variables.isProbe && !variables.admitted ? ('user ' + variables.user + ' wrote ' + request.resource.resource + ' ' + request.namespace + '/' + request.name + ' against lock " + lockRef +
					", ' + (variables.frozen ? variables.freeze : variables.holder != '' ? 'held by ' + variables.holder : 'free') + (variables.granted ? ': admitted by ' + " + ann("params", lock.BreakGlassAnnotation) + " : ': refused, or admitted in warn or audit mode')) : ''",
			}},
		},
	}
	if s.RequireHolder {
		p.Annotations[RequireHolderAnnotation] = "true"
	}
	if s.Strict {
		p.Annotations[StrictAnnotation] = "true"
	}
	return p
}

// Binding returns the ValidatingAdmissionPolicyBinding of s: the policy
// with the lock's ConfigMap as its parameter. A target without a lock has
// no parameter, and its writes are admitted, with RequireHolder too:
// refusing them would refuse the write that creates the lock, and lock
// everyone out. lockctl enforce creates the lock (lock.Client.Summarize)
// before it installs the policy.
func Binding(s Settings) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	notFound := admissionregistrationv1.AllowAction
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: objectMeta(s),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: Name(s.Target),
			ParamRef: &admissionregistrationv1.ParamRef{
				Name: lock.Name(s.Target), Namespace: s.LockNamespace, ParameterNotFoundAction: &notFound,
			},
			ValidationActions: s.mode().actions(),
		},
	}
}

func objectMeta(s Settings) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: Name(s.Target),
		Labels: map[string]string{
			lock.ManagedByLabel: lock.ManagedByValue,
			lock.KindLabel:      KindValue,
			lock.TargetLabel:    s.Target,
		},
		Annotations: map[string]string{
			lock.PurposeAnnotation: fmt.Sprintf("lockctl enforces the deploy lock of namespace %q (lock %s/%s): inspect with `lockctl status %s`, remove with `lockctl enforce %s --uninstall`",
				s.Target, s.LockNamespace, lock.Name(s.Target), s.Target, s.Target),
		},
	}
}

func ptr[T any](v T) *T { return &v }

// Manifests returns the policy and binding of each of settings, in order:
// what Install installs, for a GitOps repository to apply instead.
func Manifests(settings ...Settings) []any {
	objs := make([]any, 0, 2*len(settings))
	for _, s := range settings {
		objs = append(objs, Policy(s), Binding(s))
	}
	return objs
}
