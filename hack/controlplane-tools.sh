#!/usr/bin/env bash
# Builds the control-plane binaries that the integration tests (internal/testing/testenv)
# run: kube-apiserver, kube-scheduler, etcd and kwok. Nothing prebuilt can be
# downloaded here, so everything is compiled from Go modules and cached in
#
#   ${LOCKCTL_TOOLS_DIR:-<repo>/_output/tools}/<name>-<version>/<name>
#
# A binary that is already there is reused, so a second run only prints
# "cached". Each binary is built under a temporary name and moved into place,
# so an interrupted build never leaves a half-written file behind.
#
# Usage:
#   hack/controlplane-tools.sh              build whatever is missing
#   hack/controlplane-tools.sh NAME...      build only these (kube-apiserver, kube-scheduler, etcd, kwok)
#   hack/controlplane-tools.sh --check      exit 1 and list what is missing; build nothing
#   hack/controlplane-tools.sh --print-dir  print the tools directory and exit
#
# NOTE: the versions below must match internal/testing/testenv/tools.go; the unit test
# TestToolVersionsMatchBuildScript checks that, and hack/tools/go.mod.
set -euo pipefail

KUBE_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
KWOK_VERSION=v0.8.0

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${LOCKCTL_TOOLS_DIR:-${ROOT}/_output/tools}"
ALL_TOOLS=(kube-apiserver kube-scheduler etcd kwok)
export CGO_ENABLED=0

usage() {
	sed -n '2,/^# NOTE:/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

version_of() {
	case "$1" in
	kube-apiserver | kube-scheduler) echo "${KUBE_VERSION}" ;;
	etcd) echo "${ETCD_VERSION}" ;;
	kwok) echo "${KWOK_VERSION}" ;;
	*)
		echo "unknown tool \"$1\" (want one of: ${ALL_TOOLS[*]})" >&2
		return 2
		;;
	esac
}

bin_path() {
	local version
	version="$(version_of "$1")"
	echo "${TOOLS_DIR}/$1-${version}/$1"
}

# kube_ldflags stamps the Kubernetes version the way the upstream release build
# does, so /version and the compatibility-version logic see v1.37.2 rather than
# v0.0.0-master.
kube_ldflags() {
	local v="${KUBE_VERSION#v}" pkg flags="-s -w"
	local major="${v%%.*}" minor
	minor="${v#*.}"
	minor="${minor%%.*}"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
		flags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
		flags+=" -X ${pkg}.gitTreeState=clean"
	done
	echo "${flags}"
}

# compile NAME OUT: writes the binary for NAME to OUT.
compile() {
	local name="$1" out="$2"
	case "${name}" in
	kube-apiserver | kube-scheduler)
		(cd "${ROOT}/hack/tools" && go build -trimpath -buildvcs=false -ldflags "$(kube_ldflags)" -o "${out}" "k8s.io/kubernetes/cmd/${name}")
		;;
	etcd)
		(cd "${ROOT}/hack/tools" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "${out}" ./etcd)
		;;
	kwok)
		# go install is the only way to build a module at a version outside any
		# main module; it picks the file name, so install into a scratch GOBIN.
		local gobin
		gobin="$(mktemp -d "${out}.gobin.XXXXXX")"
		GOBIN="${gobin}" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}"
		mv -f "${gobin}/kwok" "${out}"
		rm -rf "${gobin}"
		;;
	esac
}

build() {
	local name="$1" bin tmp start
	bin="$(bin_path "${name}")"
	if [[ -x "${bin}" ]]; then
		printf '%-15s %-8s cached  %s\n' "${name}" "$(version_of "${name}")" "${bin}"
		return 0
	fi
	mkdir -p "$(dirname "${bin}")"
	tmp="${bin}.tmp.$$"
	# Leave nothing half-built behind if go build fails or we are interrupted.
	trap 'rm -rf "${tmp}" "${tmp}".gobin.*' EXIT
	start=${SECONDS}
	compile "${name}" "${tmp}"
	chmod +x "${tmp}"
	mv -f "${tmp}" "${bin}"
	trap - EXIT
	printf '%-15s %-8s built in %ss  %s\n' "${name}" "$(version_of "${name}")" "$((SECONDS - start))" "${bin}"
}

main() {
	local tools=() missing=() name
	case "${1:-}" in
	--print-dir)
		echo "${TOOLS_DIR}"
		return 0
		;;
	-h | --help)
		usage
		return 0
		;;
	--check)
		for name in "${ALL_TOOLS[@]}"; do
			[[ -x "$(bin_path "${name}")" ]] || missing+=("$(bin_path "${name}")")
		done
		if ((${#missing[@]} > 0)); then
			printf 'missing: %s\n' "${missing[@]}" >&2
			echo "run hack/controlplane-tools.sh (make tools) to build them" >&2
			return 1
		fi
		return 0
		;;
	-*)
		usage >&2
		return 2
		;;
	esac

	if (($# > 0)); then
		tools=("$@")
	else
		tools=("${ALL_TOOLS[@]}")
	fi
	for name in "${tools[@]}"; do
		version_of "${name}" >/dev/null
	done
	for name in "${tools[@]}"; do
		build "${name}"
	done
}

main "$@"
