#!/usr/bin/env bash
# make demo: start the local control plane (if it is not running) and show two
# builds taking turns on the deploy lock of namespace "staging", then a
# superseded build. Leaves the control plane running for `make down`.
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

cat <<EOT

The local control plane keeps running. Try lockctl yourself:
  export KUBECONFIG=$KUBECONFIG
  bin/lockctl status --lock-namespace default
Stop it with: make down
EOT
