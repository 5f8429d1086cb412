#!/usr/bin/env bash
# Builds the tools that `make check-integrations` runs against integrations/,
# each from its own ecosystem's registry, and caches them in
#
#   ${LOCKCTL_TOOLS_DIR:-<repo>/_output/tools}/<name>-<version>/
#
# as hack/controlplane-tools.sh does for the control plane: a tool already
# there is reused, and each is built into a temporary directory that is moved
# into place only when complete.
#
#   actionlint      GitHub Actions' linter (Go module github.com/rhysd/actionlint)
#   krew            the kubectl plugin manager (Go module sigs.k8s.io/krew)
#   kubectl         built from hack/tools' k8s.io/kubernetes, as kube-apiserver is
#   gitlab-ci-local runs .gitlab-ci.yml pipelines locally (npm; needs node, rsync, git)
#   tekton-lint     Tekton's linter (npm @ibm/tekton-lint)
#   tekton-validate Tekton's own Validate on Tasks and Pipelines: hack/tektonvalidate,
#                   its own Go module pinning github.com/tektoncd/pipeline (the
#                   version below must match its go.mod; cached by it and a hash
#                   of the sources)
#   prometheus      Prometheus and promtool (Go module github.com/prometheus/prometheus,
#                   cmd/prometheus and cmd/promtool, without the service discoveries
#                   and the web UI's assets, which the tests do not use)
#   helm3, helm4    Helm 3 and Helm 4 (Go modules helm.sh/helm/v3, helm.sh/helm/v4,
#                   cmd/helm), each a program named helm in its own directory
#   flux-apply      Flux's server-side apply as kustomize-controller applies:
#                   hack/fluxapply, its own Go module pinning github.com/fluxcd/pkg/ssa
#                   (cached like tekton-validate)
#
# The tools named are built in parallel, each one's output shown when it ends.
#
# Usage:
#   hack/integration-tools.sh              build whatever is missing
#   hack/integration-tools.sh NAME...      build only these
#   hack/integration-tools.sh --path NAME  print the path of NAME's program
#   hack/integration-tools.sh --check      exit 1 and list what is missing; build nothing
#
# NOTE: the Go tests in integrations/ find each program with --path NAME, so
# a version changed here is what they run.
set -euo pipefail

ACTIONLINT_VERSION=v1.7.12
KREW_VERSION=v0.4.3
KUBECTL_VERSION=v1.37.2
GITLAB_CI_LOCAL_VERSION=4.60.0
TEKTON_LINT_VERSION=1.1.0
TEKTON_PIPELINE_VERSION=v1.3.0
PROMETHEUS_VERSION=v0.316.0
HELM3_VERSION=v3.21.4
HELM4_VERSION=v4.3.2
FLUX_SSA_VERSION=v0.78.0
# The Kubernetes version Helm 3 assumes without a cluster (helm template, lint),
# as its Makefile derives it from the k8s.io/client-go its go.mod requires
# (v0.36.2 at v3.21.4); Helm 4 reads it from its build info itself.
HELM3_KUBE_MAJOR=1
HELM3_KUBE_MINOR=36

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${LOCKCTL_TOOLS_DIR:-${ROOT}/_output/tools}"
ALL_TOOLS=(actionlint krew gitlab-ci-local tekton-lint tekton-validate prometheus helm3 helm4 flux-apply)
export CGO_ENABLED=0

version_of() {
	case "$1" in
	actionlint) echo "${ACTIONLINT_VERSION}" ;;
	krew) echo "${KREW_VERSION}" ;;
	kubectl) echo "${KUBECTL_VERSION}" ;;
	gitlab-ci-local) echo "${GITLAB_CI_LOCAL_VERSION}" ;;
	tekton-lint) echo "${TEKTON_LINT_VERSION}" ;;
	prometheus) echo "${PROMETHEUS_VERSION}" ;;
	tekton-validate)
		# Its sources' hash too: an edit of hack/tektonvalidate builds anew.
		echo "${TEKTON_PIPELINE_VERSION}-$(cat "${ROOT}"/hack/tektonvalidate/{go.mod,go.sum,*.go} | sha256sum | cut -c1-8)"
		;;
	helm3) echo "${HELM3_VERSION}" ;;
	helm4) echo "${HELM4_VERSION}" ;;
	flux-apply)
		echo "${FLUX_SSA_VERSION}-$(cat "${ROOT}"/hack/fluxapply/{go.mod,go.sum,*.go} | sha256sum | cut -c1-8)"
		;;
	*)
		echo "unknown tool \"$1\" (want one of: ${ALL_TOOLS[*]})" >&2
		return 2
		;;
	esac
}

dir_of() { echo "${TOOLS_DIR}/$1-$(version_of "$1")"; }

# prog_of NAME: the program inside NAME's directory.
prog_of() {
	local d
	d="$(dir_of "$1")"
	case "$1" in
	gitlab-ci-local | tekton-lint) echo "${d}/node_modules/.bin/$1" ;;
	helm3 | helm4) echo "${d}/helm" ;;
	*) echo "${d}/$1" ;;
	esac
}

# compile NAME DIR: installs NAME into the empty directory DIR.
compile() {
	local name="$1" dir="$2"
	case "${name}" in
	actionlint)
		GOBIN="${dir}" go install -trimpath -ldflags "-s -w -X github.com/rhysd/actionlint.version=${ACTIONLINT_VERSION}" \
			"github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
		;;
	krew)
		GOBIN="${dir}" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/krew/cmd/krew@${KREW_VERSION}"
		;;
	kubectl)
		# The same module and replacements as kube-apiserver: shares its build cache.
		(cd "${ROOT}/hack/tools" && go build -trimpath -buildvcs=false -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=${KUBECTL_VERSION} -X k8s.io/client-go/pkg/version.gitVersion=${KUBECTL_VERSION}" \
			-o "${dir}/kubectl" k8s.io/kubernetes/cmd/kubectl)
		;;
	gitlab-ci-local)
		# re2 is a native addon: without a prebuilt download it is compiled
		# with node-gyp against the installed node's headers.
		JOBS=max npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")" \
			npm install --prefix "${dir}" --no-audit --no-fund --loglevel=error "gitlab-ci-local@${GITLAB_CI_LOCAL_VERSION}"
		;;
	tekton-lint)
		npm install --prefix "${dir}" --no-audit --no-fund --loglevel=error "@ibm/tekton-lint@${TEKTON_LINT_VERSION}"
		;;
	prometheus)
		# Both programs in one go install, which builds their shared
		# packages once and in parallel; remove_all_sd leaves out the
		# service discoveries (static targets are all the tests scrape).
		GOBIN="${dir}" go install -trimpath -tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION#v}" \
			"github.com/prometheus/prometheus/cmd/prometheus@${PROMETHEUS_VERSION}" \
			"github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}"
		;;
	tekton-validate)
		if ! grep -q "github.com/tektoncd/pipeline ${TEKTON_PIPELINE_VERSION}\$" "${ROOT}/hack/tektonvalidate/go.mod"; then
			echo "hack/tektonvalidate/go.mod does not require github.com/tektoncd/pipeline ${TEKTON_PIPELINE_VERSION}: update one to match the other" >&2
			return 1
		fi
		(cd "${ROOT}/hack/tektonvalidate" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "${dir}/tekton-validate" .)
		;;
	helm3)
		# The flags of Helm's Makefile: its version, and the Kubernetes version
		# it assumes without a cluster.
		GOBIN="${dir}" go install -trimpath -ldflags "-s -w \
			-X helm.sh/helm/v3/internal/version.version=${HELM3_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
			-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=${HELM3_KUBE_MAJOR} -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${HELM3_KUBE_MINOR} \
			-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=${HELM3_KUBE_MAJOR} -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM3_KUBE_MINOR}" \
			"helm.sh/helm/v3/cmd/helm@${HELM3_VERSION}"
		;;
	helm4)
		GOBIN="${dir}" go install -trimpath -ldflags "-s -w \
			-X helm.sh/helm/v4/internal/version.version=${HELM4_VERSION} -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
			"helm.sh/helm/v4/cmd/helm@${HELM4_VERSION}"
		;;
	flux-apply)
		if ! grep -q "github.com/fluxcd/pkg/ssa ${FLUX_SSA_VERSION}\$" "${ROOT}/hack/fluxapply/go.mod"; then
			echo "hack/fluxapply/go.mod does not require github.com/fluxcd/pkg/ssa ${FLUX_SSA_VERSION}: update one to match the other" >&2
			return 1
		fi
		(cd "${ROOT}/hack/fluxapply" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "${dir}/flux-apply" .)
		;;
	esac
}

# need_packages CMD...: installs Debian's package of each command that is
# missing (as root, with apt-get), else says which to install.
need_packages() {
	local cmd missing=()
	for cmd in "$@"; do
		command -v "${cmd}" >/dev/null || missing+=("${cmd}")
	done
	((${#missing[@]} == 0)) && return 0
	if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
		return 0
	fi
	echo "the integrations' tools need: ${missing[*]} (apt-get install ${missing[*]})" >&2
	return 1
}

build() {
	local name="$1" dir tmp start
	dir="$(dir_of "${name}")"
	if [[ -x "$(prog_of "${name}")" ]]; then
		printf '%-16s %-8s cached  %s\n' "${name}" "$(version_of "${name}")" "$(prog_of "${name}")"
		return 0
	fi
	mkdir -p "${TOOLS_DIR}"
	tmp="${dir}.tmp.$$"
	rm -rf "${tmp}"
	mkdir -p "${tmp}"
	# NOTE: expanded now: tmp is local, gone when the EXIT trap runs.
	# shellcheck disable=SC2064
	trap "rm -rf '${tmp}'" EXIT
	start=${SECONDS}
	compile "${name}" "${tmp}"
	rm -rf "${dir}"
	mv -f "${tmp}" "${dir}"
	trap - EXIT
	printf '%-16s %-8s built in %ss  %s\n' "${name}" "$(version_of "${name}")" "$((SECONDS - start))" "$(prog_of "${name}")"
}

main() {
	local tools=() missing=() name
	case "${1:-}" in
	--path)
		prog_of "$2"
		return 0
		;;
	--check)
		for name in "${ALL_TOOLS[@]}"; do
			[[ -x "$(prog_of "${name}")" ]] || missing+=("$(prog_of "${name}")")
		done
		if ((${#missing[@]} > 0)); then
			printf 'missing: %s\n' "${missing[@]}" >&2
			echo "run hack/integration-tools.sh to build them" >&2
			return 1
		fi
		return 0
		;;
	-*)
		sed -n '2,/^# NOTE:/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
		return 2
		;;
	esac
	if (($# > 0)); then tools=("$@"); else tools=("${ALL_TOOLS[@]}"); fi
	for name in "${tools[@]}"; do version_of "${name}" >/dev/null; done
	# gitlab-ci-local needs rsync when it runs, not only when built.
	[[ " ${tools[*]} " == *" gitlab-ci-local "* ]] && need_packages rsync
	# NOTE: in parallel: a Go build leaves cores idle while it downloads
	# modules and links, and npm while it fetches. Each build's output goes
	# to a log shown when it ends, so lines of two builds never interleave.
	local logs pid failed=() pids=()
	logs="$(mktemp -d)"
	for name in "${tools[@]}"; do
		build "${name}" >"${logs}/${name}" 2>&1 &
		pids+=("$!")
	done
	for i in "${!tools[@]}"; do
		pid="${pids[${i}]}" name="${tools[${i}]}"
		wait "${pid}" || failed+=("${name}")
		cat "${logs}/${name}"
	done
	rm -rf "${logs}"
	if ((${#failed[@]} > 0)); then
		echo "failed to build: ${failed[*]}" >&2
		return 1
	fi
}

main "$@"
