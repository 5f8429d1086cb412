#!/usr/bin/env bash
# make demo: start the local control plane (if it is not running) and show two
# builds taking turns on the deploy lock of namespace "staging", a superseded
# build, then lockctl run with a local command, with a job, and interrupted.
# Leaves the control plane running for `make down`.
set -euo pipefail
cd "$(dirname "$0")/.."

bin/localcluster up
export KUBECONFIG="$PWD/_output/local/kubeconfig"
export LOCKCTL_LOCK_NAMESPACE=default
lockctl() { bin/lockctl "$@"; }
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
web=(--owner acme --repo web --branch main)
api=(--owner acme --repo api --branch main)

# Start from a clean slate if a previous demo left locks behind.
lockctl release staging --force -q >/dev/null 2>&1 || true

say "lockctl acquire staging ${web[*]} --build 41"
lockctl acquire staging "${web[@]}" --build 41

say "lockctl acquire staging ${api[*]} --build 7 --progress plain   # waits in the queue"
lockctl acquire staging "${api[@]}" --build 7 --progress plain &
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
lockctl acquire staging "${web[@]}" --build 42 --progress plain &
older=$!
sleep 2
say "lockctl acquire staging ${web[*]} --build 43 &   # a newer build of the same branch arrives"
lockctl acquire staging "${web[@]}" --build 43 --progress plain &
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
# annotations tell it how the pod ends (see internal/testenv).
job=_output/local/demo-job.yaml
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

sed -e '/annotations:/d' "$job" > "${job%.yaml}-forever.yaml"
say "lockctl run --lock staging ${web[*]} --build 46 -f ${job%.yaml}-forever.yaml   # Ctrl-C after 3s"
# NOTE: bin/lockctl itself, not the function, so that $! is lockctl's pid.
bin/lockctl run --lock staging "${web[@]}" --build 46 -f "${job%.yaml}-forever.yaml" &
runner=$!
sleep 3
kill -INT "$runner"
set +e
wait "$runner"
echo "lockctl run exited with status $? (130 = interrupted)"
set -e

say "lockctl get jobs"
lockctl get jobs

cat <<EOT

The local control plane keeps running. Try lockctl yourself:
  export KUBECONFIG=$KUBECONFIG
  bin/lockctl status --lock-namespace default
  bin/lockctl run --lock staging -- ./your-deploy.sh
(README.md, "Try it", has more.) Stop it with: make down
EOT
