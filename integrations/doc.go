// Package integrations holds lockctl's CI integrations (github/, gitlab/,
// tekton/, argo/, prow/) and the install script pipelines use (install.sh).
// Its Go files only test them, with each ecosystem's own tools where this
// machine can run them (hack/integration-tools.sh builds them): actionlint
// lints the GitHub Action and workflow and a small runner executes them as
// GitHub's runner does, gitlab-ci-local runs the GitLab component's
// pipelines, tekton-lint and Tekton's own Validate (hack/tektonvalidate)
// check the Tekton resources, and all of them run
// against a real control plane (internal/testing/testenv). The deploy tools
// run there too, as their users (internal/testing/deploytools): Helm 3 and
// Helm 4 with lockctl stamp as post-renderer and the plugin of
// plugins/helm, Flux's apply (hack/fluxapply) and Argo CD's writes, and the
// commands of each tool's page in docs/. docs/integrations.md
// says what each check proves. `make check-integrations` runs them.
package integrations
