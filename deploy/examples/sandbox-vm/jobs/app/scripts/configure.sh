#!/usr/bin/env bash
# Runs over SSH on each app VM after its apply. Parameters and inputs arrive as environment
# variables of their own names (db_host, admin_password, cores, memory_mb); outputs are
# key=value lines appended to $HORIZON_OUTPUT, secret ones to $HORIZON_SECRET_OUTPUT.
set -euo pipefail
: "${db_host:?}" "${admin_password:?}" "${HORIZON_IP:?}" "${HORIZON_OUTPUT:?}" "${HORIZON_SECRET_OUTPUT:?}"

mkdir -p app
printf 'db_host=%s\n' "$db_host" >app/app.conf
# Re-runs must be harmless: keep the key an earlier run made.
if [[ ! -s app/api_key ]]; then
	od -An -tx1 -N16 /dev/urandom | tr -d ' \n' >app/api_key
fi

echo "configured the app against $db_host"
echo "app_url=http://$HORIZON_IP:8080/" >>"$HORIZON_OUTPUT"
echo "api_key=$(<app/api_key)" >>"$HORIZON_SECRET_OUTPUT"
