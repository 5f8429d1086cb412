package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/cli/cmdutil"
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
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# In the command of lockctl run, which sets $LOCKCTL_FENCING_TOKEN
			lockctl run production -- sh -c 'kustomize build deploy | lockctl stamp | kubectl apply -f -'

			# With the token printed by acquire
			token=$(lockctl acquire production)
			helm template web ./chart | lockctl stamp --token "$token" | kubectl apply -f -
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
	stamp := kio.FilterFunc(func(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
		for _, n := range nodes {
			if err := stampNode(n, o.Token); err != nil {
				return nil, err
			}
		}
		return nodes, nil
	})
	err := kio.Pipeline{
		Inputs:  []kio.Reader{&kio.ByteReader{Reader: o.f.IOStreams.In, OmitReaderAnnotations: true}},
		Filters: []kio.Filter{stamp},
		Outputs: []kio.Writer{kio.ByteWriter{Writer: o.f.IOStreams.Out}},
	}.Execute()
	if err != nil {
		return fmt.Errorf("stamp manifests: %w", err)
	}
	return nil
}

// stampNode sets the token annotation on n, or on each item of a List.
func stampNode(n *yaml.RNode, token string) error {
	if strings.HasSuffix(n.GetKind(), "List") {
		items, err := n.Pipe(yaml.Lookup("items"))
		if err != nil {
			return err
		}
		if items != nil {
			elems, err := items.Elements()
			if err != nil {
				return err
			}
			for _, item := range elems {
				if err := stampNode(item, token); err != nil {
					return err
				}
			}
			return nil
		}
	}
	if n.GetKind() == "" {
		return fmt.Errorf("a document without kind is no Kubernetes manifest")
	}
	return n.PipeE(yaml.SetAnnotation(enforce.TokenAnnotation, token))
}
