#!/usr/bin/env bash
# The rotate-api-key action: run on demand on the one app VM the user picks, with the same
# environment as the job's scripts: its parameter (key_bytes) and input (db_host, prefilled from
# the db job's "ip" output) by name, outputs appended to $HORIZON_OUTPUT and
# $HORIZON_SECRET_OUTPUT (declared under the action's outputs).
set -euo pipefail
: "${key_bytes:?}" "${db_host:?}" "${HORIZON_OUTPUT:?}" "${HORIZON_SECRET_OUTPUT:?}"
mkdir -p app
od -An -tx1 -N"$key_bytes" /dev/urandom | tr -d ' \n' >app/api_key
echo "rotated=$(date -u +%Y-%m-%dT%H:%M:%SZ) db_host=$db_host" >app/rotated
echo "rotated the API key of $HORIZON_NAME (database $db_host)"
echo "rotated_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$HORIZON_OUTPUT"
echo "api_key=$(<app/api_key)" >>"$HORIZON_SECRET_OUTPUT"
