package integrations_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// tektonParam is one param of a Task or of a pipeline task.
type tektonParam struct {
	Name        string  `json:"name"`
	Type        string  `json:"type"`
	Default     *string `json:"default"`
	Value       string  `json:"value"`
	Description string  `json:"description"`
}

type tektonTaskSpec struct {
	Description string        `json:"description"`
	Params      []tektonParam `json:"params"`
	Workspaces  []struct {
		Name        string `json:"name"`
		Optional    bool   `json:"optional"`
		ReadOnly    bool   `json:"readOnly"`
		Description string `json:"description"`
	} `json:"workspaces"`
	Results []struct {
		Name        string `json:"name"`
		Type        string `json:"type"`
		Description string `json:"description"`
	} `json:"results"`
	Steps []struct {
		Name       string `json:"name"`
		Image      string `json:"image"`
		WorkingDir string `json:"workingDir"`
		Script     string `json:"script"`
		Env        []struct {
			Name  string `json:"name"`
			Value string `json:"value"`
		} `json:"env"`
	} `json:"steps"`
}

type tektonPipelineTask struct {
	Name    string `json:"name"`
	TaskRef *struct {
		Name string `json:"name"`
	} `json:"taskRef"`
	TaskSpec   *tektonTaskSpec `json:"taskSpec"`
	Params     []tektonParam   `json:"params"`
	RunAfter   []string        `json:"runAfter"`
	Workspaces []struct {
		Name      string `json:"name"`
		Workspace string `json:"workspace"`
	} `json:"workspaces"`
}

type tektonDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		tektonTaskSpec
		Tasks   []tektonPipelineTask `json:"tasks"`
		Finally []tektonPipelineTask `json:"finally"`
	} `json:"spec"`
}

func readTekton(t *testing.T, name string) tektonDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "integrations", "tekton", name))
	require.NoError(t, err)
	var d tektonDoc
	require.NoError(t, yaml.UnmarshalStrict(data, &d), "%s: only fields this test knows", name)
	return d
}

// TestTektonLint runs tekton-lint, the Tekton linter, on the Task and the
// Pipeline: every param and result referenced is declared (including the
// Pipeline's use of the Task's result token), every param declared is used,
// workspaces are bound. A broken copy shows that it bites.
func TestTektonLint(t *testing.T) {
	t.Parallel()
	lint := tool(t, "tekton-lint")
	dir := filepath.Join(repoRoot(), "integrations", "tekton")
	run := func(files ...string) (string, error) {
		cmd := exec.Command(lint, append([]string{"--format", "json", "--color", "false"}, files...)...)
		cmd.Dir = t.TempDir() // no .tektonlintrc.yaml: the default rules
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run(filepath.Join(dir, "task.yaml"), filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err, "tekton-lint: %s", out)
	assert.Equal(t, "[]", out, "no finding")

	bad := t.TempDir()
	pipeline, err := os.ReadFile(filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(bad, "pipeline.yaml"), []byte(strings.ReplaceAll(string(pipeline), "results.token", "results.tokn")), 0o644))
	out, err = run(filepath.Join(dir, "task.yaml"), filepath.Join(bad, "pipeline.yaml"))
	assert.Error(t, err, "tekton-lint fails on findings")
	assert.Contains(t, out, "no-undefined-result", "a misspelt result is caught")
}

// TestTektonValidate runs Tekton's own validation (hack/tektonvalidate:
// the tekton.dev/v1 Go types' SetDefaults and Validate, as Tekton's webhook
// runs them, after strict decoding) on the Task and the Pipeline. Broken
// copies show that it bites: a step with both script and command, a param
// used but not declared, an unknown field (retries belongs to a
// pipeline task, not to a Task).
func TestTektonValidate(t *testing.T) {
	t.Parallel()
	validate := tool(t, "tekton-validate")
	dir := filepath.Join(repoRoot(), "integrations", "tekton")
	run := func(files ...string) (string, error) {
		out, err := exec.Command(validate, files...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run(filepath.Join(dir, "task.yaml"), filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err, "tekton-validate: %s", out)

	task, err := os.ReadFile(filepath.Join(dir, "task.yaml"))
	require.NoError(t, err)
	pipeline, err := os.ReadFile(filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err)
	for _, tt := range []struct {
		name, file, old, new, want string
	}{
		{"script and command", "task.yaml", "\n    script: |", "\n    command: [sh]\n    script: |", `script cannot be used with command: spec.steps[0].script`},
		{"param not declared", "pipeline.yaml", "$(params.build)}", "$(params.bild)}", `non-existent variable in "$(params.bild)"`},
		{"unknown field", "task.yaml", "\n  description:", "\n  retries: 2\n  description:", `unknown field "retries"`},
	} {
		src := map[string][]byte{"task.yaml": task, "pipeline.yaml": pipeline}[tt.file]
		broken := strings.Replace(string(src), tt.old, tt.new, 1)
		require.NotEqual(t, string(src), broken, "%s: the edit applies", tt.name)
		path := filepath.Join(t.TempDir(), tt.file)
		require.NoError(t, os.WriteFile(path, []byte(broken), 0o644))
		out, err := run(path)
		assert.Error(t, err, "%s: tekton-validate fails", tt.name)
		assert.Contains(t, out, tt.want, "%s: named", tt.name)
		assert.Contains(t, out, path, "%s: with the file", tt.name)
	}
}

// TestTektonShape checks what the design asks of the Tekton resources and
// tekton-lint does not: tekton.dev/v1, the token as a result, a workspace,
// params reaching scripts only through env (never pasted into a script,
// where a param could inject shell), and a finally task releasing by the
// token.
func TestTektonShape(t *testing.T) {
	t.Parallel()
	task := readTekton(t, "task.yaml")
	pipeline := readTekton(t, "pipeline.yaml")
	assert.Equal(t, "tekton.dev/v1", task.APIVersion)
	assert.Equal(t, "tekton.dev/v1", pipeline.APIVersion)
	require.Len(t, task.Spec.Results, 1)
	assert.Equal(t, "token", task.Spec.Results[0].Name)
	require.NotEmpty(t, task.Spec.Workspaces, "a workspace")

	inScript := regexp.MustCompile(`\$\((params|tasks)\.`)
	specs := []tektonTaskSpec{task.Spec.tektonTaskSpec}
	for _, pt := range append(pipeline.Spec.Tasks, pipeline.Spec.Finally...) {
		if pt.TaskSpec != nil {
			specs = append(specs, *pt.TaskSpec)
		}
	}
	for _, s := range specs {
		for _, st := range s.Steps {
			assert.NotRegexp(t, inScript, st.Script, "step %s: params go through env, not into the script", st.Name)
		}
	}
	require.Len(t, pipeline.Spec.Finally, 1)
	fin := pipeline.Spec.Finally[0]
	params := map[string]string{}
	for _, p := range fin.Params {
		params[p.Name] = p.Value
	}
	assert.Equal(t, "release", params["command"])
	assert.Equal(t, "$(tasks.lock.results.token)", params["token"], "finally releases by the lock's token")
}

// tektonVar is a Tekton variable reference: $(params.x), $(results.x.path),
// $(workspaces.x.bound|path), $(tasks.x.results.y).
var tektonVar = regexp.MustCompile(`\$\(([a-z]+(?:\.[a-z0-9-]+)+)\)`)

// runTektonTask runs spec's steps as Tekton's entrypoint would, with sh on
// this machine standing in for the image (lockctl on PATH): variables
// substituted in env values and scripts, params defaulted, the result token
// a file. It returns whether the steps succeeded and the results.
func runTektonTask(t *testing.T, spec tektonTaskSpec, params map[string]string, workdir string, env []string, log *strings.Builder) (bool, map[string]string) {
	t.Helper()
	values := map[string]string{}
	for _, p := range spec.Params {
		if p.Default != nil {
			values["params."+p.Name] = *p.Default
		}
	}
	for k, v := range params {
		values["params."+k] = v
	}
	for _, p := range spec.Params {
		_, ok := values["params."+p.Name]
		require.True(t, ok, "param %q has no value and no default", p.Name)
	}
	resultDir := t.TempDir()
	for _, r := range spec.Results {
		values["results."+r.Name+".path"] = filepath.Join(resultDir, r.Name)
	}
	for _, w := range spec.Workspaces {
		values["workspaces."+w.Name+".path"] = workdir
		values["workspaces."+w.Name+".bound"] = "false"
		if !w.Optional {
			values["workspaces."+w.Name+".bound"] = "true"
		}
	}
	subst := func(s string) string {
		return tektonVar.ReplaceAllStringFunc(s, func(m string) string {
			v, ok := values[tektonVar.FindStringSubmatch(m)[1]]
			require.True(t, ok, "unknown Tekton variable %s", m)
			return v
		})
	}
	for _, st := range spec.Steps {
		script := filepath.Join(t.TempDir(), "script")
		require.NoError(t, os.WriteFile(script, []byte(subst(st.Script)), 0o755))
		cmd := exec.Command(script)
		cmd.Dir = workdir
		cmd.Env = append([]string{"PATH=" + filepath.Dir(clitest.Binary(t)) + ":" + os.Getenv("PATH")}, env...)
		for _, e := range st.Env {
			cmd.Env = append(cmd.Env, e.Name+"="+subst(e.Value))
		}
		out, err := cmd.CombinedOutput()
		log.WriteString(st.Name + ":\n" + string(out))
		if err != nil {
			log.WriteString(err.Error() + "\n")
			return false, nil
		}
	}
	results := map[string]string{}
	for _, r := range spec.Results {
		if data, err := os.ReadFile(values["results."+r.Name+".path"]); err == nil {
			results[r.Name] = strings.TrimSpace(string(data))
		}
	}
	return true, results
}

// TestIntegrationTektonPipeline runs the example Pipeline's tasks in
// Tekton's order against the local control plane: lock (the lockctl Task,
// acquire), deploy (given the token), then the finally task (the lockctl
// Task, release by the token), which Tekton skips when the result it
// needs is missing. A deploy that fails still releases; an acquire that is
// superseded has no token, so the release is skipped and the newer build's
// hold stays.
func TestIntegrationTektonPipeline(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	task := readTekton(t, "task.yaml")
	pipeline := readTekton(t, "pipeline.yaml")
	pipelineParams := map[string]string{"namespace": "staging", "owner": "acme", "repo": "web", "branch": "main", "build": "7"}

	for _, tt := range []struct {
		name       string
		deployExit string
		newer      bool
	}{
		{name: "deploy succeeds", deployExit: "0"},
		{name: "deploy fails", deployExit: "1"},
		{name: "superseded before the lock", deployExit: "0", newer: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			work := t.TempDir()
			kenv := []string{"HOME=" + t.TempDir(), "KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}
			require.NoError(t, os.WriteFile(filepath.Join(work, "deploy.sh"), []byte("#!/bin/sh\nlockctl status \"$1\" -o json > status.json\necho \"$LOCKCTL_FENCING_TOKEN\" > token\nexit "+tt.deployExit+"\n"), 0o755))
			if tt.newer {
				o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns},
					"acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "9")
				require.Equal(t, 0, o.Code, o.Stderr)
			}
			var log strings.Builder
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("task logs:\n%s", log.String())
				}
			})
			results := map[string]map[string]string{}
			failed := map[string]bool{}
			// resolve substitutes pipeline params and task results into a
			// pipeline task's params; ok is false when a result is missing.
			resolve := func(pt tektonPipelineTask) (map[string]string, bool) {
				out := map[string]string{}
				ok := true
				for _, p := range pt.Params {
					out[p.Name] = tektonVar.ReplaceAllStringFunc(p.Value, func(m string) string {
						ref := strings.Split(tektonVar.FindStringSubmatch(m)[1], ".")
						switch {
						case ref[0] == "params":
							return pipelineParams[ref[1]]
						case ref[0] == "tasks" && ref[2] == "results":
							v, found := results[ref[1]][ref[3]]
							ok = ok && found && v != ""
							return v
						}
						t.Fatalf("unknown pipeline variable %s", m)
						return ""
					})
				}
				if pt.TaskRef != nil {
					// As if the TaskRun ran in ns: the lock lives there.
					out["lock-namespace"] = ns
				}
				return out, ok
			}
			spec := func(pt tektonPipelineTask) tektonTaskSpec {
				if pt.TaskSpec != nil {
					return *pt.TaskSpec
				}
				require.Equal(t, task.Metadata.Name, pt.TaskRef.Name, "the pipeline refers to the lockctl Task")
				return task.Spec.tektonTaskSpec
			}
			ran := map[string]bool{}
			for _, pt := range pipeline.Spec.Tasks {
				blocked := false
				for _, after := range pt.RunAfter {
					blocked = blocked || failed[after] || !ran[after]
				}
				params, ok := resolve(pt)
				if blocked || !ok {
					continue
				}
				succeeded, res := runTektonTask(t, spec(pt), params, work, kenv, &log)
				ran[pt.Name], failed[pt.Name], results[pt.Name] = true, !succeeded, res
			}
			for _, pt := range pipeline.Spec.Finally {
				params, ok := resolve(pt)
				if !ok {
					log.WriteString("finally " + pt.Name + ": skipped, a result it needs is missing\n")
					ran[pt.Name] = false
					continue
				}
				succeeded, _ := runTektonTask(t, spec(pt), params, work, kenv, &log)
				ran[pt.Name], failed[pt.Name] = true, !succeeded
			}

			o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}, "status", "staging", "-o", "json")
			require.Equal(t, 0, o.Code, o.Stderr)
			if tt.newer {
				assert.True(t, failed["lock"], "the older build gives up")
				assert.False(t, ran["deploy"], "no deploy without the lock")
				assert.False(t, ran["unlock"], "no token, no release")
				assert.Contains(t, o.Stdout, `"build": "9"`, "the newer build still holds the lock")
				return
			}
			require.False(t, failed["lock"], "lock")
			token := results["lock"]["token"]
			require.NotEmpty(t, token, "the Task's result token")
			assert.True(t, ran["deploy"])
			got, err := os.ReadFile(filepath.Join(work, "token"))
			require.NoError(t, err)
			assert.Equal(t, token, strings.TrimSpace(string(got)), "the deploy got the token")
			during, err := os.ReadFile(filepath.Join(work, "status.json"))
			require.NoError(t, err)
			assert.Contains(t, string(during), `"state": "held"`)
			assert.Contains(t, string(during), `"repo": "web"`, "held with the params' identity")
			assert.Equal(t, tt.deployExit != "0", failed["deploy"])
			assert.True(t, ran["unlock"] && !failed["unlock"], "finally released")
			assert.Contains(t, o.Stdout, `"state": "free"`, "free after the pipeline")
		})
	}
}
