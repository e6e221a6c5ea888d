#!/usr/bin/env bash
# ensure-terraform.sh prints the path of the Terraform-compatible binary Horizon should use, and
# provides one when the machine has none.
#
# Order: $HORIZON_TERRAFORM_BIN (a path or a name on PATH), then `terraform`, then `tofu` on
# PATH. When none exists it builds OpenTofu at a pinned version from its Go module source into
# <repo>/.tools/bin/tofu (git-ignored), once, and reuses it afterwards. Only the path is printed
# on stdout; progress goes to stderr, so callers can write
#
#     export HORIZON_TERRAFORM_BIN="$(deploy/tools/ensure-terraform.sh)"
#
# Why build from source: no release download is reachable here, but the Go module proxy is.
# `go install github.com/opentofu/opentofu/cmd/tofu@vX` refuses the module because its go.mod has
# replace directives; building inside the downloaded module directory honours them. The build
# takes about 3 minutes on 2 cores. Concurrent invocations wait on a lock instead of building
# twice. Override the version with HORIZON_TOFU_VERSION (it must be on the module proxy:
# `go list -m -versions github.com/opentofu/opentofu`).
set -euo pipefail

tofu_version="${HORIZON_TOFU_VERSION:-v1.12.6}"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tools="$repo/.tools"
bin="$tools/bin/tofu"
stamp="$bin.version"

log() { printf 'ensure-terraform: %s\n' "$*" >&2; }

# `ensure-terraform.sh tofu` asks for OpenTofu whatever else is installed: the test task runs
# the state backend's tests with both binaries where both can be had.
names=(terraform tofu)
if [[ "${1:-}" == tofu ]]; then
	names=(tofu)
	unset HORIZON_TERRAFORM_BIN
fi

if [[ -n "${HORIZON_TERRAFORM_BIN:-}" ]]; then
	if p="$(command -v -- "$HORIZON_TERRAFORM_BIN")"; then
		printf '%s\n' "$p"
		exit 0
	fi
	log "HORIZON_TERRAFORM_BIN=$HORIZON_TERRAFORM_BIN is not an executable"
	exit 1
fi
for name in "${names[@]}"; do
	if p="$(command -v -- "$name")"; then
		printf '%s\n' "$p"
		exit 0
	fi
done

built() { [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$tofu_version" ]]; }

if built; then
	printf '%s\n' "$bin"
	exit 0
fi

command -v go >/dev/null || { log "neither terraform nor tofu is on PATH, and go is missing to build OpenTofu"; exit 1; }
mkdir -p "$tools/bin"
exec 9>"$tools/.ensure-terraform.lock"
flock 9
# Another invocation may have finished the build while we waited for the lock.
if built; then
	printf '%s\n' "$bin"
	exit 0
fi

log "no terraform or tofu on PATH: building OpenTofu $tofu_version from its Go module (takes minutes, once)"
start=$SECONDS
# Run outside any module so that the download cannot touch a go.mod or go.sum.
scratch="$(mktemp -d)"
info="$(cd "$scratch" && GOWORK=off GOFLAGS= go mod download -json "github.com/opentofu/opentofu@$tofu_version")"
rmdir "$scratch"
dir="$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [[ -z "$dir" || ! -f "$dir/go.mod" ]]; then
	log "go mod download gave no module directory:"
	printf '%s\n' "$info" >&2
	exit 1
fi
tmp="$(mktemp "$tools/bin/.tofu.XXXXXX")"
trap 'rm -f "$tmp"' EXIT
# The module cache is read-only: build there (so its replace directives apply) but write the
# binary to our tools directory. `version.dev=no` drops the "-dev" suffix a source build has.
(
	cd "$dir"
	GOWORK=off GOFLAGS="-buildvcs=false -mod=readonly" CGO_ENABLED=0 \
		go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$tmp" ./cmd/tofu
)
chmod 0755 "$tmp"
"$tmp" version >&2
mv -f "$tmp" "$bin"
printf '%s\n' "$tofu_version" >"$stamp"
log "built $bin in $((SECONDS - start))s"
printf '%s\n' "$bin"
