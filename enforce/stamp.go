package enforce

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Stamp copies the Kubernetes manifests read from in (YAML documents or
// JSON) to out with the annotation TokenAnnotation set to token, the
// fencing token of the hold they are deployed under: a lock enforced with
// Settings.Strict admits a write only with the current token. The items of
// a List are stamped one by one; comments, field order and flow (JSON)
// style are kept, and empty documents dropped. Stamping again replaces the
// token.
func Stamp(in io.Reader, out io.Writer, token string) error {
	// NOTE: yaml.v3's nodes, not kyaml's kio, which would link kyaml's
	// OpenAPI schemas (gnostic, protobuf: 4 MB) into the binary; nodes keep
	// comments, order and flow (JSON) style as well.
	dec := yaml.NewDecoder(in)
	enc := yaml.NewEncoder(out)
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
		if err := stampNode(doc.Content[0], token); err != nil {
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
	if v := field(annotations, TokenAnnotation); v != nil {
		*v = *value
		return nil
	}
	annotations.Content = append(annotations.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: TokenAnnotation}, value)
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
