package lock

import "strings"

// IdentityFromEnv reads the identity a CI system exposes through getenv
// (os.Getenv), and names the environment variable each field came from
// ("$REPO_OWNER"), by field name ("owner", "repo", "branch", "build").
// Fields the environment does not give are left empty.
//
// Prow and Jenkins X set REPO_OWNER, REPO_NAME, BRANCH_NAME and BUILD_NUMBER
// (Tekton tasks follow the same convention when their pipeline passes those
// parameters as environment); GitHub Actions and GitLab CI have their own.
func IdentityFromEnv(getenv func(string) string) (Identity, map[string]string) {
	var id Identity
	src := map[string]string{}
	// set sets *dst from the first of vars that is set.
	set := func(field string, dst *string, vars ...string) {
		for _, v := range vars {
			if val := getenv(v); val != "" {
				*dst, src[field] = val, "$"+v
				return
			}
		}
	}
	switch {
	case getenv("REPO_OWNER") != "" || getenv("REPO_NAME") != "":
		set("owner", &id.Owner, "REPO_OWNER")
		set("repo", &id.Repo, "REPO_NAME")
		set("branch", &id.Branch, "BRANCH_NAME", "PULL_BASE_REF")
		set("build", &id.Build, "BUILD_NUMBER", "BUILD_ID")
	case getenv("GITHUB_ACTIONS") == "true":
		id.Owner, id.Repo, _ = strings.Cut(getenv("GITHUB_REPOSITORY"), "/")
		src["owner"], src["repo"] = "$GITHUB_REPOSITORY", "$GITHUB_REPOSITORY"
		set("branch", &id.Branch, "GITHUB_REF_NAME")
		set("build", &id.Build, "GITHUB_RUN_NUMBER")
	case getenv("GITLAB_CI") == "true":
		set("owner", &id.Owner, "CI_PROJECT_NAMESPACE")
		set("repo", &id.Repo, "CI_PROJECT_NAME")
		set("branch", &id.Branch, "CI_COMMIT_REF_NAME")
		set("build", &id.Build, "CI_PIPELINE_IID")
	}
	return id, src
}
