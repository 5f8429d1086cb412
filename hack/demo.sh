#!/usr/bin/env bash
# make demo: start the local control plane (if it is not running) and show two
# builds taking turns on the deploy lock of namespace "staging", a superseded
# build, then lockctl run with a local command, with a job, and interrupted,
# and last a write refused by the API server under lockctl enforce.
# Leaves the control plane running for `make down`.
#
# Escape codes (bold commands) only when stdout is a terminal and NO_COLOR is
# not set; NO_COLOR is passed on to lockctl. The e2e test runs this script
# against its own control plane: LOCKCTL_DEMO_KUBECONFIG skips
# `localcluster up`, LOCKCTL_BIN names the lockctl binary, LOCKCTL_DEMO_DIR
# where the job files go, LOCKCTL_LOCALCLUSTER_BIN the localcluster binary
# (the refused write is shown only when it is there).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ -n "${LOCKCTL_DEMO_KUBECONFIG:-}" ]]; then
  export KUBECONFIG="$LOCKCTL_DEMO_KUBECONFIG"
else
  bin/localcluster up
  export KUBECONFIG="$PWD/_output/local/kubeconfig"
fi
export LOCKCTL_LOCK_NAMESPACE="${LOCKCTL_LOCK_NAMESPACE:-default}"
bin="${LOCKCTL_BIN:-bin/lockctl}"
lockctl() { "$bin" "$@"; }

bold='' plain=''
if [[ -t 1 && -z "${NO_COLOR:-}" ]]; then
  bold=$'\033[1m' plain=$'\033[0m'
else
  export NO_COLOR=1
fi
say() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }

# acquire WHO ARGS...: lockctl acquire ARGS, then say what the number it
# prints is: the fencing token of WHO's hold.
explained=''
acquire() {
  local who=$1 token
  shift
  token=$(lockctl acquire "$@") || return
  if [[ -z "$explained" ]]; then
    echo "$who holds the lock with fencing token $token: acquire prints it on stdout; it grows with every new holder, so a deploy can check that it still holds the lock"
  else
    echo "$who holds the lock with fencing token $token"
  fi
}

web=(--owner acme --repo web --branch main)
api=(--owner acme --repo api --branch main)

cat <<'EOT'
A holder is OWNER/REPO@BRANCH#BUILD: #41 is the CI build number of the
pipeline that holds the lock (here given with --build).
EOT

# Start from a clean slate if a previous demo left locks behind.
lockctl release staging --force -q >/dev/null 2>&1 || true

say "lockctl acquire staging ${web[*]} --build 41"
acquire acme/web#41 staging "${web[@]}" --build 41
explained=yes

say "lockctl acquire staging ${api[*]} --build 7 --progress plain   # waits in the queue"
acquire acme/api#7 staging "${api[@]}" --build 7 --progress plain &
waiter=$!
sleep 2

say "lockctl status"
lockctl status

say "./deploy.sh   # acme/web#41 deploys for 3s while acme/api#7 waits"
sleep 3

say "lockctl release staging ${web[*]} --build 41   # hands the lock to the waiter"
lockctl release staging "${web[@]}" --build 41
wait "$waiter"

say "lockctl status staging -o yaml"
lockctl status staging -o yaml

say "lockctl acquire staging ${web[*]} --build 42 &   # queued behind acme/api#7"
acquire acme/web#42 staging "${web[@]}" --build 42 --progress plain &
older=$!
sleep 2
say "lockctl acquire staging ${web[*]} --build 43 &   # a newer build of the same branch arrives"
acquire acme/web#43 staging "${web[@]}" --build 43 --progress plain &
newer=$!
set +e
wait "$older"
echo "acme/web#42 exited with status $? (3 = superseded)"
set -e

say "lockctl release staging ${api[*]} --build 7"
lockctl release staging "${api[@]}" --build 7
wait "$newer"
lockctl release staging "${web[@]}" --build 43

say "lockctl run --lock staging ${web[*]} --build 44 -- sh -c 'echo deploying; sleep 2; echo deployed'"
lockctl run --lock staging "${web[@]}" --build 44 -- sh -c 'echo deploying; sleep 2; echo deployed'

# The local control plane's node is kwok's: it runs no containers, and these
# annotations tell it how the pod ends (see internal/testing/testenv).
mkdir -p "${LOCKCTL_DEMO_DIR:=_output/local}"
job="$LOCKCTL_DEMO_DIR/demo-job.yaml"
cat > "$job" <<'EOF'
apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  generateName: deploy-web-
  annotations: {lockctl.dev/test-exit-code: "0", lockctl.dev/test-duration: 3s}
spec:
  job: deploy-web
  type: postsubmit
  refs: {org: acme, repo: web, baseRef: main}
  podSpec:
    containers: [{name: main, image: alpine, command: [sh, -c, ./deploy.sh]}]
EOF
say "lockctl run --lock staging ${web[*]} --build 45 -f $job   # submit, drive and follow a job"
lockctl run --lock staging "${web[@]}" --build 45 -f "$job"
cat <<'EOT'
(acme/web@main#45 is the CI build that held the lock; "build ID 1 of job
deploy-web" is the job's own run number, which lockctl counts per job name
and gives the pod as BUILD_ID.)
EOT

sed -e '/annotations:/d' "$job" > "${job%.yaml}-forever.yaml"
say "lockctl run --lock staging ${web[*]} --build 46 -f ${job%.yaml}-forever.yaml   # Ctrl-C after 3s"
# NOTE: the binary itself, not the function, so that $! is lockctl's pid.
"$bin" run --lock staging "${web[@]}" --build 46 -f "${job%.yaml}-forever.yaml" &
runner=$!
sleep 3
kill -INT "$runner"
set +e
wait "$runner"
echo "lockctl run exited with status $? (130 = interrupted)"
set -e

say "lockctl get jobs"
lockctl get jobs

# The API server enforces the lock: a write to staging from someone who does
# not hold it is admitted before lockctl enforce and refused after it. bin/localcluster write-as grants a user the right
# to write ConfigMaps there and writes as that user (impersonated), as
# `kubectl --as USER` would.
writer="${LOCKCTL_LOCALCLUSTER_BIN:-bin/localcluster}"
if [[ -x "$writer" ]]; then
  say "kubectl --as mallory create configmap app-config -n staging   # nobody enforces the lock yet"
  "$writer" write-as mallory staging
  say "lockctl enforce staging --mode deny   # the API server refuses writes from anyone but the holder"
  lockctl enforce staging --mode deny
  say "lockctl acquire staging ${web[*]} --build 47"
  acquire acme/web#47 staging "${web[@]}" --build 47
  say "kubectl --as mallory create configmap app-config -n staging   # mallory does not hold the lock"
  "$writer" write-as mallory staging
  say "lockctl release staging ${web[*]} --build 47; lockctl enforce staging --uninstall"
  lockctl release staging "${web[@]}" --build 47
  lockctl enforce staging --uninstall
fi

cat <<EOT

The local control plane keeps running. Try lockctl yourself:
  export KUBECONFIG=$KUBECONFIG
  bin/lockctl status --lock-namespace default
  bin/lockctl run --lock staging -- ./your-deploy.sh
(README.md, "One example per command", has more.) Stop it with: make down
EOT
