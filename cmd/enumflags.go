package cmd

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

// addPriorityFlag binds --priority to p.
func addPriorityFlag(fs *pflag.FlagSet, p *lock.Priority) {
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

// outputFlag is an enum flag for -o.
type outputFlag struct {
	v       *string
	allowed []string
}

func (f outputFlag) String() string { return *f.v }
func (f outputFlag) Type() string   { return strings.Join(f.allowed, "|") }

// Allowed lists the values, for completion.
func (f outputFlag) Allowed() []string { return f.allowed }
func (f outputFlag) Set(s string) error {
	for _, a := range f.allowed {
		if s == a {
			*f.v = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(f.allowed, ", "))
}

func addOutputFlag(fs *pflag.FlagSet, v *string, allowed ...string) {
	fs.VarP(outputFlag{v: v, allowed: allowed}, "output", "o", "output format: "+strings.Join(allowed, ", "))
}
