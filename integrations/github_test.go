package integrations_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestActionlint lints the example workflow with actionlint twice: as
// users copy it (the actions referenced by tag), and with those references
// pointed at this checkout (./integrations/github, ./integrations/github/setup),
// which makes actionlint read both action.yml files and check every input
// the workflow passes and every output it reads against them.
func TestActionlint(t *testing.T) {
	t.Parallel()
	actionlint := tool(t, "actionlint")
	example := filepath.Join(repoRoot(), "integrations", "github", "example-workflow.yml")
	data, err := os.ReadFile(example)
	require.NoError(t, err)

	// A project of its own, whose .github/workflows holds the local copy
	// and whose integrations/ is this checkout's.
	// NOTE: actionlint finds the project root by its .git.
	project := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(project, ".github", "workflows"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(project, ".git"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(repoRoot(), "integrations"), filepath.Join(project, "integrations")))
	local := strings.ReplaceAll(string(data), "lockctl/lockctl/integrations/github/setup@v0.2.0", "./integrations/github/setup")
	local = strings.ReplaceAll(local, "lockctl/lockctl/integrations/github@v0.2.0", "./integrations/github")
	require.NotEqual(t, string(data), local, "the example uses the actions by tag")
	require.NoError(t, os.WriteFile(filepath.Join(project, ".github", "workflows", "deploy.yml"), []byte(local), 0o644))

	for _, run := range []struct{ dir, file string }{
		{dir: filepath.Dir(example), file: example},
		{dir: project, file: filepath.Join(".github", "workflows", "deploy.yml")},
	} {
		cmd := exec.Command(actionlint, "-no-color", run.file)
		cmd.Dir = run.dir
		out, err := cmd.CombinedOutput()
		assert.NoError(t, err, "actionlint %s:\n%s", run.file, out)
	}

	// The check bites: a misspelt input and output are caught.
	bad := strings.Replace(local, "timeout: 30m", "timout: 30m", 1)
	bad = strings.Replace(bad, "steps.lock.outputs.token", "steps.lock.outputs.tokn", 1)
	require.NoError(t, os.WriteFile(filepath.Join(project, ".github", "workflows", "deploy.yml"), []byte(bad), 0o644))
	cmd := exec.Command(actionlint, "-no-color", filepath.Join(".github", "workflows", "deploy.yml"))
	cmd.Dir = project
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "actionlint finds nothing wrong with:\n%s", bad)
	assert.Contains(t, string(out), `input "timout" is not defined in action "lockctl"`)
	assert.Contains(t, string(out), `property "tokn" is not defined`)
}

// TestIntegrationGitHubAction runs the example workflow's jobs and a few
// more with ghRunner, as GitHub's runner would, against the local control
// plane: the setup action installs a release served over loopback after
// checking its checksum, the lock action acquires with the job's identity
// and hands its fencing token to the deploy step, and its post step
// releases the lock when the job ends, deploy failed or not; a superseded or
// timed-out acquire leaves a post step that does nothing and succeeds; run
// holds the lock for one command.
func TestIntegrationGitHubAction(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	rel := serveRelease(t, "v0.2.0")
	example := filepath.Join(repoRoot(), "integrations", "github", "example-workflow.yml")

	// newRunner is a fresh runner machine for a job of run number build
	// (run ID 1000+build, attempt 1) of acme/web's deploy workflow on main,
	// whose KUBECONFIG secret's context is in the test's namespace ns, as a
	// user's kubeconfig names theirs: the lock lives there.
	newRunner := func(t *testing.T, ns string, build int) *ghRunner {
		r := newGHRunner(t, ghRun{Repository: "acme/web", Ref: "refs/heads/main", Workflow: ".github/workflows/deploy.yml",
			ID: 1000 + build, Number: build, Attempt: 1, Runner: fmt.Sprintf("GitHub Actions %d", build)})
		setup := filepath.Join(repoRoot(), "integrations", "github", "setup")
		r.secrets = map[string]string{"KUBECONFIG": string(kubeconfigIn(t, env, ns))}
		r.actions = map[string]string{
			"lockctl/lockctl/integrations/github":       filepath.Join(repoRoot(), "integrations", "github"),
			"lockctl/lockctl/integrations/github/setup": setup,
		}
		// The release mirror is this test's server.
		r.inputDefaults = map[string]map[string]string{setup: {"base-url": rel.BaseURL}}
		return r
	}
	// script writes an executable script into the runner's workspace.
	script := func(t *testing.T, r *ghRunner, name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(r.workdir, name), []byte("#!/usr/bin/env bash\nset -eu\n"+body), 0o755))
	}
	// status is the lock of staging as lockctl status -o json shows it.
	status := func(t *testing.T, ns string) map[string]any {
		o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}, "status", "staging", "-o", "json")
		require.Equal(t, 0, o.Code, "status: %s", o.Stderr)
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(o.Stdout), &l), o.Stdout)
		st, _ := l["status"].(map[string]any)
		return st
	}
	// hold takes staging for another build, as another pipeline would:
	// one whose identity is in its environment ciEnv, or in flags.
	hold := func(t *testing.T, ns string, ciEnv []string, id ...string) {
		o := clitest.Run(t, time.Minute, t.TempDir(), append([]string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}, ciEnv...),
			append([]string{"acquire", "staging", "--ttl", "1h"}, id...)...)
		require.Equal(t, 0, o.Code, "acquire for another build: %s", o.Stderr)
	}
	// deployScript records its arguments, the fencing token in its
	// environment and the lock as it sees it, then exits with code.
	deployScript := func(code string) string {
		return `echo "$@" > deploy.args
echo "$LOCKCTL_FENCING_TOKEN" > deploy.env-token
lockctl status staging -o json > deploy.status
exit ` + code + "\n"
	}

	for _, tt := range []struct {
		name       string
		deployExit string
		wantFailed bool
	}{
		{name: "deploy succeeds", deployExit: "0"},
		{name: "deploy fails", deployExit: "1", wantFailed: true},
	} {
		t.Run("example deploy job: "+tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			r := newRunner(t, ns, 7)
			script(t, r, "deploy.sh", deployScript(tt.deployExit))
			res := r.runJob(example, "deploy")

			assert.Equal(t, tt.wantFailed, res.Failed, "job result")
			assert.Equal(t, "success", res.Steps["lock"], "the lock step")
			assert.Equal(t, "success", res.Steps["post lock"], "the post step ran and succeeded")
			installed := res.Outputs["lockctl/lockctl/integrations/github/setup@v0.2.0"]
			assert.Nil(t, installed, "no id, no outputs kept")
			token := res.Outputs["lock"]["token"]
			require.NotEmpty(t, token, "the lock step's token output")
			args, err := os.ReadFile(filepath.Join(r.workdir, "deploy.args"))
			require.NoError(t, err, "deploy.sh ran")
			assert.Equal(t, "staging "+token, strings.TrimSpace(string(args)), "the deploy step got the token output")
			envToken, err := os.ReadFile(filepath.Join(r.workdir, "deploy.env-token"))
			require.NoError(t, err)
			assert.Equal(t, token, strings.TrimSpace(string(envToken)), "LOCKCTL_FENCING_TOKEN in later steps")
			var during map[string]any
			data, err := os.ReadFile(filepath.Join(r.workdir, "deploy.status"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &during))
			st := during["status"].(map[string]any)
			assert.Equal(t, "held", st["state"], "held while deploying")
			assert.Equal(t, token, st["token"], "by this hold")
			assert.Equal(t, map[string]any{"owner": "acme", "repo": "web", "branch": "main", "build": "7"},
				pick(st["holder"].(map[string]any), "owner", "repo", "branch", "build"), "with the job's identity")
			assert.Regexp(t, `installed lockctl v0.2.0 \(linux/\w+, sha256 [0-9a-f]{64}\)`, r.log.String(), "setup verified and installed the release")

			assert.Equal(t, "free", status(t, ns)["state"], "released when the job ended")
		})
	}

	t.Run("example migrate job: run holds the lock for one command", func(t *testing.T) {
		ns := env.Namespace(t)
		r := newRunner(t, ns, 8)
		script(t, r, "migrate.sh", `lockctl status staging -o json > migrate.status; echo "migrating $1"`+"\n")
		res := r.runJob(example, "migrate")
		require.False(t, res.Failed, "job log:\n%s", r.log.String())
		data, err := os.ReadFile(filepath.Join(r.workdir, "migrate.status"))
		require.NoError(t, err)
		assert.Contains(t, string(data), `"state": "held"`, "held while migrating")
		assert.Contains(t, r.log.String(), "migrating staging")
		assert.Equal(t, "free", status(t, ns)["state"], "released when the command ended")
	})

	// A workflow of the failure cases, in the example's form.
	failures := filepath.Join(t.TempDir(), "failures.yml")
	require.NoError(t, os.WriteFile(failures, []byte(`
jobs:
  deploy:
    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, timeout: 2s}
    - name: deploy
      run: ./deploy.sh staging
  run-fails:
    steps:
    - uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {command: run, namespace: staging, run: exit 7}
`), 0o644))
	// kubeconfigStep does what the example's setup and kubeconfig steps
	// do: lockctl on PATH, a kubeconfig whose context is in ns.
	kubeconfigStep := func(t *testing.T, r *ghRunner, ns string) {
		require.NoError(t, os.MkdirAll(filepath.Join(r.env["HOME"], ".kube"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(r.env["HOME"], ".kube", "config"), kubeconfigIn(t, env, ns), 0o600))
		r.path = append(r.path, filepath.Dir(clitest.Binary(t)))
	}
	for _, tt := range []struct {
		name      string
		holderEnv []string
		holder    []string
		wantCode  string
	}{
		{
			name: "superseded by a newer build of the branch",
			// Run 9 of the same workflow, on its runner.
			holderEnv: []string{"CI=true", "GITHUB_ACTIONS=true", "GITHUB_REPOSITORY=acme/web", "GITHUB_REF_NAME=main", "GITHUB_RUN_NUMBER=9",
				"GITHUB_WORKFLOW_REF=acme/web/.github/workflows/deploy.yml@refs/heads/main", "GITHUB_JOB=deploy", "RUNNER_NAME=GitHub Actions 9", "GITHUB_RUN_ATTEMPT=1"},
			wantCode: "exited 3",
		},
		{name: "timed out behind another repository", holder: []string{"--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"}, wantCode: "exited 4"},
	} {
		t.Run("acquire "+tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			hold(t, ns, tt.holderEnv, tt.holder...)
			before := status(t, ns)
			r := newRunner(t, ns, 7)
			kubeconfigStep(t, r, ns)
			script(t, r, "deploy.sh", "touch deployed\n")
			res := r.runJob(failures, "deploy")
			assert.True(t, res.Failed, "the job fails")
			assert.Equal(t, "failure", res.Steps["lock"])
			assert.Contains(t, r.log.String(), tt.wantCode)
			assert.Equal(t, "skipped", res.Steps["deploy"], "no deploy without the lock")
			assert.NoFileExists(t, filepath.Join(r.workdir, "deployed"))
			assert.Equal(t, "success", res.Steps["post lock"], "post does not fail the job a second time")
			assert.Contains(t, r.log.String(), "no lock held by this action (acquire exited "+strings.TrimPrefix(tt.wantCode, "exited ")+"), nothing to release")
			assert.Equal(t, before["token"], status(t, ns)["token"], "the other build's hold is untouched")
		})
	}

	t.Run("run fails with the command's status and releases", func(t *testing.T) {
		ns := env.Namespace(t)
		r := newRunner(t, ns, 7)
		kubeconfigStep(t, r, ns)
		res := r.runJob(failures, "run-fails")
		assert.True(t, res.Failed)
		assert.Contains(t, r.log.String(), "exit status 7")
		assert.Equal(t, "free", status(t, ns)["state"], "released")
	})

	// workflow writes a workflow of one job, deploy, into a file.
	workflow := func(t *testing.T, body string) string {
		file := filepath.Join(t.TempDir(), "deploy.yml")
		require.NoError(t, os.WriteFile(file, []byte("name: deploy\njobs:\n  deploy:\n"+body), 0o644))
		return file
	}
	// waiters are the identities queued for staging.
	waiters := func(t *testing.T, ns string) []any {
		w, _ := status(t, ns)["waiters"].([]any)
		return w
	}

	t.Run("lock-namespace reaches the post step", func(t *testing.T) {
		// The kubeconfig's context is in one namespace, the lock in
		// another, named by the input alone.
		ns, kubeNS := env.Namespace(t), env.Namespace(t)
		r := newRunner(t, kubeNS, 7)
		kubeconfigStep(t, r, kubeNS)
		script(t, r, "deploy.sh", "lockctl status staging --lock-namespace "+ns+" -o json > deploy.status\n")
		res := r.runJob(workflow(t, `    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, lock-namespace: `+ns+`, timeout: 2m}
    - name: deploy
      run: ./deploy.sh
`), "deploy")
		require.False(t, res.Failed, "the job succeeds")
		data, err := os.ReadFile(filepath.Join(r.workdir, "deploy.status"))
		require.NoError(t, err)
		assert.Contains(t, string(data), `"state": "held"`, "held in the lock namespace while deploying")
		assert.Equal(t, "success", res.Steps["post lock"])
		assert.Equal(t, "free", status(t, ns)["state"], "the post step released it in the lock namespace")
		assert.NotContains(t, r.log.String(), "::warning::")
	})

	t.Run("a post step that finds its hold gone warns", func(t *testing.T) {
		ns := env.Namespace(t)
		r := newRunner(t, ns, 7)
		kubeconfigStep(t, r, ns)
		// Someone breaks the lock while the job deploys.
		script(t, r, "deploy.sh", "lockctl release staging --force\n")
		res := r.runJob(workflow(t, `    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, timeout: 2m}
    - name: deploy
      run: ./deploy.sh
`), "deploy")
		assert.False(t, res.Failed, "the job's result stands")
		assert.Equal(t, "success", res.Steps["post lock"])
		assert.Regexp(t, `::warning::lock staging was held by this job under fencing token \d+, but the post step found it not held`, r.log.String())
	})

	t.Run("cancelled while waiting: the claim leaves the queue", func(t *testing.T) {
		ns := env.Namespace(t)
		other := []string{"--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"}
		hold(t, ns, nil, other...)
		r := newRunner(t, ns, 7)
		kubeconfigStep(t, r, ns)
		script(t, r, "deploy.sh", "touch deployed\n")
		file := workflow(t, `    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, timeout: 10m}
    - name: deploy
      run: ./deploy.sh
`)
		var res ghJobResult
		done := inBackground(func() { res = r.runJob(file, "deploy") })
		require.Eventually(t, func() bool { return len(waiters(t, ns)) == 1 }, 2*time.Minute, 100*time.Millisecond,
			"the lock step waits in the queue:\n%s", r.log.String())
		r.cancel()
		<-done
		assert.True(t, res.Cancelled)
		assert.Equal(t, "cancelled", res.Steps["lock"])
		assert.Equal(t, "skipped", res.Steps["deploy"])
		assert.NoFileExists(t, filepath.Join(r.workdir, "deployed"))
		assert.Equal(t, "success", res.Steps["post lock"], "the post step runs on cancel")
		assert.Contains(t, r.log.String(), "left the queue")
		assert.Empty(t, waiters(t, ns), "the cancelled run's claim is gone")
		assert.Empty(t, processesIn(t, r.workdir), "nothing the job started is left running")
		// The holder releases: nobody is next, the cancelled run least.
		o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns},
			append([]string{"release", "staging"}, other...)...)
		require.Equal(t, 0, o.Code, o.Stderr)
		assert.NotContains(t, o.Stderr, "now held by")
		assert.Equal(t, "free", status(t, ns)["state"])
	})

	t.Run("cancelled while run's command takes 12s to stop: the hold is not left", func(t *testing.T) {
		ns := env.Namespace(t)
		r := newRunner(t, ns, 7)
		kubeconfigStep(t, r, ns)
		// A deploy tool that traps INT and TERM and needs 12 s to stop
		// cleanly: longer than the runner's 7.5 s to SIGTERM and 10 s to
		// SIGKILL.
		script(t, r, "slow.sh", `trap 'echo "slow.sh: got INT"; stopping=1' INT
trap 'echo "slow.sh: got TERM"; stopping=1' TERM
touch started
while [ -z "${stopping:-}" ]; do sleep 0.1 || true; done
end=$((SECONDS + 12))
while [ "$SECONDS" -lt "$end" ]; do sleep 0.1 || true; done
touch stopped-cleanly
`)
		file := workflow(t, `    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {command: run, namespace: staging, run: ./slow.sh}
`)
		var res ghJobResult
		done := inBackground(func() { res = r.runJob(file, "deploy") })
		require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(r.workdir, "started")); return err == nil }, 2*time.Minute, 100*time.Millisecond,
			"the command runs under the lock:\n%s", r.log.String())
		require.Equal(t, "held", status(t, ns)["state"])
		// The next run waits for the lock meanwhile.
		next := []string{"--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"}
		var nextRun clitest.Outcome
		nextDone := inBackground(func() {
			nextRun = clitest.Run(t, 5*time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns},
				append([]string{"acquire", "staging", "--ttl", "1h", "--timeout", "4m"}, next...)...)
		})
		require.Eventually(t, func() bool { return len(waiters(t, ns)) == 1 }, 2*time.Minute, 100*time.Millisecond, "the next run waits")
		cancelled := time.Now()
		r.cancel()
		<-done
		postEnded := time.Now()
		log := r.log.String()
		assert.True(t, res.Cancelled)
		assert.Equal(t, "cancelled", res.Steps["lock"])
		assert.Equal(t, "success", res.Steps["post lock"], "the post step runs on cancel")
		assert.Contains(t, log, "slow.sh: got INT", "the command got the runner's SIGINT")
		assert.Contains(t, log, "SIGTERM again: stopping the command now with SIGKILL and releasing lock \"staging\"", "the runner's SIGTERM stopped it at once")
		assert.NoFileExists(t, filepath.Join(r.workdir, "stopped-cleanly"), "it did not get its 12 s")
		assert.Contains(t, log, "releasing by this job's identity", "post released what the cancelled run may have held")
		assert.Empty(t, processesIn(t, r.workdir), "nothing the job started is left running")
		// The hold is gone when the post step has ended: the lock is free or
		// the next run's already, not the cancelled build's.
		st := status(t, ns)
		if holder, ok := st["holder"].(map[string]any); ok {
			assert.Equal(t, "api", holder["repo"], "held by the next run, not the cancelled one: %v", st)
		}
		<-nextDone
		require.Equal(t, 0, nextRun.Code, "the next run gets the lock: %s", nextRun.Stderr)
		t.Logf("cancel to post step's end %s; the next run held the lock %s after it", postEnded.Sub(cancelled).Round(time.Millisecond),
			time.Since(postEnded).Round(time.Millisecond))
	})

	t.Run("a matrix: two jobs of one run never hold at once", func(t *testing.T) {
		ns := env.Namespace(t)
		out := t.TempDir()
		order, gate := filepath.Join(out, "order"), filepath.Join(out, "go")
		file := workflow(t, `    strategy:
      matrix: {region: [eu, us]}
    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, timeout: 10m}
    - name: deploy
      run: ./deploy.sh
`)
		var runners [2]*ghRunner
		var results [2]ghJobResult
		for i := range runners {
			// One run, one job, each matrix entry on its own runner.
			r := newGHRunner(t, ghRun{Repository: "acme/web", Ref: "refs/heads/main", Workflow: ".github/workflows/deploy.yml",
				ID: 1009, Number: 9, Attempt: 1, Runner: fmt.Sprintf("GitHub Actions %d", i+1)})
			r.actions = map[string]string{"lockctl/lockctl/integrations/github": filepath.Join(repoRoot(), "integrations", "github")}
			kubeconfigStep(t, r, ns)
			script(t, r, "deploy.sh", `echo "start $RUNNER_NAME" >> `+order+`
while ! [ -e `+gate+` ]; do sleep 0.1; done
echo "end $RUNNER_NAME" >> `+order+"\n")
			runners[i] = r
		}
		var done []<-chan struct{}
		for i, r := range runners {
			done = append(done, inBackground(func() { results[i] = r.runJob(file, "deploy") }))
		}
		require.Eventually(t, func() bool {
			data, _ := os.ReadFile(order)
			return strings.Count(string(data), "\n") == 1 && len(waiters(t, ns)) == 1
		}, 2*time.Minute, 100*time.Millisecond, "one job deploys while the other waits")
		data, err := os.ReadFile(order)
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(data), "start"), "one deploy at a time: %s", data)
		require.NoError(t, os.WriteFile(gate, nil, 0o644))
		for _, d := range done {
			<-d
		}
		for i := range results {
			assert.False(t, results[i].Failed, "job %d", i)
		}
		data, err = os.ReadFile(order)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		require.Len(t, lines, 4, "%s", data)
		first, second := strings.TrimPrefix(lines[0], "start "), strings.TrimPrefix(lines[2], "start ")
		assert.NotEqual(t, first, second)
		assert.Equal(t, []string{"start " + first, "end " + first, "start " + second, "end " + second}, lines, "one deploy after the other")
		assert.Equal(t, "free", status(t, ns)["state"], "both released")
	})

	t.Run("a re-run takes over the hold its first attempt left", func(t *testing.T) {
		ns := env.Namespace(t)
		file := workflow(t, `    steps:
    - id: lock
      uses: lockctl/lockctl/integrations/github@v0.2.0
      with: {namespace: staging, timeout: 2m}
    - name: deploy
      run: ./deploy.sh
`)
		attempt := func(n int, runner string) *ghRunner {
			r := newGHRunner(t, ghRun{Repository: "acme/web", Ref: "refs/heads/main", Workflow: ".github/workflows/deploy.yml",
				ID: 1011, Number: 11, Attempt: n, Runner: runner})
			r.actions = map[string]string{"lockctl/lockctl/integrations/github": filepath.Join(repoRoot(), "integrations", "github")}
			kubeconfigStep(t, r, ns)
			script(t, r, "deploy.sh", "lockctl status staging -o json > deploy.status\n")
			return r
		}
		// The first attempt's runner dies after its steps: no post step.
		first := attempt(1, "GitHub Actions 3")
		first.diesBeforePost = true
		res := first.runJob(file, "deploy")
		require.False(t, res.Failed)
		firstToken := res.Outputs["lock"]["token"]
		require.Equal(t, firstToken, status(t, ns)["token"], "the dead runner's hold is left")

		second := attempt(2, "GitHub Actions 4")
		res = second.runJob(file, "deploy")
		require.False(t, res.Failed, "the re-run takes over at once (timeout 2m)")
		assert.NotEqual(t, firstToken, res.Outputs["lock"]["token"], "under a new fencing token")
		data, err := os.ReadFile(filepath.Join(second.workdir, "deploy.status"))
		require.NoError(t, err)
		assert.Contains(t, string(data), `"state": "held"`)
		assert.Equal(t, "free", status(t, ns)["state"], "the re-run's post step released")
		assert.NotContains(t, second.log.String(), "::warning::")
	})
}

// pick returns the keys of m.
func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}

// inBackground runs a job in a goroutine of its own and closes the channel
// it returns when the job has ended, failed test assertion included (a
// failed require ends the goroutine, running its defers). The jobs of one
// test that must run at once run so, not as parallel subtests, which
// -parallel would serialise.
func inBackground(job func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		job()
	}()
	return done
}

// kubeconfigIn is the test environment's kubeconfig with its context in
// namespace ns, as a user's kubeconfig names theirs.
func kubeconfigIn(t *testing.T, env *testenv.Env, ns string) []byte {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	require.NoError(t, err)
	cfg.Contexts[cfg.CurrentContext].Namespace = ns
	data, err := clientcmd.Write(*cfg)
	require.NoError(t, err)
	return data
}

// processesIn lists the processes (pid and command line) whose working
// directory is dir or below it.
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || (cwd != dir && !strings.HasPrefix(cwd, dir+"/")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return out
}
