#!/usr/bin/env bash
# Cleanup before the control plane's VM is destroyed. Safe on a half-initialised node.
set -euo pipefail
sudo kubeadm reset --force || true
