#!/usr/bin/env bash
# ensure-deps.sh makes this machine able to run the whole test suite (`go tool task deps`, which
# `go tool task test` and `test-short` run first), beyond Go itself:
#
#   - the Debian packages the tests run on loopback ports of their own: Node 20+ with npm and
#     Chromium (the console, deploy/web); prometheus and prometheus-node-exporter (the discovery
#     test, functions/prometheus); nagios4-core, nagios4-cgi and OpenSSH's sshd (the Nagios
#     tests, shared/nagios/nagiostest); redis-sentinel (the high-availability tests);
#   - Postgres on 127.0.0.1:5432 and Redis on 127.0.0.1:6379, started when installed but not
#     answering (skipped when HORIZON_TEST_DATABASE_URL / HORIZON_TEST_REDIS_URL point elsewhere).
#
# It installs what is missing when it may (root, apt-get), with a policy-rc.d that keeps every
# package from starting its daemon: a system node exporter on *:9100 would take the machines'
# port, and no test wants a system Nagios, sshd or Sentinel. Otherwise it stops at once and
# prints the exact command that would. When everything is present it only checks files and two
# ports, in well under a second.
#
# Options, for operators and for its own test:
#   HORIZON_DEPS_INSTALL=no   never install nor start anything; print the command instead
#   HORIZON_DEPS_ROOT=DIR     look for the packages' files under DIR instead of / (a test
#                             points it at an empty directory to see what a bare machine gets)
set -euo pipefail
cd "$(dirname "$0")/../.."

root="${HORIZON_DEPS_ROOT:-}"
may_install=yes
if [ "${HORIZON_DEPS_INSTALL:-}" = no ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  may_install=no
fi

say() { echo "deps: $*"; }

# The package to install for each file a test runs (checked under $root).
need=()
missing() { [ ! -x "$root$1" ]; }
if [ -n "$root" ]; then
  missing /usr/bin/npm && need+=(nodejs npm)
else
  command -v npm >/dev/null || need+=(nodejs npm)
fi
missing /usr/bin/chromium && need+=(chromium)
missing /usr/bin/prometheus && need+=(prometheus)
missing /usr/bin/prometheus-node-exporter && need+=(prometheus-node-exporter)
missing /usr/sbin/nagios4 && need+=(nagios4-core)
missing /usr/lib/cgi-bin/nagios4/objectjson.cgi && need+=(nagios4-cgi)
missing /usr/sbin/sshd && need+=(openssh-server)
missing /usr/bin/redis-sentinel && need+=(redis-sentinel)

if [ ${#need[@]} -gt 0 ]; then
  if [ "$may_install" = no ]; then
    say "missing Debian packages: ${need[*]}"
    say "install them (without starting their daemons) with:"
    echo "  sudo bash deploy/tools/ensure-deps.sh"
    say "which runs: apt-get update && apt-get install -y ${need[*]} (with /usr/sbin/policy-rc.d answering 101 meanwhile)"
    exit 1
  fi
  say "installing ${need[*]} (about 1-3 minutes)"
  policy_added=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  trap '[ -z "$policy_added" ] || rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -z "$root" ] && command -v node >/dev/null; then
  major="$(node -p 'process.versions.node.split(".")[0]')"
  if [ "$major" -lt 20 ]; then
    say "node $(node --version) is too old: the console needs Node 20+ (e.g. from https://deb.nodesource.com)"
    exit 1
  fi
fi

# Services: the tests' defaults, unless pointed elsewhere.
answers() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() { for _ in $(seq 1 30); do answers "$1" && return 0; sleep 1; done; return 1; }

if [ -z "${HORIZON_TEST_DATABASE_URL:-}" ] && ! answers 5432; then
  clusters=(/etc/postgresql/*)
  if [ ! -d "${clusters[0]}" ]; then
    say "Postgres does not answer on 127.0.0.1:5432 and is not installed; run:"
    echo "  sudo apt-get install -y postgresql"
    exit 1
  fi
  start="pg_ctlcluster --skip-systemctl-redirect $(basename "${clusters[-1]}") main start"
  if [ "$may_install" = no ]; then
    say "Postgres does not answer on 127.0.0.1:5432; start it with:"
    echo "  sudo $start"
    exit 1
  fi
  say "starting Postgres: $start"
  $start
  wait_for 5432 || { say "Postgres does not answer on 127.0.0.1:5432 after starting it"; exit 1; }
fi

if [ -z "${HORIZON_TEST_REDIS_URL:-}" ] && ! answers 6379; then
  start="redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no"
  if ! command -v redis-server >/dev/null; then
    say "Redis does not answer on 127.0.0.1:6379 and redis-server is not installed; run:"
    echo "  sudo apt-get install -y redis-server"
    exit 1
  fi
  if [ "${HORIZON_DEPS_INSTALL:-}" = no ]; then
    say "Redis does not answer on 127.0.0.1:6379; start it with:"
    echo "  $start"
    exit 1
  fi
  say "starting Redis: $start"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  wait_for 6379 || { say "Redis does not answer on 127.0.0.1:6379 after starting it"; exit 1; }
fi
