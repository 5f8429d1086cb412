package identity

import (
	"net/url"
	"strings"
)

// runURL is the web page of the CI run (or job) lockctl runs in, as the CI
// system ci names it in its environment: GitHub Actions' run and attempt
// ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID/attempts/$GITHUB_RUN_ATTEMPT),
// GitLab's job ($CI_JOB_URL), Jenkins' build ($BUILD_URL, which Jenkins X and
// a Tekton task or Prow job following their convention may set too),
// Buildkite's build and job, CircleCI's job, Azure Pipelines' build,
// Woodpecker's pipeline and Drone's build. "" when the environment gives
// none, or gives something that is not an http or https URL: the
// dashboard links the holder to it.
func runURL(ci string, getenv func(string) string) string {
	var u string
	switch ci {
	case "github-actions":
		server, repo, id := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID")
		if server == "" || repo == "" || id == "" {
			return ""
		}
		u = strings.TrimSuffix(server, "/") + "/" + repo + "/actions/runs/" + url.PathEscape(id)
		if a := getenv("GITHUB_RUN_ATTEMPT"); a != "" {
			u += "/attempts/" + url.PathEscape(a)
		}
	case "gitlab":
		u = getenv("CI_JOB_URL")
		if u == "" && getenv("CI_PROJECT_URL") != "" && getenv("CI_JOB_ID") != "" {
			u = strings.TrimSuffix(getenv("CI_PROJECT_URL"), "/") + "/-/jobs/" + url.PathEscape(getenv("CI_JOB_ID"))
		}
	case "prow", "jenkins":
		u = getenv("BUILD_URL")
	case "buildkite":
		u = getenv("BUILDKITE_BUILD_URL")
		if job := getenv("BUILDKITE_JOB_ID"); u != "" && job != "" {
			u += "#" + url.PathEscape(job)
		}
	case "circleci":
		u = getenv("CIRCLE_BUILD_URL")
	case "azure-pipelines":
		coll, project, id := getenv("SYSTEM_COLLECTIONURI"), getenv("SYSTEM_TEAMPROJECT"), getenv("BUILD_BUILDID")
		if coll != "" && project != "" && id != "" {
			u = strings.TrimSuffix(coll, "/") + "/" + url.PathEscape(project) + "/_build/results?buildId=" + url.QueryEscape(id)
		}
	case "woodpecker":
		u = firstSet(getenv, "CI_PIPELINE_URL", "CI_BUILD_LINK")
	case "drone":
		u = getenv("DRONE_BUILD_LINK")
	}
	return webURL(u)
}

// webURL is u when it is an absolute http or https URL with a host, else "".
func webURL(u string) string {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
		return ""
	}
	return p.String()
}

func firstSet(getenv func(string) string, vars ...string) string {
	for _, v := range vars {
		if s := getenv(v); s != "" {
			return s
		}
	}
	return ""
}
