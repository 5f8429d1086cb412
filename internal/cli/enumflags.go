package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/term"
	"github.com/lockctl/lockctl/lock"
)

// policyFlag is an enum flag for --policy.
type policyFlag struct{ p *lock.Policy }

func (f policyFlag) String() string { return string(*f.p) }
func (f policyFlag) Type() string   { return "newest|fifo" }

// Allowed lists the values, for completion.
func (f policyFlag) Allowed() []string { return []string{"newest", "fifo"} }
func (f policyFlag) Set(s string) error {
	p, err := lock.ParsePolicy(s)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

// AddPolicyFlag binds --policy to p.
func AddPolicyFlag(fs *pflag.FlagSet, p *lock.Policy) {
	fs.Var(policyFlag{p}, "policy", "who waits when the lock is created: newest (older builds of a branch give up) or fifo")
}

// priorityFlag is an enum flag for --priority.
type priorityFlag struct{ p *lock.Priority }

func (f priorityFlag) String() string { return string(*f.p) }
func (f priorityFlag) Type() string   { return "high|normal|low" }

// Allowed lists the values, for completion.
func (f priorityFlag) Allowed() []string { return []string{"high", "normal", "low"} }
func (f priorityFlag) Set(s string) error {
	p, err := lock.ParsePriority(s)
	if err != nil {
		return err
	}
	*f.p = p
	return nil
}

// AddPriorityFlag binds --priority to p.
func AddPriorityFlag(fs *pflag.FlagSet, p *lock.Priority) {
	fs.Var(priorityFlag{p}, "priority", "place in the queue: high waits ahead of normal, normal ahead of low; a waiter rises one level every "+
		term.HumanDuration(lock.PriorityAgeing)+" it waits; never displaces the holder")
}

// jobEventsFlag is an enum flag for --job-events.
type jobEventsFlag struct{ e *events.JobEvents }

func (f jobEventsFlag) String() string { return string(*f.e) }
func (f jobEventsFlag) Type() string   { return strings.Join(events.JobEventsValues, "|") }

// Allowed lists the values, for completion.
func (f jobEventsFlag) Allowed() []string { return events.JobEventsValues }
func (f jobEventsFlag) Set(s string) error {
	e, err := events.ParseJobEvents(s)
	if err != nil {
		return err
	}
	*f.e = e
	return nil
}

// AddJobEventsFlag binds --job-events to e.
func AddJobEventsFlag(fs *pflag.FlagSet, e *events.JobEvents) {
	fs.Var(jobEventsFlag{e}, "job-events", "job state changes recorded as Events: all, warnings (failures, errors, timeouts, aborts, lost pods) or none")
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
