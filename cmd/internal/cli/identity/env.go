package identity

import (
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/lock/record"
)

// CI is what FromEnv learned from a CI system.
type CI struct {
	// Name is the CI system recognised ("prow", "github-actions", …), or
	// "ci" for an unknown one that sets $CI, or "" outside CI.
	Name string
	// Unordered is true when the build number only tells builds apart (a
	// hash of a run's name or ID) and does not grow with every build: such
	// claims are served first come, first served (Request.Unordered).
	Unordered bool
	// Job is the CI job lockctl runs in, when the CI system says: the unit
	// that holds a lock once (lock.CIJob). Zero when it does not.
	Job record.CIJob
	// RunURL is the web page of the CI run or job, when the environment
	// gives one (runURL); "" otherwise.
	RunURL string
}

// FromEnv reads the identity a CI system exposes through getenv
// (os.Getenv), and names the environment variable each field came from
// ("$REPO_OWNER"), by field name ("owner", "repo", "branch", "build").
// Fields the environment does not give are left empty; a CI system that
// has no build counter gives no build, never a per-call number. The
// identity's Sequence ("sequence") and the CI job (CI.Job: "job", "jobID",
// "attempt") are set where the CI system gives them; docs/ci-identity.md
// has the table of what each gives and what follows for the lock.
//
// Recognised: Prow and Jenkins X (REPO_OWNER, REPO_NAME, BRANCH_NAME,
// BUILD_NUMBER; Tekton tasks follow the same convention when their pipeline
// passes those parameters as environment), GitHub Actions, GitLab CI (and
// gitlab-ci-local: isGitLab), Jenkins, Buildkite, CircleCI, Azure Pipelines, Bitbucket Pipelines,
// Woodpecker, Drone and Argo Workflows.
func FromEnv(getenv func(string) string) (record.Identity, map[string]string, CI) {
	var id record.Identity
	src := map[string]string{}
	// set sets *dst, unless already set, from the first of vars that is set.
	set := func(field string, dst *string, vars ...string) {
		if *dst != "" {
			return
		}
		for _, v := range vars {
			if val := getenv(v); val != "" {
				*dst, src[field] = val, "$"+v
				return
			}
		}
	}
	// fromURL sets owner and repo from a clone URL in v.
	fromURL := func(v string) {
		if owner, repo := OwnerRepoFromURL(getenv(v)); repo != "" {
			if id.Owner == "" && owner != "" {
				id.Owner, src["owner"] = owner, "$"+v
			}
			if id.Repo == "" {
				id.Repo, src["repo"] = repo, "$"+v
			}
		}
	}
	ci := CI{}
	// attempt sets the job's attempt from the first of vars that holds a
	// number.
	attempt := func(vars ...string) {
		for _, v := range vars {
			if n, err := strconv.ParseUint(getenv(v), 10, 64); err == nil && n > 0 {
				ci.Job.Attempt, src["attempt"] = n, "$"+v
				return
			}
		}
	}
	switch {
	case getenv("REPO_OWNER") != "" || getenv("REPO_NAME") != "":
		ci.Name = "prow"
		set("owner", &id.Owner, "REPO_OWNER")
		set("repo", &id.Repo, "REPO_NAME")
		set("branch", &id.Branch, "BRANCH_NAME", "PULL_BASE_REF")
		set("build", &id.Build, "BUILD_NUMBER", "BUILD_ID")
	case getenv("GITHUB_ACTIONS") == "true":
		ci.Name = "github-actions"
		id.Owner, id.Repo, _ = strings.Cut(getenv("GITHUB_REPOSITORY"), "/")
		src["owner"], src["repo"] = "$GITHUB_REPOSITORY", "$GITHUB_REPOSITORY"
		set("branch", &id.Branch, "GITHUB_REF_NAME")
		set("build", &id.Build, "GITHUB_RUN_NUMBER")
		// Run numbers count per workflow, so the workflow is the sequence:
		// its file, from GITHUB_WORKFLOW_REF, else its name.
		if wf := workflowPath(getenv("GITHUB_WORKFLOW_REF")); wf != "" {
			id.Sequence, src["sequence"] = wf, "$GITHUB_WORKFLOW_REF"
		}
		set("sequence", &id.Sequence, "GITHUB_WORKFLOW")
		// The jobs of a matrix share GITHUB_JOB; each runs on its own
		// runner, which runs one job at a time. A re-run of a run's failed
		// jobs starts once the whole run has ended, with the next
		// GITHUB_RUN_ATTEMPT.
		set("job", &ci.Job.Job, "GITHUB_JOB")
		set("jobID", &ci.Job.JobID, "RUNNER_NAME")
		attempt("GITHUB_RUN_ATTEMPT")
	case isGitLab(getenv):
		ci.Name = "gitlab"
		set("owner", &id.Owner, "CI_PROJECT_NAMESPACE")
		set("repo", &id.Repo, "CI_PROJECT_NAME")
		set("branch", &id.Branch, "CI_COMMIT_REF_NAME")
		set("build", &id.Build, "CI_PIPELINE_IID")
		// Job names are unique in a pipeline (parallel and matrix jobs get
		// "deploy 1/3", "deploy: [eu]"); a retry is a new job with the same
		// name and a higher CI_JOB_ID, started once the one retried ended.
		set("job", &ci.Job.Job, "CI_JOB_NAME")
		set("jobID", &ci.Job.JobID, "CI_JOB_ID")
		attempt("CI_JOB_ID")
	case getenv("BUILDKITE") == "true":
		ci.Name = "buildkite"
		fromURL("BUILDKITE_REPO")
		set("owner", &id.Owner, "BUILDKITE_ORGANIZATION_SLUG")
		set("repo", &id.Repo, "BUILDKITE_PIPELINE_SLUG")
		set("branch", &id.Branch, "BUILDKITE_BRANCH")
		set("build", &id.Build, "BUILDKITE_BUILD_NUMBER")
		// Build numbers count per pipeline, and one repository may have
		// several pipelines.
		set("sequence", &id.Sequence, "BUILDKITE_PIPELINE_SLUG")
		// A job is a step's (one of its parallel copies); a retry is a new
		// job, which waits: nothing tells it from a retry of another job
		// of the same step (a matrix), so it never takes over.
		if step := getenv("BUILDKITE_STEP_ID"); step != "" {
			ci.Job.Job, src["job"] = step, "$BUILDKITE_STEP_ID"
			if n := getenv("BUILDKITE_PARALLEL_JOB"); n != "" {
				ci.Job.Job, src["job"] = step+"/"+n, "$BUILDKITE_STEP_ID/$BUILDKITE_PARALLEL_JOB"
			}
		}
		set("jobID", &ci.Job.JobID, "BUILDKITE_JOB_ID")
	case getenv("CIRCLECI") == "true":
		ci.Name = "circleci"
		set("owner", &id.Owner, "CIRCLE_PROJECT_USERNAME")
		set("repo", &id.Repo, "CIRCLE_PROJECT_REPONAME")
		set("branch", &id.Branch, "CIRCLE_BRANCH")
		set("build", &id.Build, "CIRCLE_BUILD_NUM")
	case strings.EqualFold(getenv("TF_BUILD"), "true"):
		ci.Name = "azure-pipelines"
		// BUILD_REPOSITORY_NAME is "owner/repo" for GitHub repositories
		// and "repo" for Azure Repos, whose owner is the team project.
		if owner, repo, ok := strings.Cut(getenv("BUILD_REPOSITORY_NAME"), "/"); ok {
			id.Owner, id.Repo = owner, repo
			src["owner"], src["repo"] = "$BUILD_REPOSITORY_NAME", "$BUILD_REPOSITORY_NAME"
		}
		set("owner", &id.Owner, "SYSTEM_TEAMPROJECT")
		set("repo", &id.Repo, "BUILD_REPOSITORY_NAME")
		set("branch", &id.Branch, "BUILD_SOURCEBRANCHNAME")
		// BUILD_BUILDNUMBER is a formatted name ("20261203.4"); the ID grows.
		set("build", &id.Build, "BUILD_BUILDID")
	case getenv("BITBUCKET_BUILD_NUMBER") != "":
		ci.Name = "bitbucket"
		set("owner", &id.Owner, "BITBUCKET_REPO_OWNER", "BITBUCKET_WORKSPACE")
		set("repo", &id.Repo, "BITBUCKET_REPO_SLUG")
		set("branch", &id.Branch, "BITBUCKET_BRANCH")
		set("build", &id.Build, "BITBUCKET_BUILD_NUMBER")
	case getenv("CI") == "woodpecker":
		ci.Name = "woodpecker"
		set("owner", &id.Owner, "CI_REPO_OWNER")
		set("repo", &id.Repo, "CI_REPO_NAME")
		set("branch", &id.Branch, "CI_COMMIT_BRANCH")
		set("build", &id.Build, "CI_PIPELINE_NUMBER", "CI_BUILD_NUMBER")
	case getenv("DRONE") == "true":
		ci.Name = "drone"
		set("owner", &id.Owner, "DRONE_REPO_OWNER", "DRONE_REPO_NAMESPACE")
		set("repo", &id.Repo, "DRONE_REPO_NAME")
		set("branch", &id.Branch, "DRONE_COMMIT_BRANCH", "DRONE_BRANCH")
		set("build", &id.Build, "DRONE_BUILD_NUMBER")
	case getenv("JENKINS_URL") != "":
		ci.Name = "jenkins"
		fromURL("GIT_URL")
		set("repo", &id.Repo, "JOB_BASE_NAME")
		set("branch", &id.Branch, "BRANCH_NAME", "GIT_BRANCH")
		id.Branch = strings.TrimPrefix(id.Branch, "origin/")
		set("build", &id.Build, "BUILD_NUMBER")
	case getenv("ARGO_WORKFLOW_NAME") != "":
		// Argo Workflows sets ARGO_WORKFLOW_NAME in every container of a
		// step's pod, main included (workflow/controller/workflowpod.go);
		// ARGO_WORKFLOW_UID only in its own init and wait containers. It
		// has no build counter and no repository: the owner and branch are
		// fixed, the repository is the workflow, and a hash of its name
		// tells workflows apart. All of it is the same in every step of a
		// workflow (a step's host name is not), so one step can release
		// what another acquired; such claims are served in arrival order.
		ci = CI{Name: "argo-workflows", Unordered: true}
		id.Owner, id.Branch = "argo", "workflow"
		set("repo", &id.Repo, "ARGO_WORKFLOW_NAME")
		id.Build, src["build"] = hashBuild(getenv("ARGO_WORKFLOW_NAME")), "$ARGO_WORKFLOW_NAME"
	case getenv("CI") != "" && getenv("CI") != "false":
		ci.Name = "ci"
	}
	ci.RunURL = runURL(ci.Name, getenv)
	if ci.Job.Job == "" {
		// A job ID or attempt without the job's name tells nothing.
		ci.Job = record.CIJob{}
		delete(src, "jobID")
		delete(src, "attempt")
	}
	return id, src, ci
}

// gitLabJob are the variables every GitLab CI job has, which identify it
// together: its server, project, pipeline and job.
var gitLabJob = []string{"CI_SERVER_URL", "CI_PROJECT_PATH", "CI_PIPELINE_ID", "CI_JOB_ID"}

// isGitLab recognises a GitLab CI job: GITLAB_CI=true, as a GitLab runner
// sets, or the variables of gitLabJob all set whatever GITLAB_CI says.
// gitlab-ci-local, which runs a project's pipeline on a workstation, sets
// GITLAB_CI=false (so scripts can tell) and the same job variables as a
// runner: its jobs are GitLab jobs to the lock, one job's hold is not
// another's.
func isGitLab(getenv func(string) string) bool {
	if getenv("GITLAB_CI") == "true" {
		return true
	}
	for _, v := range gitLabJob {
		if getenv(v) == "" {
			return false
		}
	}
	return true
}

// workflowPath returns the workflow file of a GitHub Actions run from its
// GITHUB_WORKFLOW_REF ("acme/web/.github/workflows/deploy.yml@refs/heads/main"):
// ".github/workflows/deploy.yml"; "" when ref does not name one.
func workflowPath(ref string) string {
	_, path, ok := strings.Cut(ref, "/.github/")
	if !ok {
		return ""
	}
	path, _, _ = strings.Cut(path, "@")
	return ".github/" + path
}

// hashBuild turns a run's name or ID into a stable build number.
func hashBuild(s string) string {
	h := fnv.New32a()
	h.Write([]byte(s))
	return strconv.FormatUint(uint64(h.Sum32()), 10)
}

// OwnerRepoFromURL returns the last two path elements of a Git remote URL
// (https://host/acme/web.git, git@host:acme/web.git, /srv/git/web), without
// ".git"; owner is empty when the URL has a single element.
func OwnerRepoFromURL(u string) (owner, repo string) {
	u = strings.TrimSpace(u)
	if u == "" {
		return "", ""
	}
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
		if _, path, ok := strings.Cut(u, "/"); ok {
			u = path
		} else {
			return "", ""
		}
	} else if host, path, ok := strings.Cut(u, ":"); ok && !strings.Contains(host, "/") {
		u = path // scp-like user@host:owner/repo
	}
	u = strings.TrimSuffix(strings.TrimRight(u, "/"), ".git")
	parts := strings.Split(u, "/")
	repo = parts[len(parts)-1]
	if len(parts) > 1 {
		owner = parts[len(parts)-2]
	}
	return owner, repo
}
