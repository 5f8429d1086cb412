package integrations_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// gitlabPipeline is a project that includes the lockctl component, run by
// gitlab-ci-local with the shell executor on this machine.
type gitlabPipeline struct {
	dir string
	cmd *exec.Cmd
	out bytes.Buffer
}

// deployJob is a deploy job that extends .lockctl and runs deploy.sh.
const deployJob = `  stage: deploy
  extends: .lockctl
  script:
    - ./deploy.sh staging
`

// newGitLabProject makes a git project of acme/web on main whose
// .gitlab-ci.yml includes the component (integrations/gitlab/templates) with
// inputs, the lock in namespace ns, and has the deploy job job (deployJob,
// or another) whose deploy.sh runs deployScript.
func newGitLabProject(t *testing.T, ns, job, deployScript string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=ci", "GIT_AUTHOR_EMAIL=ci@example.com", "GIT_COMMITTER_NAME=ci", "GIT_COMMITTER_EMAIL=ci@example.com")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	component, err := os.ReadFile(filepath.Join(repoRoot(), "integrations", "gitlab", "templates", "lockctl.yml"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "templates", "lockctl.yml"), component, 0o644))
	// NOTE: a project includes the component by its catalog path
	// (component: $CI_SERVER_FQDN/...); gitlab-ci-local resolves that on
	// a GitLab server only, so the same file is included locally, with the
	// same inputs.
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".gitlab-ci.yml"), []byte(`include:
  - local: templates/lockctl.yml
    inputs:
      namespace: staging
      lock-namespace: `+ns+`
      timeout: 2m
stages: [deploy]
deploy:
`+job), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\nset -eu\n"+deployScript), 0o755))
	git("init", "-q", "-b", "main")
	git("remote", "add", "origin", "https://gitlab.example/acme/web.git")
	git("add", "-A")
	git("commit", "-q", "-m", "deploy")
	return dir
}

// startGitLabPipeline starts pipeline number iid of the project in dir.
func startGitLabPipeline(t *testing.T, env *testenv.Env, dir, iid string, vars ...string) *gitlabPipeline {
	t.Helper()
	gcl := tool(t, "gitlab-ci-local")
	// NOTE: gitlab-ci-local sets GITLAB_CI=false, so that scripts can tell
	// a local run, and a job's variables as a runner does, by which lockctl
	// recognises a GitLab job. CI_PIPELINE_IID numbers the pipelines as
	// GitLab would across projects' clones. Shell jobs run in the project's
	// directory, all of them in the same one.
	args := []string{"--shell-executor-no-image", "--variable", "KUBECONFIG=" + env.Kubeconfig, "--variable", "CI_PIPELINE_IID=" + iid}
	for _, v := range vars {
		args = append(args, "--variable", v)
	}
	p := &gitlabPipeline{dir: dir, cmd: exec.Command(gcl, args...)}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "PATH="+filepath.Dir(clitest.Binary(t))+":"+os.Getenv("PATH"))
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if t.Failed() {
			t.Logf("pipeline %s in %s:\n%s", iid, dir, p.out.String())
		}
	})
	return p
}

// wait waits for the pipeline and tells whether it succeeded.
func (p *gitlabPipeline) wait() bool {
	return p.cmd.Wait() == nil
}

// TestIntegrationGitLabComponent runs pipelines that use the CI/CD
// component with gitlab-ci-local (which also validates .gitlab-ci.yml and
// the component, inputs interpolated, against GitLab's CI schema) in shell
// mode against the local control plane: a pipeline whose deploy fails still
// releases the lock in after_script, and a second pipeline of the branch
// waits for the first to finish its deploy before it starts its own.
func TestIntegrationGitLabComponent(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	status := func(t *testing.T, ns string) string {
		o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}, "status", "staging", "-o", "json")
		require.Equal(t, 0, o.Code, o.Stderr)
		return o.Stdout
	}

	t.Run("a failed deploy still releases", func(t *testing.T) {
		ns := env.Namespace(t)
		out := t.TempDir()
		dir := newGitLabProject(t, ns, deployJob, `lockctl status staging -o json > "$OUT/status.json"
echo "$LOCKCTL_FENCING_TOKEN" > "$OUT/token"
exit 1
`)
		p := startGitLabPipeline(t, env, dir, "7", "OUT="+out)
		assert.False(t, p.wait(), "the pipeline fails")
		during, err := os.ReadFile(filepath.Join(out, "status.json"))
		require.NoError(t, err, "deploy.sh ran:\n%s", p.out.String())
		assert.Contains(t, string(during), `"state": "held"`, "held while deploying")
		assert.Contains(t, string(during), `"repo": "web"`, "with the pipeline's identity")
		assert.Contains(t, string(during), `"build": "7"`)
		token, err := os.ReadFile(filepath.Join(out, "token"))
		require.NoError(t, err)
		assert.NotEmpty(t, strings.TrimSpace(string(token)), "LOCKCTL_FENCING_TOKEN in the script")
		assert.Contains(t, status(t, ns), `"state": "free"`, "after_script released")
	})

	t.Run("a second pipeline waits for the first", func(t *testing.T) {
		ns := env.Namespace(t)
		out := t.TempDir()
		log := filepath.Join(out, "order")
		// Each deploy notes its start and end; the first holds the lock
		// until the test lets it go.
		script := `echo "start $CI_PIPELINE_IID" >> "$ORDER"
while [ "$CI_PIPELINE_IID" = 1 ] && ! [ -e "$OUT/go" ]; do sleep 0.1; done
echo "end $CI_PIPELINE_IID" >> "$ORDER"
`
		first := startGitLabPipeline(t, env, newGitLabProject(t, ns, deployJob, script), "1", "OUT="+out, "ORDER="+log)
		require.Eventually(t, func() bool { data, _ := os.ReadFile(log); return string(data) == "start 1\n" }, 2*time.Minute, 100*time.Millisecond,
			"the first pipeline deploys:\n%s", &first.out)
		second := startGitLabPipeline(t, env, newGitLabProject(t, ns, deployJob, script), "2", "OUT="+out, "ORDER="+log)
		require.Eventually(t, func() bool { return strings.Contains(status(t, ns), `"waiters"`) }, 2*time.Minute, 100*time.Millisecond,
			"the second pipeline waits in the lock's queue:\n%s", &second.out)
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, "start 1\n", string(data), "the second has not started its deploy")
		require.NoError(t, os.WriteFile(filepath.Join(out, "go"), nil, 0o644))
		assert.True(t, first.wait(), "the first pipeline succeeds")
		assert.True(t, second.wait(), "the second pipeline succeeds")
		data, err = os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, "start 1\nend 1\nstart 2\nend 2\n", string(data), "one deploy at a time, in order")
		assert.Contains(t, status(t, ns), `"state": "free"`, "both released")
	})

	t.Run("two parallel jobs in one directory: one holds at a time", func(t *testing.T) {
		ns := env.Namespace(t)
		out := t.TempDir()
		log := filepath.Join(out, "order")
		// Each job notes its start and end; the first holds the lock until
		// the test lets it go.
		dir := newGitLabProject(t, ns, `  stage: deploy
  extends: .lockctl
  parallel: 2
  script:
    - ./deploy.sh staging
`, `echo "start $CI_JOB_NAME" >> "$ORDER"
while ! [ -e "$OUT/go" ]; do sleep 0.1; done
echo "end $CI_JOB_NAME" >> "$ORDER"
`)
		p := startGitLabPipeline(t, env, dir, "3", "OUT="+out, "ORDER="+log)
		require.Eventually(t, func() bool {
			data, _ := os.ReadFile(log)
			return strings.Count(string(data), "start") == 1 && strings.Contains(status(t, ns), `"waiters"`)
		}, 2*time.Minute, 100*time.Millisecond, "one job deploys while the other waits in the queue:\n%s", &p.out)
		data, err := os.ReadFile(log)
		require.NoError(t, err)
		assert.Equal(t, 1, strings.Count(string(data), "start"), "one deploy at a time: %s", data)
		require.NoError(t, os.WriteFile(filepath.Join(out, "go"), nil, 0o644))
		assert.True(t, p.wait(), "the pipeline succeeds")
		data, err = os.ReadFile(log)
		require.NoError(t, err)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		require.Len(t, lines, 4, "%s", data)
		first, second := strings.TrimPrefix(lines[0], "start "), strings.TrimPrefix(lines[2], "start ")
		// NOTE: gitlab-ci-local names them "deploy: [1/2]", GitLab "deploy 1/2".
		assert.ElementsMatch(t, []string{"deploy: [1/2]", "deploy: [2/2]"}, []string{first, second})
		assert.Equal(t, []string{"start " + first, "end " + first, "start " + second, "end " + second}, lines, "one deploy after the other")
		assert.Contains(t, status(t, ns), `"state": "free"`, "both released")
	})

	t.Run("a job cancelled as GitLab's runner cancels it: lockctl run releases once its command stopped", func(t *testing.T) {
		ns := env.Namespace(t)
		out := t.TempDir()
		// A deploy that traps INT and TERM and needs 12 s to stop cleanly.
		dir := newGitLabProject(t, ns, `  stage: deploy
  script:
    - lockctl run --lock staging --timeout 2m -- ./deploy.sh
`, `trap 'echo "deploy: got TERM"; stopping=1' TERM
trap 'echo "deploy: got INT"; stopping=1' INT
touch "$OUT/started"
stopping=
while [ -z "$stopping" ]; do sleep 0.1 || true; done
i=0
while [ "$i" -lt 120 ]; do sleep 0.1 || true; i=$((i + 1)); done
touch "$OUT/stopped-cleanly"
`)
		p := startGitLabPipeline(t, env, dir, "5", "OUT="+out, "LOCKCTL_LOCK_NAMESPACE="+ns)
		require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(out, "started")); return err == nil }, 2*time.Minute, 100*time.Millisecond,
			"the deploy runs under the lock:\n%s", &p.out)
		require.Contains(t, status(t, ns), `"state": "held"`)
		// NOTE: gitlab-ci-local has no cancel of a job (its SIGINT removes
		// its containers and exits, after_script not run, the script not
		// signalled). GitLab Runner cancels a job by SIGTERM to the job
		// shell's process group (SIGKILL after its graceful timeout); here
		// the job's processes share gitlab-ci-local's group, so each of
		// them gets the SIGTERM, gitlab-ci-local not.
		cancelled := time.Now()
		signalled := signalJobGroup(t, p.cmd.Process.Pid, syscall.SIGTERM)
		require.NotEmpty(t, signalled, "the job's processes")
		p.wait()
		ended := time.Now()
		if _, err := os.Stat(filepath.Join(out, "stopped-cleanly")); err != nil {
			// The job's shell ended at the SIGTERM, the deploy is still
			// stopping: the lock is still held for it.
			assert.Contains(t, status(t, ns), `"state": "held"`, "not released while the deploy stops")
		}
		require.Eventually(t, func() bool { return strings.Contains(status(t, ns), `"state": "free"`) }, 2*time.Minute, 200*time.Millisecond,
			"released once the deploy stopped")
		t.Logf("cancel to the job's end %s, to the release %s; signalled %v", ended.Sub(cancelled).Round(time.Millisecond),
			time.Since(cancelled).Round(time.Millisecond), signalled)
		assert.FileExists(t, filepath.Join(out, "stopped-cleanly"), "the deploy had its 12 s to stop")
		assert.Contains(t, p.out.String(), "deploy: got TERM", "lockctl passed the runner's SIGTERM to the deploy")
		require.Eventually(t, func() bool { return len(processesIn(t, dir)) == 0 }, time.Minute, 100*time.Millisecond, "nothing of the job left running")
	})

	t.Run("a workspace cleaned before after_script still releases", func(t *testing.T) {
		ns := env.Namespace(t)
		dir := newGitLabProject(t, ns, deployJob, `git clean -ffdxq -e .gitlab-ci-local
`)
		p := startGitLabPipeline(t, env, dir, "4")
		assert.True(t, p.wait(), "the pipeline succeeds")
		assert.Contains(t, status(t, ns), `"state": "free"`, "after_script released")
	})
}

// signalJobGroup sends sig, as GitLab Runner's shell executor cancels a
// job (kill of the job shell's process group), to every process below
// root (gitlab-ci-local) in root's process group: the job's shell and
// what it runs that kept its group. Processes that made a group of their
// own (lockctl run's command) and root itself get nothing. It returns the
// processes signalled.
func signalJobGroup(t *testing.T, root int, sig syscall.Signal) []string {
	t.Helper()
	type proc struct{ ppid, pgrp int }
	procs := map[int]proc{}
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgrp, _ := strconv.Atoi(fields[2])
		procs[pid] = proc{ppid, pgrp}
	}
	group := procs[root].pgrp
	below := func(pid int) bool {
		for p := procs[pid].ppid; p > 1; p = procs[p].ppid {
			if p == root {
				return true
			}
		}
		return false
	}
	var out []string
	for pid, p := range procs {
		if pid != root && p.pgrp == group && below(pid) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if syscall.Kill(pid, sig) == nil {
				out = append(out, strconv.Itoa(pid)+" "+strings.ReplaceAll(strings.TrimSpace(string(cmdline)), "\x00", " "))
			}
		}
	}
	return out
}
