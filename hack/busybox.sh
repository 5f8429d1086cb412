#!/usr/bin/env bash
# Fetches a static busybox for the shell variant of lockctl's image
# (hack/image -busybox) from Debian's busybox-static package: apt-get
# download (apt verifies it against the signed archive index), then
# dpkg-deb -x. Nothing is downloaded from anywhere else. Cached in
#
#   ${LOCKCTL_TOOLS_DIR:-<repo>/_output/tools}/busybox-<deb version>-<arch>/busybox
#
# Usage: hack/busybox.sh [--out DIR] [ARCH...]   (Debian architectures;
# default the machine's own). It prints OS/ARCH=PATH for each,
# comma-separated, as hack/image -busybox takes them; with --out, the
# binaries are also copied to DIR/linux-ARCH/busybox, the paths printed
# (what the release configuration uses). An architecture apt cannot fetch
# (not configured with dpkg --add-architecture) is an error.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${LOCKCTL_TOOLS_DIR:-${ROOT}/_output/tools}"
copy_to=""
if [[ "${1:-}" == --out ]]; then
	copy_to="$2"
	shift 2
fi
arches=("$@")
if ((${#arches[@]} == 0)); then
	arches=("$(dpkg --print-architecture)")
fi

out=()
for arch in "${arches[@]}"; do
	version="$(apt-cache show "busybox-static:${arch}" 2>/dev/null | sed -n 's/^Version: //p' | head -n1)"
	if [[ -z "${version}" ]]; then
		echo "busybox-static:${arch} is not known to apt (run apt-get update; for a foreign architecture, dpkg --add-architecture ${arch} first)" >&2
		exit 1
	fi
	dir="${TOOLS_DIR}/busybox-${version//[:~]/_}-${arch}"
	if [[ ! -x "${dir}/busybox" ]]; then
		tmp="$(mktemp -d)"
		trap 'rm -rf "${tmp}"' EXIT
		(cd "${tmp}" && apt-get download -qq "busybox-static:${arch}=${version}" 2>/dev/null)
		dpkg-deb -x "${tmp}"/busybox-static_*.deb "${tmp}/root"
		mkdir -p "${dir}"
		install -m 0755 "${tmp}/root/bin/busybox" "${dir}/busybox.tmp"
		mv -f "${dir}/busybox.tmp" "${dir}/busybox"
		rm -rf "${tmp}"
		trap - EXIT
		echo "busybox ${version} ${arch}: ${dir}/busybox" >&2
	fi
	if [[ -n "${copy_to}" ]]; then
		mkdir -p "${copy_to}/linux-${arch}"
		cp -f "${dir}/busybox" "${copy_to}/linux-${arch}/busybox"
		out+=("linux/${arch}=${copy_to}/linux-${arch}/busybox")
	else
		out+=("linux/${arch}=${dir}/busybox")
	fi
done
(
	IFS=,
	echo "${out[*]}"
)
