#!/usr/bin/env bash
# pve-pool.sh: create (or adopt) and delete one Proxmox VE resource pool through the PVE API,
# with bash and curl only. The create-pool action's module calls it from local-exec
# provisioners.
#
#   pve-pool.sh create    create the pool POOL_ID with POOL_COMMENT; a pool already there with
#                         that comment is adopted (an apply tried again), any other is refused
#   pve-pool.sh destroy   delete the pool; a pool that is gone is fine
#
# The API, from the environment Horizon gives Terraform: PROXMOX_VE_ENDPOINT, PROXMOX_VE_API_TOKEN
# (USER@REALM!TOKENID=SECRET) and, optionally, HORIZON_PROXMOX_CA_FILE. TLS is always verified.
set -euo pipefail

log() { printf 'pve-pool: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

: "${PROXMOX_VE_ENDPOINT:?must be set}"
: "${PROXMOX_VE_API_TOKEN:?must be set}"
: "${POOL_ID:?}"
api="${PROXMOX_VE_ENDPOINT%/}/api2/json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# pve METHOD PATH [curl args…] calls the API and sets STATUS, REASON and BODY. The token travels
# in a curl config read from a pipe, never on a command line.
pve() {
	local method=$1 path=$2
	shift 2
	local tls=()
	if [[ -n ${HORIZON_PROXMOX_CA_FILE:-} ]]; then
		tls=(--cacert "$HORIZON_PROXMOX_CA_FILE")
	fi
	if ! curl --silent --show-error --globoff --connect-timeout 10 --max-time 60 ${tls[@]+"${tls[@]}"} \
		--config <(printf 'header = "Authorization: PVEAPIToken=%s"\n' "$PROXMOX_VE_API_TOKEN") \
		--request "$method" --dump-header "$work/headers" --output "$work/body" "$@" "$api$path"; then
		die "$method $path: the API did not answer"
	fi
	local line
	line=$(grep '^HTTP/' "$work/headers" | tail -n 1 | tr -d '\r')
	read -r _ STATUS REASON <<<"$line"
	BODY=$(<"$work/body")
}

case ${1:-} in
create)
	pve POST /pools --data-urlencode "poolid=$POOL_ID" --data-urlencode "comment=${POOL_COMMENT:-}"
	if [[ $STATUS == 200 ]]; then
		log "created pool $POOL_ID"
		exit 0
	fi
	pve GET /pools --get --data-urlencode "poolid=$POOL_ID"
	[[ $STATUS == 200 ]] || die "create pool $POOL_ID: $REASON"
	comment=$(printf '%s' "$BODY" | sed -n 's/.*"comment":"\([^"]*\)".*/\1/p')
	[[ $comment == "${POOL_COMMENT:-}" ]] || die "pool $POOL_ID already exists and is not this instance's (its comment: $comment)"
	log "adopted pool $POOL_ID, made by an earlier try"
	;;
destroy)
	pve DELETE "/pools?poolid=$(printf '%s' "$POOL_ID" | sed 's|/|%2F|g')"
	if [[ $STATUS == 200 ]]; then
		log "deleted pool $POOL_ID"
	elif [[ $REASON == *"does not exist"* ]]; then
		log "pool $POOL_ID is already gone"
	else
		die "delete pool $POOL_ID: $STATUS $REASON"
	fi
	;;
*) die "usage: pve-pool.sh create|destroy" ;;
esac
