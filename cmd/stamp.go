package cmd

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/run"
)

// stampOptions configure `lockctl stamp`.
type stampOptions struct {
	f *Factory

	Token string
}

func newStampCmd(f *Factory, runF func(*stampOptions) error) *cobra.Command {
	o := &stampOptions{f: f}
	c := &cobra.Command{
		Use:   "stamp [--token TOKEN] < MANIFESTS",
		Short: "Stamp manifests with the fencing token of the current hold",
		Long: cli.Doc(`
			Read Kubernetes manifests (YAML documents or JSON) on stdin and
			write them to stdout with the annotation lockctl.dev/fencing-token
			set to the fencing token of the hold they are deployed under: the
			token --token names, else $LOCKCTL_FENCING_TOKEN, which lockctl run
			sets for its command and the CI integrations export. A lock
			enforced with --strict admits a write only with the current
			token, so manifests applied by a build whose hold has ended are
			refused. The items of a List are stamped one by one; comments and
			field order are kept. Stamping again replaces the token.

			The token of a hold across clusters (acquire or run --contexts) is
			composite, CONTEXT=TOKEN,...: stamp writes the part of the cluster
			the manifests go to, --context, else the kubeconfig's current
			context.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# In the command of lockctl run, which sets $LOCKCTL_FENCING_TOKEN
			lockctl run --lock production -- sh -c 'kustomize build deploy | lockctl stamp | kubectl apply -f -'

			# With the token printed by acquire
			token=$(lockctl acquire production)
			helm template web ./chart | lockctl stamp --token "$token" | kubectl apply -f -

			# One hold across clusters: each cluster's manifests get its own token
			token=$(lockctl acquire production --contexts prod-us,prod-eu)
			lockctl stamp --token "$token" --context prod-eu < app.yaml | kubectl --context prod-eu apply -f -
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runStamp, func(_ *cobra.Command, _ []string) {
			if o.Token == "" {
				o.Token = o.f.Getenv(run.TokenEnv)
			}
		}),
	}
	c.Flags().StringVar(&o.Token, "token", o.Token, "the fencing token (default: $"+run.TokenEnv+")")
	return c
}

func (o *stampOptions) validate() error {
	if strings.TrimSpace(o.Token) == "" {
		return cmdutil.FlagErrorf("no fencing token: pass --token TOKEN, or run under lockctl run, which sets $%s", run.TokenEnv)
	}
	return nil
}

func runStamp(_ context.Context, o *stampOptions) error {
	token, err := cli.TokenToStamp(o.f, o.Token)
	if err != nil {
		return err
	}
	return enforce.Stamp(o.f.IOStreams.In, o.f.IOStreams.Out, token)
}
