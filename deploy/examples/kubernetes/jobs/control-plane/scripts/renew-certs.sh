#!/usr/bin/env bash
# The renew-certs action: renew every kubeadm certificate and restart the static pods, then
# hand out the new admin kubeconfig.
set -euo pipefail
: "${HORIZON_SECRET_OUTPUT:?}"
sudo kubeadm certs renew all
sudo systemctl restart kubelet
echo "kubeconfig=$(sudo base64 -w0 /etc/kubernetes/admin.conf)" >>"$HORIZON_SECRET_OUTPUT"
