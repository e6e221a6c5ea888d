#!/usr/bin/env bash
# Cleanup before a worker's VM is destroyed: drain it, remove it from the cluster (with the
# control plane's kubeconfig, an input) and reset kubeadm. Safe to run twice.
set -euo pipefail
: "${kubeconfig:?}"
conf=$(mktemp)
trap 'rm -f "$conf"' EXIT
base64 -d <<<"$kubeconfig" >"$conf"
node=$(hostname)
kubectl --kubeconfig "$conf" drain "$node" --ignore-daemonsets --delete-emptydir-data --timeout 5m || true
kubectl --kubeconfig "$conf" delete node "$node" --ignore-not-found
sudo kubeadm reset --force || true
