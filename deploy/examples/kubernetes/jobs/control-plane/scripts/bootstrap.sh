#!/usr/bin/env bash
# Initialises the control plane (once: a re-run finds it initialised and only refreshes the
# outputs), installs the pod network, and emits what workers need. The VM template has
# containerd, kubeadm, kubelet and kubectl installed (an ISO build: see ISO templates in deploy/README.md).
#
# Parameters arrive as environment variables of their own names; outputs are key=value lines
# appended to $HORIZON_OUTPUT (and, for secrets, $HORIZON_SECRET_OUTPUT).
set -euo pipefail
: "${kubernetes_version:?}" "${pod_cidr:?}" "${HORIZON_IP:?}" "${HORIZON_OUTPUT:?}" "${HORIZON_SECRET_OUTPUT:?}"

if [[ ! -f /etc/kubernetes/admin.conf ]]; then
	sudo kubeadm init --kubernetes-version "stable-${kubernetes_version}" --pod-network-cidr "$pod_cidr" \
		--apiserver-advertise-address "$HORIZON_IP" --control-plane-endpoint "$HORIZON_IP:6443"
	sudo kubectl --kubeconfig /etc/kubernetes/admin.conf apply \
		-f https://github.com/flannel-io/flannel/releases/latest/download/kube-flannel.yml
else
	echo "the control plane is already initialised"
fi

echo "api_endpoint=https://$HORIZON_IP:6443" >>"$HORIZON_OUTPUT"
# A fresh token each run: "Run again" on this job refreshes an expired join command.
echo "join_command=$(sudo kubeadm token create --ttl 24h --print-join-command)" >>"$HORIZON_SECRET_OUTPUT"
echo "kubeconfig=$(sudo base64 -w0 /etc/kubernetes/admin.conf)" >>"$HORIZON_SECRET_OUTPUT"
