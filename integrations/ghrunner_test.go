package integrations_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// ghRunner runs one job of a GitHub Actions workflow on this machine the
// way GitHub's runner does, for the parts lockctl's action uses: steps in
// order under their if: conditions (success() by default), `run:` steps with
// bash -eo pipefail, JavaScript actions (node main.js, then post.js at the
// end of the job under post-if) and composite actions, with inputs passed as
// INPUT_* (defaults from action.yml), outputs, state, environment and PATH
// passed through the GITHUB_OUTPUT, GITHUB_STATE, GITHUB_ENV and
// GITHUB_PATH files, and ${{ }} expressions over secrets, steps, inputs, env
// and github.action_path. Anything else it meets fails the test rather than
// being ignored.
type ghRunner struct {
	t *testing.T
	// workdir is GITHUB_WORKSPACE, temp RUNNER_TEMP.
	workdir, temp string
	// env is the runner's environment for every step (GITHUB_* identity,
	// HOME, PATH), extended by GITHUB_ENV.
	env map[string]string
	// path are the directories GITHUB_PATH added, first first.
	path    []string
	secrets map[string]string
	// actions maps a uses: reference's repository path (before @) to the
	// local directory of the action.
	actions map[string]string
	// inputDefaults overrides action.yml defaults per action directory, as
	// an organization's runner configuration could (a release mirror).
	inputDefaults map[string]map[string]string
	log           bytes.Buffer
}

// ghStep is one step of a job or of a composite action.
type ghStep struct {
	ID    string            `json:"id"`
	Name  string            `json:"name"`
	If    string            `json:"if"`
	Uses  string            `json:"uses"`
	Run   string            `json:"run"`
	Shell string            `json:"shell"`
	With  map[string]string `json:"with"`
	Env   map[string]string `json:"env"`
}

type ghWorkflow struct {
	Jobs map[string]struct {
		Steps []ghStep `json:"steps"`
	} `json:"jobs"`
}

type ghAction struct {
	Inputs map[string]struct {
		Default  string `json:"default"`
		Required bool   `json:"required"`
	} `json:"inputs"`
	Outputs map[string]struct {
		Value string `json:"value"`
	} `json:"outputs"`
	Runs struct {
		Using  string   `json:"using"`
		Main   string   `json:"main"`
		Post   string   `json:"post"`
		PostIf string   `json:"post-if"`
		Steps  []ghStep `json:"steps"`
	} `json:"runs"`
}

// ghJobResult is what running a job did.
type ghJobResult struct {
	// Failed is the job's result: a step failed.
	Failed bool
	// Steps are the results of the job's steps by id or name: success,
	// failure or skipped; post steps are "post NAME".
	Steps map[string]string
	// Outputs are the steps' outputs by step id.
	Outputs map[string]map[string]string
}

// ghContext is what expressions in one step can see.
type ghContext struct {
	inputs     map[string]string
	steps      map[string]map[string]string
	env        map[string]string
	actionPath string
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// eval replaces ${{ }} expressions in s.
func (r *ghRunner) eval(s string, c ghContext) string {
	return ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		e := ghExpr.FindStringSubmatch(m)[1]
		parts := strings.Split(e, ".")
		switch {
		case len(parts) == 2 && parts[0] == "secrets":
			return r.secrets[parts[1]]
		case len(parts) == 2 && parts[0] == "inputs":
			v, ok := c.inputs[parts[1]]
			require.True(r.t, ok, "expression %q: no such input", e)
			return v
		case len(parts) == 2 && parts[0] == "env":
			return c.env[parts[1]]
		case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
			return c.steps[parts[1]][parts[3]]
		case e == "github.action_path":
			return c.actionPath
		case e == "runner.temp":
			return r.temp
		}
		r.t.Fatalf("expression %q: not supported by the test runner", e)
		return ""
	})
}

// cond evaluates an if: or post-if: condition for a job that has failed
// or not (never cancelled here).
func (r *ghRunner) cond(s string, failed bool) bool {
	s = strings.TrimSpace(s)
	if m := ghExpr.FindStringSubmatch(s); m != nil && m[0] == s {
		s = m[1]
	}
	switch s {
	case "", "success()":
		return !failed
	case "always()", "!cancelled()":
		return true
	case "failure()":
		return failed
	case "cancelled()":
		return false
	}
	r.t.Fatalf("condition %q: not supported by the test runner", s)
	return false
}

// runJob runs the job name of the workflow file.
func (r *ghRunner) runJob(file, name string) ghJobResult {
	r.t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(r.t, err)
	var wf ghWorkflow
	require.NoError(r.t, yaml.Unmarshal(data, &wf), file)
	job, ok := wf.Jobs[name]
	require.True(r.t, ok, "%s has no job %q", file, name)
	res := ghJobResult{Steps: map[string]string{}, Outputs: map[string]map[string]string{}}
	type post struct {
		name, dir, script, cond string
		env                     []string
	}
	var posts []post
	for i, s := range job.Steps {
		key := firstOf(s.ID, s.Name, s.Uses, fmt.Sprintf("step %d", i+1))
		if !r.cond(s.If, res.Failed) {
			res.Steps[key] = "skipped"
			continue
		}
		c := ghContext{steps: res.Outputs, env: r.env}
		var (
			outputs map[string]string
			ok      bool
		)
		switch {
		case s.Run != "":
			outputs, ok = r.runScript(s, c, nil)
		case strings.HasPrefix(s.Uses, "actions/checkout@"):
			outputs, ok = map[string]string{}, true // the work tree is in place
		default:
			ref, _, _ := strings.Cut(s.Uses, "@")
			dir, known := r.actions[ref]
			require.True(r.t, known, "uses: %s: no local copy of that action", s.Uses)
			var a ghAction
			data, err := os.ReadFile(filepath.Join(dir, "action.yml"))
			require.NoError(r.t, err)
			require.NoError(r.t, yaml.Unmarshal(data, &a))
			inputs := map[string]string{}
			for k, in := range a.Inputs {
				inputs[k] = in.Default
				if d, ok := r.inputDefaults[dir][k]; ok {
					inputs[k] = d
				}
			}
			for k, v := range s.With {
				_, declared := a.Inputs[k]
				require.True(r.t, declared, "uses: %s: input %q is not declared in its action.yml", s.Uses, k)
				inputs[k] = r.eval(v, c)
			}
			for k, in := range a.Inputs {
				require.False(r.t, in.Required && inputs[k] == "", "uses: %s: required input %q missing", s.Uses, k)
			}
			switch a.Runs.Using {
			case "node20", "node24":
				var inputEnv []string
				for k, v := range inputs {
					inputEnv = append(inputEnv, "INPUT_"+strings.ToUpper(strings.ReplaceAll(k, " ", "_"))+"="+v)
				}
				var state map[string]string
				outputs, state, ok = r.runNode(key, dir, a.Runs.Main, inputEnv)
				if a.Runs.Post != "" {
					var stateEnv []string
					for k, v := range state {
						stateEnv = append(stateEnv, "STATE_"+k+"="+v)
					}
					posts = append(posts, post{name: key, dir: dir, script: a.Runs.Post, cond: firstOf(a.Runs.PostIf, "always()"), env: stateEnv})
				}
			case "composite":
				inner := ghContext{inputs: inputs, steps: map[string]map[string]string{}, env: r.env, actionPath: dir}
				ok = true
				for j, cs := range a.Runs.Steps {
					require.NotEmpty(r.t, cs.Run, "composite step %d of %s: only run: steps are supported", j, s.Uses)
					require.Equal(r.t, "bash", cs.Shell, "composite steps need shell: bash")
					out, stepOK := r.runScript(cs, inner, []string{"GITHUB_ACTION_PATH=" + dir})
					inner.steps[cs.ID] = out
					if !stepOK {
						ok = false
						break
					}
				}
				outputs = map[string]string{}
				for k, o := range a.Outputs {
					outputs[k] = r.eval(o.Value, inner)
				}
			default:
				r.t.Fatalf("uses: %s: runs.using %q not supported", s.Uses, a.Runs.Using)
			}
		}
		if s.ID != "" {
			res.Outputs[s.ID] = outputs
		}
		if ok {
			res.Steps[key] = "success"
		} else {
			res.Steps[key] = "failure"
			res.Failed = true
		}
	}
	for i := len(posts) - 1; i >= 0; i-- {
		p := posts[i]
		if !r.cond(p.cond, res.Failed) {
			res.Steps["post "+p.name] = "skipped"
			continue
		}
		if _, _, ok := r.runNode("post "+p.name, p.dir, p.script, p.env); ok {
			res.Steps["post "+p.name] = "success"
		} else {
			res.Steps["post "+p.name] = "failure"
			res.Failed = true
		}
	}
	return res
}

// runScript runs a run: step with bash as the runner does.
func (r *ghRunner) runScript(s ghStep, c ghContext, extra []string) (map[string]string, bool) {
	r.t.Helper()
	script := filepath.Join(r.temp, fmt.Sprintf("step-%d.sh", time.Now().UnixNano()))
	require.NoError(r.t, os.WriteFile(script, []byte(r.eval(s.Run, c)), 0o600))
	env := extra
	for k, v := range s.Env {
		env = append(env, k+"="+r.eval(v, c))
	}
	return r.exec(firstOf(s.ID, s.Name, "run"), exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", script), env)
}

// runNode runs a JavaScript action's script with node.
func (r *ghRunner) runNode(name, dir, script string, env []string) (map[string]string, map[string]string, bool) {
	r.t.Helper()
	state := filepath.Join(r.temp, fmt.Sprintf("state-%d", time.Now().UnixNano()))
	require.NoError(r.t, os.WriteFile(state, nil, 0o600))
	out, ok := r.exec(name, exec.Command("node", filepath.Join(dir, script)), append(env, "GITHUB_STATE="+state))
	return out, readCommandFile(r.t, state), ok
}

// exec runs cmd as a step: in the workspace, with the runner's environment,
// the step's, and fresh command files, which it reads back afterwards.
func (r *ghRunner) exec(name string, cmd *exec.Cmd, env []string) (map[string]string, bool) {
	r.t.Helper()
	files := map[string]string{}
	for _, f := range []string{"GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH"} {
		files[f] = filepath.Join(r.temp, fmt.Sprintf("%s-%d", strings.ToLower(f), time.Now().UnixNano()))
		require.NoError(r.t, os.WriteFile(files[f], nil, 0o600))
		env = append(env, f+"="+files[f])
	}
	cmd.Env = []string{"PATH=" + strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), ":"),
		"GITHUB_WORKSPACE=" + r.workdir, "RUNNER_TEMP=" + r.temp}
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = r.workdir
	fmt.Fprintf(&r.log, "##[group]%s\n", name)
	cmd.Stdout, cmd.Stderr = &r.log, &r.log
	err := cmd.Run()
	fmt.Fprintf(&r.log, "##[endgroup] %s: %v\n", name, err)
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		r.t.Fatalf("step %s: %v", name, err)
	}
	for k, v := range readCommandFile(r.t, files["GITHUB_ENV"]) {
		r.env[k] = v
	}
	data, readErr := os.ReadFile(files["GITHUB_PATH"])
	require.NoError(r.t, readErr)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" {
			r.path = append([]string{line}, r.path...)
		}
	}
	return readCommandFile(r.t, files["GITHUB_OUTPUT"]), err == nil
}

// readCommandFile parses a GITHUB_OUTPUT-style file: name=value lines and
// name<<DELIMITER blocks.
func readCommandFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			closed := false
			for sc.Scan() {
				if sc.Text() == delim {
					closed = true
					break
				}
				val = append(val, sc.Text())
			}
			require.True(t, closed, "%s: %s<<%s is not closed", path, name, delim)
			out[name] = strings.Join(val, "\n")
			continue
		}
		if name, val, ok := strings.Cut(line, "="); ok {
			out[name] = val
		} else if strings.TrimSpace(line) != "" {
			t.Fatalf("%s: malformed line %q", path, line)
		}
	}
	return out
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
