#!/usr/bin/env bash
# Runs golangci-lint at the version pinned below, building it first if it is
# not in the tools directory yet. Nothing prebuilt can be downloaded here, so
# it is compiled from its Go module, like the control-plane tools
# (hack/controlplane-tools.sh), and cached in
#
#   ${LOCKCTL_TOOLS_DIR:-<repo>/_output/tools}/golangci-lint-<version>/golangci-lint
#
# `go install module@version` builds it with golangci-lint's own go.mod, so its
# dependencies stay out of lockctl's go.mod and hack/tools/go.mod.
#
# Usage:
#   hack/golangci-lint.sh ARGS...    build if missing, then run golangci-lint ARGS...
#   hack/golangci-lint.sh --build    build if missing, run nothing
#   hack/golangci-lint.sh --path     print the binary's path
set -euo pipefail

GOLANGCI_LINT_VERSION=v2.15.0

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${LOCKCTL_TOOLS_DIR:-${ROOT}/_output/tools}"
BIN="${TOOLS_DIR}/golangci-lint-${GOLANGCI_LINT_VERSION}/golangci-lint"

build() {
	if [[ -x "${BIN}" ]]; then
		return 0
	fi
	local dir gobin start=${SECONDS}
	dir="$(dirname "${BIN}")"
	mkdir -p "${dir}"
	# Install into a scratch GOBIN and move into place, so an interrupted
	# build never leaves a half-written binary that looks cached.
	gobin="$(mktemp -d "${dir}/gobin.XXXXXX")"
	trap 'rm -rf "${gobin}"' EXIT
	echo "building golangci-lint ${GOLANGCI_LINT_VERSION} (first run only)" >&2
	CGO_ENABLED=0 GOBIN="${gobin}" go install -trimpath -ldflags "-s -w" \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}"
	mv -f "${gobin}/golangci-lint" "${BIN}"
	rm -rf "${gobin}"
	trap - EXIT
	printf 'golangci-lint   %-8s built in %ss  %s\n' "${GOLANGCI_LINT_VERSION}" "$((SECONDS - start))" "${BIN}" >&2
}

case "${1:-}" in
--path)
	echo "${BIN}"
	;;
--build)
	build
	;;
*)
	build
	cd "${ROOT}"
	exec "${BIN}" "$@"
	;;
esac
