#!/bin/sh
# Installs a pinned lockctl release for a pipeline: downloads the archive
# for this machine and the release's checksums.txt, verifies the archive's
# SHA-256 against it (and against LOCKCTL_SHA256 when set, a checksum pinned
# in the pipeline itself), and only then extracts the binary. POSIX sh, with
# curl or wget, sha256sum or shasum, and tar: what CI images have.
#
#   install.sh VERSION [DIR]
#
#   VERSION          a release tag, such as v0.2.0 (never "latest": pin it)
#   DIR              where to put lockctl (default /usr/local/bin, or
#                    $HOME/.local/bin when that is not writable)
#   LOCKCTL_BASE_URL where the releases are (default GitHub's release
#                    downloads of lockctl/lockctl; a mirror of them)
#   LOCKCTL_SHA256   the archive's expected SHA-256 (optional, recommended)
#   LOCKCTL_BINARY   lockctl (default) or kubectl-lockctl
#
# Used by integrations/github/setup, and in docs/install.md for GitLab CI and
# Tekton. Exits non-zero, installing nothing, if any check fails.
set -eu

version="${1:-}"
dir="${2:-}"
base="${LOCKCTL_BASE_URL:-https://github.com/lockctl/lockctl/releases/download}"
binary="${LOCKCTL_BINARY:-lockctl}"

fail() {
	echo "lockctl install: $*" >&2
	exit 1
}

case "${version}" in
v[0-9]*) ;;
"") fail "usage: install.sh VERSION [DIR], with VERSION a release tag such as v0.2.0" ;;
*) fail "version \"${version}\" is not a release tag such as v0.2.0: pin a release" ;;
esac

case "$(uname -s)" in
Linux) os=linux ;;
Darwin) os=darwin ;;
*) fail "no release for $(uname -s): build from source with go install github.com/lockctl/lockctl@${version}" ;;
esac
case "$(uname -m)" in
x86_64 | amd64) arch=amd64 ;;
aarch64 | arm64) arch=arm64 ;;
*) fail "no release for $(uname -m): build from source with go install github.com/lockctl/lockctl@${version}" ;;
esac

if [ -z "${dir}" ]; then
	dir=/usr/local/bin
	if ! [ -w "${dir}" ]; then
		dir="${HOME}/.local/bin"
	fi
fi

archive="${binary}_${version#v}_${os}_${arch}.tar.gz"
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

fetch() { # URL FILE
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		fail "neither curl nor wget is installed"
	fi || fail "download $1 failed"
}

sha256() { # FILE
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 "$1" | cut -d' ' -f1
	else
		fail "neither sha256sum nor shasum is installed"
	fi
}

fetch "${base}/${version}/checksums.txt" "${tmp}/checksums.txt"
fetch "${base}/${version}/${archive}" "${tmp}/${archive}"

want="$(awk -v f="${archive}" '$2 == f || $2 == "*" f { print $1 }' "${tmp}/checksums.txt")"
[ -n "${want}" ] || fail "checksums.txt of ${version} lists no ${archive}"
got="$(sha256 "${tmp}/${archive}")"
[ "${got}" = "${want}" ] || fail "${archive}: SHA-256 ${got} does not match checksums.txt (${want}); not installed"
if [ -n "${LOCKCTL_SHA256:-}" ] && [ "${got}" != "${LOCKCTL_SHA256}" ]; then
	fail "${archive}: SHA-256 ${got} is not the pinned LOCKCTL_SHA256 ${LOCKCTL_SHA256}; not installed"
fi

tar -xzf "${tmp}/${archive}" -C "${tmp}" "${binary}" || fail "${archive} has no ${binary}"
mkdir -p "${dir}"
# Move into place in one step, so a concurrent job never runs half a file.
cp "${tmp}/${binary}" "${dir}/.${binary}.$$"
chmod 0755 "${dir}/.${binary}.$$"
mv -f "${dir}/.${binary}.$$" "${dir}/${binary}"
echo "installed ${binary} ${version} (${os}/${arch}, sha256 ${got}) in ${dir}" >&2
echo "${dir}/${binary}"
