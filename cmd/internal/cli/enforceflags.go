package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/enforce"
)

// EnforceFlags are how lockctl enforce has the API server enforce a lock
// (enforce.Settings): --mode, --require-holder, --strict, --kinds, --agent
// and --exempt.
type EnforceFlags struct {
	Mode          string
	RequireHolder bool
	Strict        bool
	// Kinds are the guarded kinds as resource.group.
	Kinds  []string
	Agents []string
	Exempt []string
	// Force enforces the lock namespace itself, a system namespace, or a
	// lock held without a Kubernetes user (enforce.EnforceOptions).
	Force bool
}

// NewEnforceFlags returns the group with its defaults: warn mode, the
// default kinds.
func NewEnforceFlags() EnforceFlags {
	e := EnforceFlags{Mode: string(enforce.ModeWarn)}
	for _, k := range enforce.DefaultKinds {
		e.Kinds = append(e.Kinds, k.String())
	}
	return e
}

// AddFlags binds the group.
func (e *EnforceFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&e.Mode, "mode", e.Mode, "what the API server does with a refused write: warn, audit or deny")
	fs.BoolVar(&e.RequireHolder, "require-holder", e.RequireHolder, "refuse writes while nobody holds the lock")
	fs.BoolVar(&e.Strict, "strict", e.Strict, "also require the hold's fencing token in annotation lockctl.dev/fencing-token of the object written")
	fs.StringSliceVar(&e.Kinds, "kinds", e.Kinds, "the guarded kinds, as resource.group")
	fs.StringArrayVar(&e.Agents, "agent", e.Agents, "a user admitted as the holder's agent while the lock is held, such as a GitOps controller (repeatable)")
	fs.StringArrayVar(&e.Exempt, "exempt", e.Exempt, "a user the policy never checks, such as lockctl's reconcile loop (repeatable)")
	fs.BoolVar(&e.Force, "force", e.Force, "enforce even the lock namespace, a system namespace, or a lock held without a Kubernetes user")
}

// Validate checks --mode, --kinds (at least one) and the users of --agent
// and --exempt.
func (e *EnforceFlags) Validate() error {
	if _, err := enforce.ParseMode(e.Mode); err != nil {
		return cmdutil.FlagErrorf("invalid --mode: %v", err)
	}
	kinds, err := e.kinds()
	if err != nil {
		return cmdutil.FlagErrorf("invalid --kinds: %v", err)
	}
	if len(kinds) == 0 {
		return cmdutil.FlagErrorf("--kinds is empty: name at least one kind to guard, such as deployments.apps")
	}
	for _, u := range append(append([]string{}, e.Agents...), e.Exempt...) {
		if strings.TrimSpace(u) == "" {
			return cmdutil.FlagErrorf("--agent and --exempt take a user name, got an empty one")
		}
	}
	return nil
}

func (e *EnforceFlags) kinds() ([]enforce.Kind, error) {
	var kinds []enforce.Kind
	for _, k := range e.Kinds {
		kind, err := enforce.ParseKind(k)
		if err != nil {
			return nil, err
		}
		kinds = append(kinds, kind)
	}
	return kinds, nil
}

// Settings are the settings of the lock of target in lockNS, once
// Validate has passed.
func (e *EnforceFlags) Settings(target, lockNS string) enforce.Settings {
	kinds, _ := e.kinds() // checked by Validate
	return enforce.Settings{
		Target: target, LockNamespace: lockNS, Mode: enforce.Mode(e.Mode),
		RequireHolder: e.RequireHolder, Strict: e.Strict, Kinds: kinds, Agents: e.Agents, Exempt: e.Exempt,
	}
}
