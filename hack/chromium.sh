#!/usr/bin/env bash
# Installs Debian's chromium, which the dashboard's browser test
# (TestIntegrationDashboardBrowser in ./dashboard) drives headless through
# chromedp. Nothing is done when a chromium is there already, so CI can run
# it on every build and cache /var/cache/apt/archives between runs.
#
# Usage:
#   hack/chromium.sh           install chromium if missing, print its path
#   hack/chromium.sh --path    print the path of chromium, or fail
set -euo pipefail

find_chromium() {
	local c
	for c in "${LOCKCTL_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
		if [[ -n "${c}" && -x "${c}" ]]; then
			echo "${c}"
			return 0
		fi
	done
	return 1
}

if [[ "${1:-}" == "--path" ]]; then
	find_chromium
	exit
fi

if path="$(find_chromium)"; then
	echo "${path}"
	exit 0
fi

SUDO=""
if [[ "$(id -u)" != 0 ]]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
${SUDO} apt-get update -qq
${SUDO} apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
find_chromium
