package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

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
	// NOTE: yaml.v3's nodes, not kyaml's kio, which would link kyaml's
	// OpenAPI schemas (gnostic, protobuf: 4 MB) into the binary; nodes keep
	// comments, order and flow (JSON) style as well.
	dec := yaml.NewDecoder(o.f.IOStreams.In)
	enc := yaml.NewEncoder(o.f.IOStreams.Out)
	enc.SetIndent(2)
	for i := 1; ; i++ {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("stamp manifests: document %d: %w", i, err)
		}
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue
		}
		if err := stampNode(doc.Content[0], o.Token); err != nil {
			return fmt.Errorf("stamp manifests: document %d: %w", i, err)
		}
		if err := enc.Encode(&doc); err != nil {
			return fmt.Errorf("stamp manifests: %w", err)
		}
	}
	return enc.Close()
}

// stampNode sets the token annotation on the manifest n, or on each item
// of a List.
func stampNode(n *yaml.Node, token string) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("not a Kubernetes manifest (an object with kind and metadata)")
	}
	kind := field(n, "kind")
	if kind == nil || kind.Value == "" {
		return errors.New("a manifest without kind")
	}
	if items := field(n, "items"); strings.HasSuffix(kind.Value, "List") && items != nil && items.Kind == yaml.SequenceNode {
		for _, item := range items.Content {
			if err := stampNode(item, token); err != nil {
				return err
			}
		}
		return nil
	}
	annotations := mapping(mapping(n, "metadata"), "annotations")
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: token, Style: yaml.DoubleQuotedStyle}
	if v := field(annotations, enforce.TokenAnnotation); v != nil {
		*v = *value
		return nil
	}
	annotations.Content = append(annotations.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: enforce.TokenAnnotation}, value)
	return nil
}

// field returns the value of key in the mapping n, nil when it has none.
func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// mapping returns the mapping under key in n, adding an empty one (in n's
// style) when there is none or it is null.
func mapping(n *yaml.Node, key string) *yaml.Node {
	v := field(n, key)
	if v != nil && v.Kind == yaml.MappingNode {
		return v
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: n.Style & yaml.FlowStyle}
	if v != nil {
		*v = *m
		return v
	}
	n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, m)
	return m
}
