package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// writeLabelledJob writes a job file like writeJob's, with labels, whose
// pod kwok finishes with exit code 0 after 2s.
func writeLabelledJob(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	var l []string
	for k, v := range labels {
		l = append(l, fmt.Sprintf("%s: %q", k, v))
	}
	path := testenv.WriteJob(t, name, "0")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	doc := strings.Replace(string(b), "metadata:\n", "metadata:\n  labels: {"+strings.Join(l, ", ")+"}\n", 1)
	path = filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o600))
	return path
}

// TestIntegrationCLIGetJobs: get jobs by several names, by label selector
// (the job's own labels and lockctl's state label), across namespaces, as
// names, wide, and watched while a reconcile loop drives a job to its end.
func TestIntegrationCLIGetJobs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	other := &cli{kubeconfig: c.kubeconfig, namespace: newCLI(t).namespace}
	team := "t" + c.namespace[len(c.namespace)-5:] // unique to this run: the namespace's random suffix
	for _, s := range []struct {
		c    *cli
		name string
	}{{c, "get-web"}, {c, "get-api"}, {other, "get-other"}} {
		o := s.c.run(t, "submit", "-f", writeLabelledJob(t, s.name, map[string]string{"team": team, "app": s.name}))
		require.Equal(t, 0, o.code, "submit %s: %s", s.name, o.stderr)
	}

	o := c.run(t, "get", "jobs", "get-api", "job/get-web", "-o", "name")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "job/get-api\njob/get-web\n", o.stdout, "several names, in the order given")

	o = c.run(t, "get", "jobs", "get-web", "nosuch")
	assert.Equal(t, 1, o.code, "a name that does not exist: %s", o.stderr)
	assert.Regexp(t, `^NAME\s+JOB\s+TYPE\s+STATE\s+.*\nget-web\s+deploy-web\s+postsubmit\s+triggered\s`, o.stdout, "the job that exists is shown")
	assert.Regexp(t, `(?m)^(\d\d:\d\d:\d\d )?error: job "nosuch" not found in namespace "`+c.namespace+`"$`, o.stderr)

	o = c.run(t, "get", "jobs", "-l", "app=get-api", "-o", "name")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "job/get-api\n", o.stdout, "by the job's own label")

	o = c.run(t, "get", "jobs", "-l", "lockctl.dev/state=triggered,app in (get-web,get-other)", "-o", "name")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "job/get-web\n", o.stdout, "by lockctl's state label and a set, in one namespace")

	o = c.run(t, "get", "jobs", "-A", "-l", "team="+team, "-o", "wide")
	require.Equal(t, 0, o.code, o.stderr)
	rows := strings.Split(strings.TrimSpace(o.stdout), "\n")
	require.Len(t, rows, 4, o.stdout)
	assert.Regexp(t, `^NAMESPACE\s+NAME\s+JOB\s+TYPE\s+STATE\s+AGE\s+POD\s+BUILD\s+CLUSTER\s+REFS\s+QUEUE\s+REASON\s+DESCRIPTION$`, rows[0])
	assert.Contains(t, o.stdout, other.namespace)
	assert.Regexp(t, `(?m)^`+c.namespace+`\s+get-web\s+deploy-web\s+postsubmit\s+triggered\s+\S+\s+-\s+-\s+default\s+acme/web@main\s+-\s+-\s+job triggered$`, o.stdout)

	o = c.run(t, "get", "jobs", "-l", "team=(")
	assert.Equal(t, 2, o.code, "a bad selector is a usage error: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: invalid --selector "team=("`)

	// -w: the jobs, then a row for each change the reconcile loop makes.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	watching := c.command(ctx, "get", "jobs", "-w", "-l", "app=get-web")
	var stdout, stderr clitest.SyncBuffer
	watching.Stdout, watching.Stderr = &stdout, &stderr
	require.NoError(t, watching.Start())
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), "get-web") }, time.Minute, 50*time.Millisecond, "the job first")

	loop := startRun(t, c, "reconcile")
	loop.waitFor(t, "reconciling jobs")
	require.Eventually(t, func() bool { return strings.Contains(stdout.String(), " success ") }, time.Minute, 50*time.Millisecond,
		"a row when the job succeeds; stdout: %s; stderr: %s", &stdout, &stderr)
	require.NoError(t, watching.Process.Signal(syscall.SIGINT))
	err := watching.Wait()
	require.Error(t, err, "-w runs until interrupted")
	assert.Equal(t, 130, watching.ProcessState.ExitCode(), "interrupted: %s", &stderr)
	out := stdout.String()
	assert.Regexp(t, `^NAME\s+JOB\s+TYPE\s+STATE\s+AGE\s+POD\s+BUILD\s+DESCRIPTION\nget-web\s+deploy-web\s+postsubmit\s+triggered\s`, out)
	assertInOrder(t, out, []string{" triggered ", " pending ", " success "})
	assert.Equal(t, 1, strings.Count(out, "NAME"), "one header: %s", out)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		assert.True(t, strings.HasPrefix(l, "get-web "), "only the selected job: %q", l)
	}

	// The build clusters the loop recorded, in kubectl's forms too.
	o = c.run(t, "get", "clusters", "-o", "name")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "cluster/default\n", o.stdout, "-o name names a cluster by its alias")
	o = c.run(t, "get", "clusters", "-o", "jsonpath={.default.state}")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, "reachable", o.stdout, "a JSONPath over the states by alias")
}
