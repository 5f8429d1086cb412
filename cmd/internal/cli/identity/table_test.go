package identity

import (
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockctl/lockctl/lock/record"
)

// ciCase is the environment of one job of a build on a CI system, and how
// it changes for the other cases of the table in docs/ci-identity.md.
type ciCase struct {
	env map[string]string
	// other is what differs for another job of the same build running at
	// once (a matrix sibling, a parallel job).
	other map[string]string
	// again is what differs when the job runs again (re-run, retry).
	again map[string]string
	// pods: each job runs in its own pod, which lockctl finds itself in.
	pods bool
}

// ciCases has one case per row of the table, by the name FromEnv gives.
var ciCases = map[string]ciCase{
	"github-actions": {
		env: map[string]string{"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main",
			"GITHUB_RUN_NUMBER": "88", "GITHUB_RUN_ID": "12345678901", "GITHUB_WORKFLOW": "Deploy",
			"GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/deploy.yml@refs/heads/main",
			"GITHUB_JOB":          "deploy", "RUNNER_NAME": "GitHub Actions 3", "GITHUB_RUN_ATTEMPT": "1"},
		other: map[string]string{"RUNNER_NAME": "GitHub Actions 4"},
		again: map[string]string{"RUNNER_NAME": "GitHub Actions 9", "GITHUB_RUN_ATTEMPT": "2"},
	},
	"gitlab": {
		env: map[string]string{"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web",
			"CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "9", "CI_PIPELINE_ID": "5501", "CI_JOB_NAME": "deploy 1/2", "CI_JOB_ID": "1001",
			"CI_SERVER_URL": "https://gitlab.example", "CI_PROJECT_PATH": "acme/web"},
		other: map[string]string{"CI_JOB_NAME": "deploy 2/2", "CI_JOB_ID": "1002"},
		again: map[string]string{"CI_JOB_ID": "1007"},
	},
	"buildkite": {
		env: map[string]string{"CI": "true", "BUILDKITE": "true", "BUILDKITE_REPO": "git@git.example:acme/web.git",
			"BUILDKITE_ORGANIZATION_SLUG": "acme", "BUILDKITE_PIPELINE_SLUG": "web-deploy", "BUILDKITE_BRANCH": "main",
			"BUILDKITE_BUILD_NUMBER": "101", "BUILDKITE_STEP_ID": "0190-step", "BUILDKITE_JOB_ID": "0190-job-a", "BUILDKITE_RETRY_COUNT": "0"},
		other: map[string]string{"BUILDKITE_JOB_ID": "0190-job-b"},
		again: map[string]string{"BUILDKITE_JOB_ID": "0190-job-c", "BUILDKITE_RETRY_COUNT": "1"},
	},
	"prow": {
		env:  map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "PULL_BASE_REF": "main", "BUILD_ID": "17"},
		pods: true,
	},
	"argo-workflows": {
		env:  map[string]string{"ARGO_WORKFLOW_NAME": "deploy-x7k2p"},
		pods: true,
	},
	"jenkins": {
		env: map[string]string{"JENKINS_URL": "http://jenkins/", "GIT_URL": "https://git.example/acme/web.git",
			"BRANCH_NAME": "main", "BUILD_NUMBER": "31", "EXECUTOR_NUMBER": "0"},
		other: map[string]string{"EXECUTOR_NUMBER": "1"},
		again: map[string]string{"BUILD_NUMBER": "32"},
	},
	"circleci": {
		env: map[string]string{"CI": "true", "CIRCLECI": "true", "CIRCLE_PROJECT_USERNAME": "acme", "CIRCLE_PROJECT_REPONAME": "web",
			"CIRCLE_BRANCH": "main", "CIRCLE_BUILD_NUM": "77", "CIRCLE_NODE_INDEX": "0"},
		other: map[string]string{"CIRCLE_NODE_INDEX": "1"},
		again: map[string]string{"CIRCLE_BUILD_NUM": "78"},
	},
	"azure-pipelines": {
		env: map[string]string{"TF_BUILD": "True", "BUILD_REPOSITORY_NAME": "acme/web", "BUILD_SOURCEBRANCHNAME": "main",
			"BUILD_BUILDID": "1234", "SYSTEM_JOBATTEMPT": "1"},
		other: map[string]string{"SYSTEM_JOBNAME": "deploy_eu"},
		again: map[string]string{"SYSTEM_JOBATTEMPT": "2"},
	},
	"bitbucket": {
		env: map[string]string{"CI": "true", "BITBUCKET_BUILD_NUMBER": "12", "BITBUCKET_WORKSPACE": "acme",
			"BITBUCKET_REPO_SLUG": "web", "BITBUCKET_BRANCH": "main", "BITBUCKET_STEP_UUID": "{a}"},
		other: map[string]string{"BITBUCKET_STEP_UUID": "{b}"},
		again: map[string]string{"BITBUCKET_STEP_UUID": "{c}"},
	},
	"woodpecker": {
		env: map[string]string{"CI": "woodpecker", "CI_REPO_OWNER": "acme", "CI_REPO_NAME": "web",
			"CI_COMMIT_BRANCH": "main", "CI_PIPELINE_NUMBER": "45", "CI_STEP_NAME": "deploy-eu"},
		other: map[string]string{"CI_STEP_NAME": "deploy-us"},
		again: map[string]string{"CI_PIPELINE_NUMBER": "46"},
	},
	"drone": {
		env: map[string]string{"DRONE": "true", "CI": "true", "DRONE_REPO_OWNER": "acme", "DRONE_REPO_NAME": "web",
			"DRONE_COMMIT_BRANCH": "main", "DRONE_BUILD_NUMBER": "44", "DRONE_STEP_NAME": "deploy-eu"},
		other: map[string]string{"DRONE_STEP_NAME": "deploy-us"},
		again: map[string]string{"DRONE_BUILD_NUMBER": "45"},
	},
}

// tableRow is one row of the table in docs/ci-identity.md.
type tableRow struct {
	system string
	// cells by field: "build", "sequence", "job", "jobID", "attempt".
	vars map[string]string
	// what the lock does for another job at once, a step again, the job
	// again: "waits", "re-enters", "takes over".
	other, step, again string
	// recognised is the cell saying which variables make FromEnv
	// recognise the system.
	recognised string
}

// readTable reads the table of docs/ci-identity.md.
func readTable(t *testing.T) []tableRow {
	t.Helper()
	data, err := os.ReadFile("../../../../docs/ci-identity.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(data), "## The table")
	require.True(t, ok, "docs/ci-identity.md has a section \"The table\"")
	table, _, _ = strings.Cut(table, "\n## ") // the section, not those after it
	name := regexp.MustCompile("\\(`([a-z-]+)`\\)")
	var rows []tableRow
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| CI system") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		require.Len(t, cells, 10, "row %q", line)
		m := name.FindStringSubmatch(cells[0])
		require.NotNil(t, m, "row %q names the system as FromEnv does, in (`name`)", line)
		rows = append(rows, tableRow{
			system: m[1],
			vars:   map[string]string{"build": cells[1], "sequence": cells[2], "job": cells[3], "jobID": cells[4], "attempt": cells[5]},
			other:  cells[6], step: cells[7], again: cells[8], recognised: cells[9],
		})
	}
	require.NotEmpty(t, rows)
	return rows
}

var envVar = regexp.MustCompile(`\$[A-Z_]+`)

// TestCITableVariables checks the variables of each row of the table in
// docs/ci-identity.md against those FromEnv reads for that CI system.
func TestCITableVariables(t *testing.T) {
	t.Parallel()
	for _, row := range readTable(t) {
		t.Run(row.system, func(t *testing.T) {
			t.Parallel()
			c, ok := ciCases[row.system]
			require.True(t, ok, "a case for %s", row.system)
			_, src, ci := FromEnv(func(k string) string { return c.env[k] })
			require.Equal(t, row.system, ci.Name, "the environment of the case is recognised as %s", row.system)
			for field, cell := range row.vars {
				if strings.HasPrefix(cell, "—") {
					assert.Empty(t, src[field], "%s: the table says no %s", row.system, field)
					continue
				}
				require.NotEmpty(t, src[field], "%s: the table says %s comes from %s", row.system, field, cell)
				for _, v := range envVar.FindAllString(src[field], -1) {
					assert.Contains(t, envVar.FindAllString(cell, -1), v, "%s: %s read from %s, which the table names", row.system, field, v)
				}
			}
		})
	}
}

var (
	recognisedVar = regexp.MustCompile("`\\$([A-Z_]+)`(?: = `([^`]+)`)?")
	aside         = regexp.MustCompile(`\([^)]*\)`)
)

// TestCITableRecognisedBy checks the last column of the table: each of its
// alternatives, those variables alone (with the value it names, else the
// case's), is recognised as that CI system.
func TestCITableRecognisedBy(t *testing.T) {
	t.Parallel()
	for _, row := range readTable(t) {
		t.Run(row.system, func(t *testing.T) {
			t.Parallel()
			c := ciCases[row.system]
			for _, alt := range strings.Split(aside.ReplaceAllString(row.recognised, ""), "; or ") {
				env := map[string]string{}
				for _, m := range recognisedVar.FindAllStringSubmatch(alt, -1) {
					env[m[1]] = m[2]
					if m[2] == "" {
						env[m[1]] = c.env[m[1]]
						require.NotEmpty(t, env[m[1]], "the case of %s sets %s", row.system, m[1])
					}
				}
				require.NotEmpty(t, env, "%s: %q names variables", row.system, alt)
				_, _, ci := FromEnv(func(k string) string { return env[k] })
				assert.Equal(t, row.system, ci.Name, "%s recognised from %v", row.system, env)
			}
		})
	}
}

// TestCITableBehaviour checks what the lock decides, as the last columns
// of the table in docs/ci-identity.md say, for the environments of each CI
// system: the holder's job, another job of the build at once, a retried
// step of the holder's job, and the holder's job run again.
func TestCITableBehaviour(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for _, row := range readTable(t) {
		t.Run(row.system, func(t *testing.T) {
			t.Parallel()
			c := ciCases[row.system]
			holder := claimOf(t, c.env, "h", c.pods, "job-a")
			holder.Since = metav1.NewMicroTime(now.Add(-time.Minute))
			if holder.Pod == nil {
				exp := metav1.NewMicroTime(now.Add(time.Hour))
				holder.Expires = &exp
			}
			rec := &record.Record{Target: "staging", Policy: record.PolicyNewest, Holder: holder, Updated: holder.Since}
			for _, tc := range []struct {
				what string
				me   record.Claim
				want string
			}{
				{"another job of the build at once", claimOf(t, with(c.env, c.other), "o", c.pods, "job-b"), row.other},
				{"a step of the holder's job again", claimOf(t, c.env, "s", c.pods, "job-a"), row.step},
				{"the holder's job again", claimOf(t, with(c.env, c.again), "r", c.pods, "job-a-rerun"), row.again},
			} {
				d := record.Decide(rec, tc.me, record.PolicyNewest, now, true, time.Minute)
				assert.Equal(t, tc.want, behaviour(d), "%s: %s", row.system, tc.what)
			}
		})
	}
}

// claimOf is the claim lockctl makes in env (in pod when pods says so).
func claimOf(t *testing.T, env map[string]string, session string, pods bool, pod string) record.Claim {
	t.Helper()
	h := Resolve(record.Identity{}, func(k string) string { return env[k] }, func() LocalEnv {
		return LocalEnv{User: "ci", Host: "runner", TerminalSession: 1, PID: 2}
	}, false)
	require.NoError(t, h.Identity.Validate(), "identity from %v", env)
	c := record.Claim{Identity: h.Identity, CIJob: h.Job, Unordered: h.Unordered, ClaimID: session,
		TTL: metav1.Duration{Duration: time.Hour}}
	if pods {
		c.Pod = &record.PodRef{Namespace: "ci", Name: pod, UID: types.UID("uid-" + pod)}
	}
	return c
}

// with is env with the variables of change set over it.
func with(env, change map[string]string) map[string]string {
	out := maps.Clone(env)
	maps.Copy(out, change)
	return out
}

// behaviour names a decision as the table does.
func behaviour(d record.Decision) string {
	switch {
	case d.Outcome == record.Acquired && d.Reentered:
		return "re-enters"
	case d.Outcome == record.Acquired && d.TookOver:
		return "takes over"
	case d.Outcome == record.Waiting:
		return "waits"
	}
	return d.Outcome.String()
}
