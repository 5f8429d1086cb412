// Command tektonvalidate validates Tekton resources with Tekton's own Go
// types, as its admission webhook does: each YAML document of the files
// given is decoded strictly (an unknown field is an error) into a
// tekton.dev/v1 Task or Pipeline by its kind, defaulted (SetDefaults) and
// validated (Validate) with Tekton's default configuration and feature flags
// in the context. Every error is printed with its file, document and field
// path; the exit code is 1 if there is any, 2 on bad usage.
//
// It is its own Go module so that lockctl's go.mod does not depend on
// Tekton. hack/integration-tools.sh builds it (tool tekton-validate);
// TestTektonValidate in integrations runs it.
//
//	tektonvalidate integrations/tekton/*.yaml
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tektoncd/pipeline/pkg/apis/config"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/yaml"
)

// resource is what a Tekton type offers the webhook.
type resource interface {
	SetDefaults(context.Context)
	Validate(context.Context) *apis.FieldError
}

func main() {
	if len(os.Args) < 2 || strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintln(os.Stderr, "usage: tektonvalidate FILE.yaml... (validates tekton.dev/v1 Tasks and Pipelines with Tekton's own Validate)")
		os.Exit(2)
	}
	failed := false
	for _, file := range os.Args[1:] {
		problems, err := validateFile(file)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", file, err)
			failed = true
			continue
		}
		for _, p := range problems {
			fmt.Println(p)
		}
		if len(problems) > 0 {
			failed = true
			continue
		}
		fmt.Printf("%s: ok\n", file)
	}
	if failed {
		os.Exit(1)
	}
}

// webhookContext is the context Tekton's webhook validates a created object
// in: the default config (defaults and feature flags, as with no ConfigMaps
// changed) attached, and the operation a create.
func webhookContext() context.Context {
	ctx := config.ToContext(context.Background(), config.FromContextOrDefaults(context.Background()))
	return apis.WithinCreate(ctx)
}

// validateFile returns one line for each problem in file's documents.
func validateFile(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var problems []string
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			n--
			continue
		}
		for _, p := range validateDoc(doc) {
			problems = append(problems, fmt.Sprintf("%s: document %d: %s", file, n, p))
		}
	}
	return problems, nil
}

// validateDoc decodes one document by its kind and validates it.
func validateDoc(doc []byte) []string {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return []string{err.Error()}
	}
	if meta.APIVersion != v1.SchemeGroupVersion.String() {
		return []string{fmt.Sprintf("apiVersion %q: want %s", meta.APIVersion, v1.SchemeGroupVersion)}
	}
	var obj resource
	var name func() string
	switch meta.Kind {
	case "Task":
		t := &v1.Task{}
		obj, name = t, t.GetName
	case "Pipeline":
		p := &v1.Pipeline{}
		obj, name = p, p.GetName
	default:
		return []string{fmt.Sprintf("kind %q: want Task or Pipeline", meta.Kind)}
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return []string{fmt.Sprintf("%s: %v", meta.Kind, err)}
	}
	ctx := webhookContext()
	obj.SetDefaults(ctx)
	fe := obj.Validate(ctx)
	if fe == nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(fe.Error()), "\n") {
		out = append(out, fmt.Sprintf("%s %q: %s", meta.Kind, name(), line))
	}
	return out
}
