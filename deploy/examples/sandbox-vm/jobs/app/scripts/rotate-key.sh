#!/usr/bin/env bash
# The rotate-api-key action: a script action run on every app VM of a deployed stack.
set -euo pipefail
: "${HORIZON_SECRET_OUTPUT:?}"
mkdir -p app
od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >app/api_key
echo "api_key=$(<app/api_key)" >>"$HORIZON_SECRET_OUTPUT"
echo "rotated the API key"
