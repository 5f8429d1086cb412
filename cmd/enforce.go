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
			Install, for each NAMESPACE, ValidatingAdmissionPolicies (no
			webhook, no CRD) that make the API server enforce the namespace's
			deploy lock: while the lock is held, only the holder's Kubernetes
			user (recorded by acquire and run) may create, update, patch or
			delete the guarded kinds in the namespace; while it is frozen
			nobody may, except with break-glass; nobody may write the lock's
			record to make someone holder out of turn. The policy keeps the
			API server's time: holds lapse, freezes end and freeze windows
			open and close on schedule with no lockctl process running.

			--mode warn (the default) admits every write and returns the
			refusal as a warning; audit only records it in the audit log;
			deny refuses. Roll out warn first, deny after. --strict also
			tells the holder's writes from others' of the same user: each
			write carries the hold's fencing token itself (lockctl stamp, or
			field manager lockctl-token-TOKEN), or comes with the credential
			the hold recorded. --require-holder refuses writes while nobody
			holds the lock.

			The system's own writers are never checked; --exempt adds users,
			such as lockctl's reconcile loop. --agent admits a GitOps
			controller's writes for the applications the holder names.
			Break-glass, freezes and forced changes of the record are RBAC
			verbs on resource locks of API group lockctl.dev, named by
			NAMESPACE, in the lock namespace (docs/enforcement.md).

			The lock namespace and the system namespaces are refused as
			NAMESPACE (exit status 2), and so is a lock held by a claim
			without a Kubernetes user, unless --force. Enforcing again updates
			the policy to the flags given; in deny mode the command waits (up
			to --timeout) until the API server applies these settings.
			--uninstall removes what lockctl made, and nothing else; like rm
			-f, it succeeds when there is nothing to remove. --dry-run -o
			yaml prints the manifests instead, for GitOps.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Roll out: warn first, then deny
			lockctl enforce production
			lockctl enforce production --mode deny

			# Strictly, with Argo CD as the holder's agent for the apps it names
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
	return cli.EnforceAcross(ctx, o.f, sites, cli.EnforceRequest{Targets: o.Targets, Settings: o.Settings, Force: o.Force, Uninstall: o.Uninstall, Timeout: o.Timeout})
}
