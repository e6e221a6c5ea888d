#!/usr/bin/env bash
# Cleanup: runs over SSH on an app VM before it is destroyed (an execution removed, or the
# stack). It must succeed on a VM that was half set up, and when run twice.
set -euo pipefail
echo "deregistering from ${db_host:-the database}"
rm -rf app
