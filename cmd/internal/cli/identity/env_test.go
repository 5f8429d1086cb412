package identity

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockctl/lockctl/lock/record"
)

// ident is the identity owner/repo@branch#build.
func ident(owner, repo, branch, build string) record.Identity {
	return record.Identity{Owner: owner, Repo: repo, Branch: branch, Build: build}
}

// inSeq counts id's build in sequence seq.
func inSeq(id record.Identity, seq string) record.Identity {
	id.Sequence = seq
	return id
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		env           map[string]string
		want          record.Identity
		wantCI        string
		wantUnordered bool
		wantBuildFrom string
		wantJob       record.CIJob
	}{
		{name: "no CI", env: map[string]string{"HOME": "/root"}},
		{
			name: "prow",
			env:  map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "PULL_BASE_REF": "main", "BUILD_ID": "17"},
			want: ident("acme", "web", "main", "17"), wantCI: "prow", wantBuildFrom: "$BUILD_ID",
		},
		{
			name: "github actions",
			env:  map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "8"},
			want: ident("acme", "web", "main", "8"), wantCI: "github-actions", wantBuildFrom: "$GITHUB_RUN_NUMBER",
		},
		{
			name: "gitlab",
			env:  map[string]string{"GITLAB_CI": "true", "CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "9"},
			want: ident("acme", "web", "main", "9"), wantCI: "gitlab", wantBuildFrom: "$CI_PIPELINE_IID",
		},
		{
			name: "jenkins multibranch",
			env: map[string]string{"JENKINS_URL": "http://jenkins/", "GIT_URL": "https://git.example/acme/web.git",
				"BRANCH_NAME": "main", "BUILD_NUMBER": "31", "JOB_BASE_NAME": "main"},
			want: ident("acme", "web", "main", "31"), wantCI: "jenkins", wantBuildFrom: "$BUILD_NUMBER",
		},
		{
			name: "jenkins freestyle",
			env: map[string]string{"JENKINS_URL": "http://jenkins/", "GIT_URL": "git@git.example:acme/web.git",
				"GIT_BRANCH": "origin/release", "BUILD_NUMBER": "5"},
			want: ident("acme", "web", "release", "5"), wantCI: "jenkins", wantBuildFrom: "$BUILD_NUMBER",
		},
		{
			name: "buildkite",
			env: map[string]string{"BUILDKITE": "true", "CI": "true", "BUILDKITE_REPO": "git@git.example:acme/web.git",
				"BUILDKITE_ORGANIZATION_SLUG": "acme-org", "BUILDKITE_PIPELINE_SLUG": "web-deploy", "BUILDKITE_BRANCH": "main", "BUILDKITE_BUILD_NUMBER": "101"},
			want: inSeq(ident("acme", "web", "main", "101"), "web-deploy"), wantCI: "buildkite", wantBuildFrom: "$BUILDKITE_BUILD_NUMBER",
		},
		{
			name: "buildkite, one of a step's parallel jobs",
			env: map[string]string{"BUILDKITE": "true", "BUILDKITE_REPO": "git@git.example:acme/web.git", "BUILDKITE_PIPELINE_SLUG": "web-deploy",
				"BUILDKITE_BRANCH": "main", "BUILDKITE_BUILD_NUMBER": "101", "BUILDKITE_STEP_ID": "s-1", "BUILDKITE_PARALLEL_JOB": "2",
				"BUILDKITE_JOB_ID": "j-9", "BUILDKITE_RETRY_COUNT": "1"},
			want: inSeq(ident("acme", "web", "main", "101"), "web-deploy"), wantCI: "buildkite", wantBuildFrom: "$BUILDKITE_BUILD_NUMBER",
			wantJob: record.CIJob{Job: "s-1/2", JobID: "j-9"},
		},
		{
			name: "github actions, a matrix job's attempt on its runner",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "8",
				"GITHUB_WORKFLOW": "Deploy", "GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/deploy.yml@refs/heads/main",
				"GITHUB_JOB": "deploy", "RUNNER_NAME": "GitHub Actions 3", "GITHUB_RUN_ATTEMPT": "2"},
			want:   inSeq(ident("acme", "web", "main", "8"), ".github/workflows/deploy.yml"),
			wantCI: "github-actions", wantBuildFrom: "$GITHUB_RUN_NUMBER",
			wantJob: record.CIJob{Job: "deploy", JobID: "GitHub Actions 3", Attempt: 2},
		},
		{
			name: "github actions without GITHUB_WORKFLOW_REF (older servers): the workflow's name",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "8",
				"GITHUB_WORKFLOW": "Deploy"},
			want: inSeq(ident("acme", "web", "main", "8"), "Deploy"), wantCI: "github-actions", wantBuildFrom: "$GITHUB_RUN_NUMBER",
		},
		{
			name: "gitlab, a retried job",
			env: map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_COMMIT_REF_NAME": "main",
				"CI_PIPELINE_IID": "9", "CI_JOB_NAME": "deploy: [eu]", "CI_JOB_ID": "1007"},
			want: ident("acme", "web", "main", "9"), wantCI: "gitlab", wantBuildFrom: "$CI_PIPELINE_IID",
			wantJob: record.CIJob{Job: "deploy: [eu]", JobID: "1007", Attempt: 1007},
		},
		{
			name: "gitlab-ci-local: GITLAB_CI=false, a GitLab job's variables",
			env: map[string]string{"GITLAB_CI": "false", "CI": "true", "CI_SERVER_URL": "https://gitlab.example:443", "CI_PROJECT_PATH": "acme/web",
				"CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_ID": "1001",
				"CI_PIPELINE_IID": "1", "CI_JOB_NAME": "deploy 2/2", "CI_JOB_ID": "3"},
			want: ident("acme", "web", "main", "1"), wantCI: "gitlab", wantBuildFrom: "$CI_PIPELINE_IID",
			wantJob: record.CIJob{Job: "deploy 2/2", JobID: "3", Attempt: 3},
		},
		{
			name: "GITLAB_CI=false without a job's variables: not GitLab",
			env:  map[string]string{"GITLAB_CI": "false", "CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_JOB_ID": "3"},
			want: record.Identity{}, wantCI: "ci",
		},
		{
			name: "circleci",
			env: map[string]string{"CIRCLECI": "true", "CI": "true", "CIRCLE_PROJECT_USERNAME": "acme", "CIRCLE_PROJECT_REPONAME": "web",
				"CIRCLE_BRANCH": "main", "CIRCLE_BUILD_NUM": "77"},
			want: ident("acme", "web", "main", "77"), wantCI: "circleci", wantBuildFrom: "$CIRCLE_BUILD_NUM",
		},
		{
			name: "azure pipelines, GitHub repository",
			env: map[string]string{"TF_BUILD": "True", "BUILD_REPOSITORY_NAME": "acme/web", "SYSTEM_TEAMPROJECT": "proj",
				"BUILD_SOURCEBRANCHNAME": "main", "BUILD_BUILDID": "1234", "BUILD_BUILDNUMBER": "20261203.4"},
			want: ident("acme", "web", "main", "1234"), wantCI: "azure-pipelines", wantBuildFrom: "$BUILD_BUILDID",
		},
		{
			name: "azure pipelines, Azure Repos",
			env: map[string]string{"TF_BUILD": "True", "BUILD_REPOSITORY_NAME": "web", "SYSTEM_TEAMPROJECT": "proj",
				"BUILD_SOURCEBRANCHNAME": "main", "BUILD_BUILDID": "1235"},
			want: ident("proj", "web", "main", "1235"), wantCI: "azure-pipelines", wantBuildFrom: "$BUILD_BUILDID",
		},
		{
			name: "bitbucket pipelines",
			env: map[string]string{"CI": "true", "BITBUCKET_BUILD_NUMBER": "12", "BITBUCKET_WORKSPACE": "acme",
				"BITBUCKET_REPO_SLUG": "web", "BITBUCKET_BRANCH": "main"},
			want: ident("acme", "web", "main", "12"), wantCI: "bitbucket", wantBuildFrom: "$BITBUCKET_BUILD_NUMBER",
		},
		{
			name: "drone",
			env: map[string]string{"DRONE": "true", "CI": "true", "DRONE_REPO_OWNER": "acme", "DRONE_REPO_NAME": "web",
				"DRONE_COMMIT_BRANCH": "main", "DRONE_BUILD_NUMBER": "44"},
			want: ident("acme", "web", "main", "44"), wantCI: "drone", wantBuildFrom: "$DRONE_BUILD_NUMBER",
		},
		{
			name: "woodpecker",
			env: map[string]string{"CI": "woodpecker", "CI_REPO_OWNER": "acme", "CI_REPO_NAME": "web",
				"CI_COMMIT_BRANCH": "main", "CI_PIPELINE_NUMBER": "45"},
			want: ident("acme", "web", "main", "45"), wantCI: "woodpecker", wantBuildFrom: "$CI_PIPELINE_NUMBER",
		},
		{
			name: "argo workflows (a step's main container): stable hash of the workflow, unordered",
			env:  map[string]string{"ARGO_WORKFLOW_NAME": "deploy-x7k2p", "ARGO_CONTAINER_NAME": "main", "ARGO_NODE_ID": "deploy-x7k2p-123"},
			want: ident("argo", "deploy-x7k2p", "workflow", hashBuild("deploy-x7k2p")), wantCI: "argo-workflows",
			wantUnordered: true, wantBuildFrom: "$ARGO_WORKFLOW_NAME",
		},
		{
			name: "argo workflows: the same identity where ARGO_WORKFLOW_UID is set too",
			env:  map[string]string{"ARGO_WORKFLOW_NAME": "deploy-x7k2p", "ARGO_WORKFLOW_UID": "0b7e-11"},
			want: ident("argo", "deploy-x7k2p", "workflow", hashBuild("deploy-x7k2p")), wantCI: "argo-workflows",
			wantUnordered: true, wantBuildFrom: "$ARGO_WORKFLOW_NAME",
		},
		{
			name:   "unknown CI gives no build, never a per-call number",
			env:    map[string]string{"CI": "true"},
			wantCI: "ci",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, src, ci := FromEnv(func(k string) string { return tt.env[k] })
			assert.Equal(t, tt.want, id, "identity from %v", tt.env)
			assert.Equal(t, tt.wantCI, ci.Name, "CI recognised from %v", tt.env)
			assert.Equal(t, tt.wantUnordered, ci.Unordered, "unordered from %v", tt.env)
			assert.Equal(t, tt.wantBuildFrom, src["build"], "source of the build from %v", tt.env)
			assert.Equal(t, tt.wantJob, ci.Job, "CI job from %v", tt.env)
			again, _, _ := FromEnv(func(k string) string { return tt.env[k] })
			assert.Equal(t, id, again, "the same environment gives the same identity")
		})
	}
}

func TestOwnerRepoFromURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ url, owner, repo string }{
		{"https://git.example/acme/web.git", "acme", "web"},
		{"https://git.example/acme/web", "acme", "web"},
		{"git@git.example:acme/web.git", "acme", "web"},
		{"ssh://git@git.example:22/group/sub/web.git", "sub", "web"},
		{"/srv/git/web.git", "git", "web"},
		{"web", "", "web"},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			owner, repo := OwnerRepoFromURL(tt.url)
			assert.Equal(t, tt.owner, owner, "owner of %q", tt.url)
			assert.Equal(t, tt.repo, repo, "repo of %q", tt.url)
		})
	}
}
