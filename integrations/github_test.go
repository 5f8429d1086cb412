package integrations_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	kubeconfig, err := os.ReadFile(env.Kubeconfig)
	require.NoError(t, err)
	example := filepath.Join(repoRoot(), "integrations", "github", "example-workflow.yml")

	// newRunner is a fresh runner machine for a job of run number build,
	// whose lock lives in the test's namespace ns.
	newRunner := func(t *testing.T, ns, build string) *ghRunner {
		work, temp, home := t.TempDir(), t.TempDir(), t.TempDir()
		setup := filepath.Join(repoRoot(), "integrations", "github", "setup")
		r := &ghRunner{
			t: t, workdir: work, temp: temp,
			env: map[string]string{
				"HOME": home, "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web",
				"GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": build, "GITHUB_RUN_ID": "100" + build,
				"LOCKCTL_LOCK_NAMESPACE": ns,
			},
			secrets: map[string]string{"KUBECONFIG": string(kubeconfig)},
			actions: map[string]string{
				"lockctl/lockctl/integrations/github":       filepath.Join(repoRoot(), "integrations", "github"),
				"lockctl/lockctl/integrations/github/setup": setup,
			},
			// The release mirror is this test's server.
			inputDefaults: map[string]map[string]string{setup: {"base-url": rel.BaseURL}},
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("job log:\n%s", r.log.String())
			}
		})
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
	// hold takes staging for another build, as another pipeline would.
	hold := func(t *testing.T, ns string, id ...string) {
		o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns},
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
			r := newRunner(t, ns, "7")
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
		r := newRunner(t, ns, "8")
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
	kubeconfigStep := func(t *testing.T, r *ghRunner) {
		require.NoError(t, os.MkdirAll(filepath.Join(r.env["HOME"], ".kube"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(r.env["HOME"], ".kube", "config"), kubeconfig, 0o600))
		r.path = append(r.path, filepath.Dir(clitest.Binary(t)))
	}
	for _, tt := range []struct {
		name     string
		holder   []string
		wantCode string
	}{
		{name: "superseded by a newer build of the branch", holder: []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "9"}, wantCode: "exited 3"},
		{name: "timed out behind another repository", holder: []string{"--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"}, wantCode: "exited 4"},
	} {
		t.Run("acquire "+tt.name, func(t *testing.T) {
			ns := env.Namespace(t)
			hold(t, ns, tt.holder...)
			before := status(t, ns)
			r := newRunner(t, ns, "7")
			kubeconfigStep(t, r)
			script(t, r, "deploy.sh", "touch deployed\n")
			res := r.runJob(failures, "deploy")
			assert.True(t, res.Failed, "the job fails")
			assert.Equal(t, "failure", res.Steps["lock"])
			assert.Contains(t, r.log.String(), tt.wantCode)
			assert.Equal(t, "skipped", res.Steps["deploy"], "no deploy without the lock")
			assert.NoFileExists(t, filepath.Join(r.workdir, "deployed"))
			assert.Equal(t, "success", res.Steps["post lock"], "post does not fail the job a second time")
			assert.Contains(t, r.log.String(), "no lock held by this action, nothing to release")
			assert.Equal(t, before["token"], status(t, ns)["token"], "the other build's hold is untouched")
		})
	}

	t.Run("run fails with the command's status and releases", func(t *testing.T) {
		ns := env.Namespace(t)
		r := newRunner(t, ns, "7")
		kubeconfigStep(t, r)
		res := r.runJob(failures, "run-fails")
		assert.True(t, res.Failed)
		assert.Contains(t, r.log.String(), "exit status 7")
		assert.Equal(t, "free", status(t, ns)["state"], "released")
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
