package integrations_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestArgoShape checks the Argo Workflow example as far as no Argo tool
// runs here: the onExit handler exists and releases by the token the lock
// step exports as a global output (skipped when there is none), every
// template a step names exists, and no script embeds a {{…}} parameter
// (they arrive as env).
func TestArgoShape(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "integrations", "argo", "workflow.yaml"))
	require.NoError(t, err)
	type step struct {
		Name     string `json:"name"`
		Template string `json:"template"`
		When     string `json:"when"`
	}
	var wf struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Entrypoint string `json:"entrypoint"`
			OnExit     string `json:"onExit"`
			Templates  []struct {
				Name    string   `json:"name"`
				Steps   [][]step `json:"steps"`
				Outputs struct {
					Parameters []struct {
						Name       string `json:"name"`
						GlobalName string `json:"globalName"`
					} `json:"parameters"`
				} `json:"outputs"`
				Script *struct {
					Source string `json:"source"`
				} `json:"script"`
			} `json:"templates"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &wf))
	assert.Equal(t, "argoproj.io/v1alpha1", wf.APIVersion)
	assert.Equal(t, "Workflow", wf.Kind)
	names := map[string]bool{}
	globals := map[string]bool{}
	for _, tmpl := range wf.Spec.Templates {
		names[tmpl.Name] = true
		for _, p := range tmpl.Outputs.Parameters {
			if p.GlobalName != "" {
				globals[p.GlobalName] = true
			}
		}
		if tmpl.Script != nil {
			assert.NotContains(t, tmpl.Script.Source, "{{", "template %s: parameters go through env, not into the script", tmpl.Name)
		}
	}
	require.True(t, names[wf.Spec.Entrypoint], "the entrypoint exists")
	require.True(t, names[wf.Spec.OnExit], "the onExit handler exists")
	assert.True(t, globals["token"], "the lock step exports the token for the exit handler")
	for _, tmpl := range wf.Spec.Templates {
		for _, group := range tmpl.Steps {
			for _, s := range group {
				assert.True(t, names[s.Template], "step %s names template %s", s.Name, s.Template)
				if tmpl.Name == wf.Spec.OnExit {
					assert.True(t, strings.Contains(s.When, "workflow.outputs.parameters.token"), "the release is skipped without a token")
				}
			}
		}
	}
}
