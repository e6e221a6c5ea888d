#!/usr/bin/env bash
# fuzz.sh runs every Go fuzz target of the module (every `func FuzzX(f *testing.F)` in a
# _test.go file), one after another, each for FUZZTIME (a go test -fuzztime value: "10s",
# "5m", "1000x"). CI runs it with a few seconds per target so that a target that no longer
# builds, or whose property a recent change broke, fails the build; a developer runs it longer
# with `go tool task fuzz FUZZTIME=10m`.
#
# A failing input is written by go test under the target's testdata/fuzz/FuzzX/ directory:
# commit it with the fix, and plain `go test` replays it from then on.
#
# Usage: deploy/tools/fuzz.sh [FUZZTIME] [PATTERN]
#   PATTERN (a grep -E regex, default all) selects targets by "package-dir:FuzzName".
# Environment: FUZZPARALLEL (default 1) is -parallel, the fuzzing processes per target.
set -euo pipefail

fuzztime="${1:-${FUZZTIME:-10s}}"
pattern="${2:-${FUZZPATTERN:-.}}"
parallel="${FUZZPARALLEL:-1}"
cd "$(dirname "$0")/../.."

targets=$(grep -rE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.data --exclude-dir=.tools \
	-e '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1:\2#' | sort -u | grep -E -- "$pattern" || true)
if [ -z "$targets" ]; then
	echo "fuzz.sh: no fuzz target matches $pattern" >&2
	exit 1
fi

# inputs counts the saved inputs of a target (go test writes a failing one there).
inputs() {
	if [ -d "$1" ]; then find "$1" -type f | wc -l; else echo 0; fi
}

failed=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in $targets; do
	dir="${t%%:*}" name="${t##*:}"
	corpus="./$dir/testdata/fuzz/$name"
	echo "== $name in ./$dir for $fuzztime"
	start=$SECONDS before=$(inputs "$corpus")
	set +e
	go test -count=1 -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -parallel "$parallel" "./$dir" 2>&1 | tee "$log"
	status=${PIPESTATUS[0]}
	set -e
	if [ "$status" -ne 0 ]; then
		# Go's fuzzing coordinator (up to Go 1.26) can report its own -fuzztime deadline as a
		# failure when a worker is mid-input at that moment: "--- FAIL: FuzzX" followed by
		# only "context deadline exceeded", and no input written (golang/go#75804, fixed in Go
		# 1.27). That is no finding; anything else — a saved input, a build error, another
		# message — is. The seeds and the saved inputs run as plain tests in `go test ./...`.
		if [ "$(inputs "$corpus")" = "$before" ] &&
			[ "$(grep -A1 -- "^--- FAIL: $name " "$log" | tail -n 1)" = "    context deadline exceeded" ]; then
			echo "fuzz.sh: $name ended on Go's fuzztime deadline race (golang/go#75804) with no failing input: not a finding" >&2
		else
			echo "FAIL $name in ./$dir: the failing input, if any, is under $corpus/" >&2
			failed=1
		fi
	fi
	echo "   ($((SECONDS - start))s)"
done
exit $failed
