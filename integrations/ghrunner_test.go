package integrations_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// ghRunner runs one job of a GitHub Actions workflow on this machine the
// way GitHub's runner does, for the parts lockctl's action uses: steps in
// order under their if: conditions (success() by default), `run:` steps with
// bash -eo pipefail, JavaScript actions (node main.js, then post.js at the
// end of the job under post-if, with the same inputs and the state main
// saved as STATE_*) and composite actions, with inputs passed as INPUT_*
// (defaults from action.yml), outputs, state, environment and PATH passed
// through the GITHUB_OUTPUT, GITHUB_STATE, GITHUB_ENV and GITHUB_PATH files,
// and ${{ }} expressions over secrets, steps, inputs, env and
// github.action_path. Its environment is the one a hosted runner gives a
// job (newGHRunner), nothing more. cancel cancels the job as the runner
// does. Anything else it meets fails the test rather than being ignored.
type ghRunner struct {
	t *testing.T
	// workdir is GITHUB_WORKSPACE, temp RUNNER_TEMP.
	workdir, temp string
	// env is the runner's environment for every step (newGHRunner),
	// extended by GITHUB_ENV.
	env map[string]string
	// run is the workflow run the job belongs to.
	run ghRun
	// path are the directories GITHUB_PATH added, first first.
	path    []string
	secrets map[string]string
	// actions maps a uses: reference's repository path (before @) to the
	// local directory of the action.
	actions map[string]string
	// inputDefaults overrides action.yml defaults per action directory, as
	// an organization's runner configuration could (a release mirror).
	inputDefaults map[string]map[string]string
	// diesBeforePost makes the runner machine die after the job's steps:
	// no post step runs.
	diesBeforePost bool
	log            syncBuffer

	mu sync.Mutex
	// cancelled is set by cancel; step is the process of the step running,
	// done closed when it has exited.
	cancelled bool
	step      *os.Process
	done      chan struct{}
}

// ghRun is the workflow run a job belongs to, as GitHub numbers it.
type ghRun struct {
	// Repository is owner/name, Ref a branch's full ref.
	Repository, Ref string
	// Workflow is the workflow file's path in the repository.
	Workflow string
	// ID and Number are the run's; Attempt counts its re-runs from 1.
	ID, Number, Attempt int
	// Runner is the runner machine's name (RUNNER_NAME): the jobs of a
	// matrix each run on their own.
	Runner string
}

// newGHRunner is a fresh hosted runner machine for a job of run, whose
// environment is what GitHub's runner sets for a job of a push to
// run.Ref, and HOME and PATH; the job's own variables (GITHUB_JOB, the
// command files) are set as it runs.
func newGHRunner(t *testing.T, run ghRun) *ghRunner {
	t.Helper()
	work, temp, home := t.TempDir(), t.TempDir(), t.TempDir()
	owner, _, _ := strings.Cut(run.Repository, "/")
	event := filepath.Join(temp, "event.json")
	require.NoError(t, os.WriteFile(event, []byte(`{"ref": "`+run.Ref+`"}`), 0o600))
	r := &ghRunner{t: t, workdir: work, temp: temp, run: run, env: map[string]string{
		"HOME": home, "CI": "true", "GITHUB_ACTIONS": "true",
		"GITHUB_REPOSITORY": run.Repository, "GITHUB_REPOSITORY_OWNER": owner,
		"GITHUB_REF": run.Ref, "GITHUB_REF_NAME": strings.TrimPrefix(run.Ref, "refs/heads/"), "GITHUB_REF_TYPE": "branch",
		"GITHUB_SHA":          fmt.Sprintf("%040x", run.ID),
		"GITHUB_WORKFLOW":     filepath.Base(run.Workflow),
		"GITHUB_WORKFLOW_REF": run.Repository + "/" + run.Workflow + "@" + run.Ref,
		"GITHUB_RUN_ID":       fmt.Sprint(run.ID), "GITHUB_RUN_NUMBER": fmt.Sprint(run.Number),
		"GITHUB_RUN_ATTEMPT": fmt.Sprint(run.Attempt),
		"GITHUB_EVENT_NAME":  "push", "GITHUB_EVENT_PATH": event, "GITHUB_ACTOR": owner,
		"GITHUB_SERVER_URL": "https://github.com", "GITHUB_API_URL": "https://api.github.com",
		"RUNNER_NAME": run.Runner, "RUNNER_OS": "Linux", "RUNNER_ARCH": "X64",
		"RUNNER_TEMP": temp, "RUNNER_TOOL_CACHE": filepath.Join(temp, "toolcache"),
		"GITHUB_WORKSPACE": work,
	}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("job log:\n%s", r.log.String())
		}
	})
	return r
}

// cancel cancels the job as GitHub's runner does: the step running gets
// SIGINT, SIGTERM 7.5 s later and SIGKILL 2.5 s after that if it is still
// there, each sent to the step's own process only (its children get
// nothing); the steps after it run only under always() or cancelled(),
// the post steps under their post-if.
func (r *ghRunner) cancel() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cancelled = true
	if r.step == nil {
		return
	}
	p, done := r.step, r.done
	go func() {
		for _, s := range []struct {
			sig   os.Signal
			after time.Duration
		}{{os.Interrupt, 7500 * time.Millisecond}, {syscall.SIGTERM, 2500 * time.Millisecond}, {os.Kill, 0}} {
			_ = p.Signal(s.sig)
			if s.after == 0 {
				return
			}
			select {
			case <-done:
				return
			case <-time.After(s.after):
			}
		}
	}()
}

// isCancelled reports whether cancel was called.
func (r *ghRunner) isCancelled() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cancelled
}

// syncBuffer is a bytes.Buffer safe for a step's output and a test that
// reads the log as the job runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
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
	Name string `json:"name"`
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
	// Cancelled is true when the job was cancelled.
	Cancelled bool
	// Steps are the results of the job's steps by id or name: success,
	// failure, cancelled or skipped; post steps are "post NAME".
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
// or not, and was cancelled or not.
func (r *ghRunner) cond(s string, failed bool) bool {
	s = strings.TrimSpace(s)
	if m := ghExpr.FindStringSubmatch(s); m != nil && m[0] == s {
		s = m[1]
	}
	cancelled := r.isCancelled()
	switch s {
	case "", "success()":
		return !failed && !cancelled
	case "always()":
		return true
	case "!cancelled()":
		return !cancelled
	case "failure()":
		return failed && !cancelled
	case "cancelled()":
		return cancelled
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
	for k := range r.env {
		require.False(r.t, strings.HasPrefix(k, "LOCKCTL_"), "the runner's environment has %s: a hosted runner sets no LOCKCTL_* variable", k)
	}
	r.env["GITHUB_JOB"] = name
	if wf.Name != "" {
		r.env["GITHUB_WORKFLOW"] = wf.Name
	}
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
					// The post step gets the same inputs and the state
					// main saved, nothing else of main's.
					stateEnv := append([]string{}, inputEnv...)
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
		switch {
		case ok:
			res.Steps[key] = "success"
		case r.isCancelled():
			res.Steps[key] = "cancelled"
		default:
			res.Steps[key] = "failure"
			res.Failed = true
		}
	}
	res.Cancelled = r.isCancelled()
	if r.diesBeforePost {
		posts = nil
	}
	for i := len(posts) - 1; i >= 0; i-- {
		p := posts[i]
		if !r.cond(p.cond, res.Failed) {
			res.Steps["post "+p.name] = "skipped"
			continue
		}
		// NOTE: a cancelled job's post steps are not cancelled.
		r.mu.Lock()
		r.cancelled = false
		r.mu.Unlock()
		_, _, ok := r.runNode("post "+p.name, p.dir, p.script, p.env)
		r.mu.Lock()
		r.cancelled = res.Cancelled
		r.mu.Unlock()
		if ok {
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
	summary := filepath.Join(r.temp, fmt.Sprintf("step-summary-%d", time.Now().UnixNano()))
	require.NoError(r.t, os.WriteFile(summary, nil, 0o600))
	cmd.Env = []string{"PATH=" + strings.Join(append(append([]string{}, r.path...), os.Getenv("PATH")), ":"),
		"GITHUB_STEP_SUMMARY=" + summary, "GITHUB_ACTION=" + name}
	for k, v := range r.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Dir = r.workdir
	fmt.Fprintf(&r.log, "##[group]%s\n", name)
	cmd.Stdout, cmd.Stderr = &r.log, &r.log
	// NOTE: a process the step left behind may hold its output open; the
	// step has ended when its own process has.
	cmd.WaitDelay = time.Second
	r.mu.Lock()
	if r.cancelled {
		r.mu.Unlock()
		fmt.Fprintf(&r.log, "##[endgroup] %s: not started, the job is cancelled\n", name)
		return map[string]string{}, false
	}
	err := cmd.Start()
	require.NoError(r.t, err, "step %s", name)
	r.step, r.done = cmd.Process, make(chan struct{})
	r.mu.Unlock()
	err = cmd.Wait()
	r.mu.Lock()
	close(r.done)
	r.step = nil
	r.mu.Unlock()
	fmt.Fprintf(&r.log, "##[endgroup] %s: %v\n", name, err)
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
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
