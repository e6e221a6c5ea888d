#!/usr/bin/env bash
# Joins the worker to the cluster with the control plane's join command (an input). A re-run
# on a joined node does nothing.
set -euo pipefail
: "${join_command:?}"
if [[ -f /etc/kubernetes/kubelet.conf ]]; then
	echo "already joined"
	exit 0
fi
# The join command is "kubeadm join <endpoint> --token … --discovery-token-ca-cert-hash …".
read -r -a argv <<<"$join_command"
[[ ${argv[0]} == kubeadm && ${argv[1]} == join ]] || { echo "unexpected join command" >&2; exit 1; }
sudo "${argv[@]}"
