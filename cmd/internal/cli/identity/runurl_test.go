package identity

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunURL: the web page of the CI run, as each CI system's environment
// names it; nothing outside CI, nor for what is not an http(s) URL.
func TestRunURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{
			name: "GitHub Actions: the run and its attempt",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "release-2.4", "GITHUB_RUN_NUMBER": "41",
				"GITHUB_JOB": "deploy", "GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "12345678901", "GITHUB_RUN_ATTEMPT": "2"},
			want: "https://github.com/acme/web/actions/runs/12345678901/attempts/2",
		},
		{
			name: "GitHub Enterprise Server, no attempt",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_SERVER_URL": "https://ghe.example/",
				"GITHUB_RUN_ID": "7"},
			want: "https://ghe.example/acme/web/actions/runs/7",
		},
		{
			name: "GitLab: the job",
			env: map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_JOB_NAME": "deploy",
				"CI_JOB_ID": "1001", "CI_JOB_URL": "https://gitlab.example/acme/web/-/jobs/1001", "CI_PROJECT_URL": "https://gitlab.example/acme/web"},
			want: "https://gitlab.example/acme/web/-/jobs/1001",
		},
		{
			name: "GitLab without CI_JOB_URL: the project's job",
			env: map[string]string{"GITLAB_CI": "true", "CI_JOB_NAME": "deploy", "CI_JOB_ID": "1001",
				"CI_PROJECT_URL": "https://gitlab.example/acme/web"},
			want: "https://gitlab.example/acme/web/-/jobs/1001",
		},
		{
			name: "Jenkins: the build",
			env:  map[string]string{"JENKINS_URL": "https://ci.example/", "BUILD_URL": "https://ci.example/job/web/41/", "BUILD_NUMBER": "41"},
			want: "https://ci.example/job/web/41/",
		},
		{
			name: "Prow or Tekton passing BUILD_URL",
			env:  map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "BUILD_URL": "https://tekton.example/#/namespaces/ci/pipelineruns/deploy-41"},
			want: "https://tekton.example/#/namespaces/ci/pipelineruns/deploy-41",
		},
		{
			name: "Prow without one",
			env:  map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "BUILD_ID": "17"},
		},
		{
			name: "Buildkite: the build and the job",
			env: map[string]string{"BUILDKITE": "true", "BUILDKITE_BUILD_URL": "https://buildkite.example/acme/web/builds/101",
				"BUILDKITE_JOB_ID": "0190-job-a", "BUILDKITE_STEP_ID": "s"},
			want: "https://buildkite.example/acme/web/builds/101#0190-job-a",
		},
		{
			name: "Azure Pipelines: the build",
			env: map[string]string{"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": "https://dev.example/acme/", "SYSTEM_TEAMPROJECT": "Web Team",
				"BUILD_BUILDID": "77"},
			want: "https://dev.example/acme/Web%20Team/_build/results?buildId=77",
		},
		{
			name: "not a web URL",
			env:  map[string]string{"JENKINS_URL": "x", "BUILD_URL": "javascript:alert(1)"},
		},
		{
			name: "credentials in it",
			env:  map[string]string{"JENKINS_URL": "x", "BUILD_URL": "https://user:pw@ci.example/job/1/"},
		},
		{name: "outside CI", env: map[string]string{"BUILD_URL": "https://ci.example/job/1/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, ci := FromEnv(func(k string) string { return tt.env[k] })
			assert.Equal(t, tt.want, ci.RunURL, "%v", tt.env)
		})
	}
}
