package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/enforce"
)

// enforceOptions configure `lockctl enforce`.
type enforceOptions struct {
	f *Factory

	cli.LockFlags
	Targets []string
	cli.EnforceFlags
	Uninstall bool
	DryRun    bool
	Output    string
	Timeout   time.Duration
}

func newEnforceCmd(f *Factory, runF func(*enforceOptions) error) *cobra.Command {
	o := &enforceOptions{f: f, EnforceFlags: cli.NewEnforceFlags(), Timeout: 30 * time.Second}
	c := &cobra.Command{
		Use:   "enforce NAMESPACE [NAMESPACE...]",
		Short: "Make the API server refuse writes to a locked namespace from anyone but the holder",
		Long: cli.Doc(`
			Install, for each NAMESPACE, a ValidatingAdmissionPolicy and its
			binding (no webhook, no CRD) that make the API server enforce the
			namespace's deploy lock: while the lock is held, only the holder's
			Kubernetes user (recorded by acquire and run) may create, update,
			patch or delete the guarded kinds in the namespace; while it is
			frozen nobody may, except with break-glass; and nobody may write
			the lock's record to make someone holder out of turn.

			--mode warn (the default) admits every write and returns the
			refusal as a warning, which kubectl prints; audit only records it
			in the audit log; deny refuses. Roll out warn first, deny after.
			--strict also requires, while the lock is held, the hold's fencing
			token in the written object's annotation lockctl.dev/fencing-token
			(lockctl stamp sets it), so a build whose hold has ended is refused
			even as the holder's user. --require-holder refuses writes while
			nobody holds the lock.

			The system's own writers are never checked (control-plane users,
			nodes, kube-system's service accounts); --exempt adds users, such
			as lockctl's reconcile loop. --agent admits a user as the holder's
			agent while the lock is held (a GitOps controller). Break-glass and
			forced changes of the record are RBAC: verbs breakglass and force
			on resource locks of API group lockctl.dev, named by NAMESPACE, in
			the lock namespace (docs/enforcement.md).

			Enforcing again updates the policy to the flags given. In deny mode
			the command waits (up to --timeout) until the API server applies
			the policy, by a dry-run write the policy always refuses; the other
			modes take effect within seconds. --uninstall removes the policy
			and binding lockctl made, and nothing else; like rm -f, it succeeds
			when there is nothing to remove. --dry-run -o yaml prints the
			manifests instead, for GitOps.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Roll out: warn first, then deny
			lockctl enforce production
			lockctl enforce production --mode deny

			# Strictly, by the fencing token too, with Argo CD as the holder's agent
			lockctl enforce production --mode deny --strict \
			  --agent system:serviceaccount:argocd:argocd-application-controller

			# The manifests, for a GitOps repository
			lockctl enforce production --mode deny --dry-run -o yaml > enforce.yaml

			# Remove it
			lockctl enforce production --uninstall
		`),
		Args: cli.MinArgs(1),
		RunE: runE(o, runF, runEnforce, func(_ *cobra.Command, args []string) { o.Targets = args }),
	}
	fs := c.Flags()
	o.EnforceFlags.AddFlags(fs)
	fs.BoolVar(&o.Uninstall, "uninstall", o.Uninstall, "remove the policy and binding lockctl made")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "print the manifests (-o yaml or json) instead of installing them")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "in deny mode, how long to wait for the API server to apply the policy; 0 means no limit")
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	cli.AddOutputFlag(fs, &o.Output, "yaml", "json")
	return c
}

func (o *enforceOptions) validate() error {
	for _, t := range o.Targets {
		if err := cli.ValidateTarget(t); err != nil {
			return err
		}
	}
	if err := o.EnforceFlags.Validate(); err != nil {
		return err
	}
	switch {
	case o.Uninstall && o.DryRun:
		return cmdutil.FlagErrorf("--uninstall and --dry-run cannot be combined: --dry-run prints what enforce installs")
	case o.DryRun && o.Output == "":
		return cmdutil.FlagErrorf("--dry-run prints the manifests: add -o yaml or -o json")
	case !o.DryRun && o.Output != "":
		return cmdutil.FlagErrorf("-o prints the manifests of --dry-run: add --dry-run, or drop -o")
	case o.Timeout < 0:
		return cmdutil.FlagErrorf("invalid --timeout %s: it cannot be negative", o.Timeout)
	}
	return nil
}

func runEnforce(ctx context.Context, o *enforceOptions) error {
	if o.DryRun {
		lockNS, err := o.ResolveLockNamespace(o.f)
		if err != nil {
			return err
		}
		var settings []enforce.Settings
		for _, t := range o.Targets {
			settings = append(settings, o.Settings(t, lockNS))
		}
		return printers.Documents(o.f.IOStreams.Out, o.Output, enforce.Manifests(settings...))
	}
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	// NOTE: once per cluster, the clusters of --contexts at once.
	return cli.EnforceAcross(ctx, o.f, sites, cli.EnforceRequest{Targets: o.Targets, Settings: o.Settings, Uninstall: o.Uninstall, Timeout: o.Timeout})
}
