package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock/record"
)

// parsedFlag is an enum flag whose values its package parses (--policy,
// --priority, --job-events).
type parsedFlag[T ~string] struct {
	v       *T
	allowed []string
	parse   func(string) (T, error)
}

func (f parsedFlag[T]) String() string { return string(*f.v) }
func (f parsedFlag[T]) Type() string   { return strings.Join(f.allowed, "|") }

// Allowed lists the values, for completion.
func (f parsedFlag[T]) Allowed() []string { return f.allowed }
func (f parsedFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.v = v
	return nil
}

// AddPolicyFlag binds --policy to p.
func AddPolicyFlag(fs *pflag.FlagSet, p *record.Policy) {
	fs.Var(parsedFlag[record.Policy]{p, []string{"newest", "fifo"}, record.ParsePolicy}, "policy",
		"who waits when the lock is created: newest (older builds of a branch give up) or fifo")
}

// AddPriorityFlag binds --priority to p.
func AddPriorityFlag(fs *pflag.FlagSet, p *record.Priority) {
	fs.Var(parsedFlag[record.Priority]{p, []string{"high", "normal", "low"}, record.ParsePriority}, "priority",
		"place in the queue: high waits ahead of normal, normal ahead of low; a waiter rises one level every "+
			human.Duration(record.PriorityAgeing)+" it waits; never displaces the holder")
}

// AddAppFlag binds --app to apps: repeatable, each value one application
// or several separated by commas (as $LOCKCTL_APP lists them).
func AddAppFlag(fs *pflag.FlagSet, apps *[]record.App) {
	fs.Var(appsFlag{apps}, "app", "a GitOps application the hold deploys, whose controller an enforced lock admits for it: "+
		"`APP` is argocd/NAME, argocd/NAMESPACE/NAME, flux/kustomization/NAMESPACE/NAME or flux/helmrelease/NAMESPACE/NAME (repeatable)")
}

// appsFlag is --app: applications parsed by lock.ParseApps.
type appsFlag struct{ v *[]record.App }

func (f appsFlag) Type() string { return "stringArray" }
func (f appsFlag) String() string {
	if len(*f.v) == 0 {
		return ""
	}
	s := make([]string, len(*f.v))
	for i, a := range *f.v {
		s[i] = a.String()
	}
	return "[" + strings.Join(s, ",") + "]"
}

func (f appsFlag) Set(v string) error {
	all := make([]string, 0, len(*f.v)+1)
	for _, a := range *f.v {
		all = append(all, a.String())
	}
	apps, err := record.ParseApps(append(all, strings.Split(v, ",")...))
	if err != nil {
		return err
	}
	*f.v = apps
	return nil
}

// AddJobEventsFlag binds --job-events to e.
func AddJobEventsFlag(fs *pflag.FlagSet, e *events.JobEvents) {
	fs.Var(parsedFlag[events.JobEvents]{e, events.JobEventsValues, events.ParseJobEvents}, "job-events",
		"job state changes recorded as Events: all, warnings (failures, errors, timeouts, aborts, lost pods) or none")
}

// enumFlag is a string flag taking one of a fixed set of values (-o,
// wait's --for).
type enumFlag struct {
	v       *string
	allowed []string
}

func (f enumFlag) String() string { return *f.v }
func (f enumFlag) Type() string   { return strings.Join(f.allowed, "|") }

// Allowed lists the values, for completion.
func (f enumFlag) Allowed() []string { return f.allowed }
func (f enumFlag) Set(s string) error {
	for _, a := range f.allowed {
		if s == a {
			*f.v = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
}

// EnumFlag returns a flag value setting v to one of allowed; other values
// are refused naming them, and completion offers them.
func EnumFlag(v *string, allowed ...string) pflag.Value {
	return enumFlag{v: v, allowed: allowed}
}

// AddOutputFlag binds -o/--output to v, one of allowed.
func AddOutputFlag(fs *pflag.FlagSet, v *string, allowed ...string) {
	fs.VarP(EnumFlag(v, allowed...), "output", "o", "output format: "+strings.Join(allowed, ", "))
}
