#!/usr/bin/env bash
# pve-vm.sh: create (or adopt), configure and destroy one Proxmox VE VM through the PVE API,
# with bash and curl only. The Terraform module beside it calls it from local-exec
# provisioners; deploy/examples/README.md describes the contract.
#
#   pve-vm.sh create      create the VM (or adopt the one already there) and start it
#   pve-vm.sh configure   write cores, memory, name, tags, startup, network and cloud-init
#   pve-vm.sh destroy     stop and delete the VM; a VM that is gone is fine
#
# The VM: VM_NODE, VM_ID, VM_NAME; for create and configure also VM_POOL, VM_CORES,
# VM_MEMORY (MiB), VM_NET0, VM_IPCONFIG0, VM_NAMESERVER, VM_CICUSTOM, VM_TAGS (';'-separated)
# and VM_STARTUP (PVE's startup, e.g. order=2; empty for none).
#
# The API, from the environment Horizon gives Terraform: PROXMOX_VE_ENDPOINT
# (https://host:8006), PROXMOX_VE_API_TOKEN (USER@REALM!TOKENID=SECRET) and, optionally,
# HORIZON_PROXMOX_CA_FILE (a PEM bundle to verify the API's certificate; without it, the
# system's roots). TLS is always verified. VM_TASK_TIMEOUT bounds each PVE task (seconds,
# default 600).
set -euo pipefail

log() { printf 'pve-vm: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}

: "${PROXMOX_VE_ENDPOINT:?must be set, e.g. https://pve.example.org:8006}"
: "${PROXMOX_VE_API_TOKEN:?must be set, as USER@REALM!TOKENID=SECRET}"
: "${VM_NODE:?}" "${VM_ID:?}" "${VM_NAME:?}"
api="${PROXMOX_VE_ENDPOINT%/}/api2/json"
task_timeout="${VM_TASK_TIMEOUT:-600}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# pve METHOD PATH [curl args…] calls the API and sets STATUS, REASON (PVE puts its error
# message in the status line) and BODY. The token travels in a curl config read from a pipe,
# never on a command line another user could read.
pve() {
	local method=$1 path=$2
	shift 2
	local tls=()
	if [[ -n ${HORIZON_PROXMOX_CA_FILE:-} ]]; then
		tls=(--cacert "$HORIZON_PROXMOX_CA_FILE")
	fi
	: >"$work/headers"
	: >"$work/body"
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

# field NAME prints the string field NAME of BODY (PVE's JSON is compact and flat enough for
# this), or nothing.
field() {
	local re="\"$1\":\"([^\"]*)\""
	if [[ $BODY =~ $re ]]; then
		printf '%s' "${BASH_REMATCH[1]}"
	fi
}

# wait_task UPID WHAT waits for a task to stop and fails with PVE's exit status unless OK.
wait_task() {
	local upid=$1 what=$2 deadline=$((SECONDS + task_timeout))
	[[ -n $upid ]] || die "$what: PVE answered no task ($BODY)"
	while :; do
		pve GET "/nodes/$VM_NODE/tasks/$upid/status"
		[[ $STATUS == 200 ]] || die "$what: read task $upid: $STATUS $REASON"
		if [[ $(field status) == stopped ]]; then
			local exit
			exit=$(field exitstatus)
			[[ $exit == OK ]] || die "$what failed: $exit (task $upid)"
			return
		fi
		((SECONDS < deadline)) || die "$what: task $upid still running after ${task_timeout}s"
		sleep 0.2
	done
}

# read_config sets BODY to the VM's config and returns 1 when the VM does not exist on VM_NODE.
read_config() {
	pve GET "/nodes/$VM_NODE/qemu/$VM_ID/config"
	if [[ $STATUS == 200 ]]; then
		return 0
	fi
	[[ $REASON == *"does not exist"* ]] || die "read VM $VM_ID on $VM_NODE: $STATUS $REASON"
	return 1
}

# wait_unlocked waits until no task holds the VM's lock (a create, clone or migration that a
# killed run left going finishes first).
wait_unlocked() {
	local deadline=$((SECONDS + task_timeout))
	while [[ $BODY == *'"lock":'* ]]; do
		((SECONDS < deadline)) || die "VM $VM_ID is still locked ($(field lock)) after ${task_timeout}s"
		sleep 0.2
		read_config || die "VM $VM_ID vanished from $VM_NODE while locked"
	done
}

# read_power sets POWER to the VM's state: running or stopped.
read_power() {
	pve GET "/nodes/$VM_NODE/qemu/$VM_ID/status/current"
	[[ $STATUS == 200 ]] || die "read status of VM $VM_ID: $STATUS $REASON"
	POWER=$(field status)
}

start() {
	read_power
	if [[ $POWER == running ]]; then
		log "VM $VM_ID is running"
		return
	fi
	log "starting VM $VM_ID"
	pve POST "/nodes/$VM_NODE/qemu/$VM_ID/status/start"
	[[ $STATUS == 200 ]] || die "start VM $VM_ID: $REASON"
	wait_task "$(field data)" "start VM $VM_ID"
}

# config_args sets ARGS to the settings create and configure write.
config_args() {
	ARGS=(--data-urlencode "name=$VM_NAME" --data-urlencode "cores=$VM_CORES" --data-urlencode "memory=$VM_MEMORY"
		--data-urlencode "net0=$VM_NET0" --data-urlencode "ipconfig0=$VM_IPCONFIG0" --data-urlencode "cicustom=$VM_CICUSTOM")
	local unset=()
	for kv in "nameserver=$VM_NAMESERVER" "tags=$VM_TAGS" "startup=$VM_STARTUP"; do
		if [[ -n ${kv#*=} ]]; then
			ARGS+=(--data-urlencode "$kv")
		else
			unset+=("${kv%%=*}")
		fi
	done
	UNSET=$(
		IFS=,
		printf '%s' "${unset[*]}"
	)
}

create() {
	if read_config; then
		# The VMID is Horizon's, allocated once per execution: a VM with it and this name on
		# this node is the one an earlier, interrupted run created.
		local name
		name=$(field name)
		[[ $name == "$VM_NAME" ]] || die "VM $VM_ID already exists on $VM_NODE and is called '$name', not '$VM_NAME': refusing to adopt it"
		log "VM $VM_ID ($VM_NAME) already exists on $VM_NODE: adopting it"
		wait_unlocked
		start
		return
	fi
	log "creating VM $VM_ID ($VM_NAME) on $VM_NODE"
	config_args
	if [[ -n $VM_POOL ]]; then
		ARGS+=(--data-urlencode "pool=$VM_POOL")
	fi
	# PVE refuses a VMID taken anywhere in the cluster ("VM 100 already exists on node 'pve2'").
	pve POST "/nodes/$VM_NODE/qemu" --data-urlencode "vmid=$VM_ID" "${ARGS[@]}"
	[[ $STATUS == 200 ]] || die "create VM $VM_ID on $VM_NODE: $REASON"
	wait_task "$(field data)" "create VM $VM_ID"
	start
}

configure() {
	read_config || die "VM $VM_ID does not exist on $VM_NODE"
	wait_unlocked
	config_args
	if [[ -n $UNSET ]]; then
		ARGS+=(--data-urlencode "delete=$UNSET")
	fi
	log "configuring VM $VM_ID"
	pve PUT "/nodes/$VM_NODE/qemu/$VM_ID/config" "${ARGS[@]}"
	[[ $STATUS == 200 ]] || die "configure VM $VM_ID: $REASON"
}

destroy() {
	if ! read_config; then
		log "VM $VM_ID does not exist on $VM_NODE: nothing to destroy"
		return
	fi
	local name
	name=$(field name)
	if [[ $name != "$VM_NAME" ]]; then
		# Not the VM this run created: the VMID was freed and reused. Never delete it.
		log "VM $VM_ID on $VM_NODE is called '$name', not '$VM_NAME': it is not this job's VM, leaving it"
		return
	fi
	wait_unlocked
	read_power
	if [[ $POWER == running ]]; then
		log "stopping VM $VM_ID"
		pve POST "/nodes/$VM_NODE/qemu/$VM_ID/status/stop"
		[[ $STATUS == 200 ]] || die "stop VM $VM_ID: $REASON"
		wait_task "$(field data)" "stop VM $VM_ID"
	fi
	log "deleting VM $VM_ID"
	pve DELETE "/nodes/$VM_NODE/qemu/$VM_ID?purge=1&destroy-unreferenced-disks=1"
	if [[ $STATUS != 200 ]]; then
		[[ $REASON == *"does not exist"* ]] && return
		die "delete VM $VM_ID: $REASON"
	fi
	wait_task "$(field data)" "delete VM $VM_ID"
}

case "${1:-}" in
create | configure | destroy) "$1" ;;
*) die "usage: pve-vm.sh create|configure|destroy" ;;
esac
