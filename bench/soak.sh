#!/usr/bin/env bash
# Soak test (not part of the test suite): 50 clients mixing Status, Switch, Get, Set and
# Export across 200 accounts against one release-build accountd for a long time.
#
#   bash bench/soak.sh [SECONDS]        (default 600: ten minutes)
#
# Prints the daemon's RSS every 10 s, the replies counted by error name, per-operation
# latencies, and finally checks, after a restart of the daemon, that every Set the daemon
# acknowledged is there. Exit status 0 when nothing was lost and no connection broke.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TOTAL=${1:-600}
CLIENTS=${SOAK_CLIENTS:-50}
ACCOUNTS=${SOAK_ACCOUNTS:-200}
BIN=$(bash scripts/release-build.sh --product accountd)
work=$(mktemp -d /tmp/accountd-soak.XXXXXX)
gcc -O2 -Wall -pthread -o "$work/soak" bench/soak.c
daemon_pid=""
cleanup() {
    if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

start_daemon() {
    "$BIN/accountd" --config /dev/null --data-root "$work/data" --socket "$work/sock" --schema config/schema --log-level warning \
        2>>"$work/daemon.log" &
    daemon_pid=$!
    for _ in $(seq 200); do [ -S "$work/sock" ] && break; sleep 0.05; done
    sleep 0.2
}
stop_daemon() {
    kill -TERM "$daemon_pid"
    local status=0
    wait "$daemon_pid" || status=$?
    daemon_pid=""
    echo "daemon stopped with SIGTERM: exit $status"
}

echo "soak: ${SECONDS_TOTAL} s, $CLIENTS clients, $ACCOUNTS accounts; $(nproc) cores; release build; sqlite $(sqlite3 --version | cut -d' ' -f1)"
start_daemon
"$work/soak" setup "$work/sock" "$ACCOUNTS"
echo "created $ACCOUNTS accounts; mix: 25% status, 10% switch, 25% get, 30% set, 10% jsonl export"
echo
status=0
"$work/soak" run "$work/sock" "$daemon_pid" "$CLIENTS" "$SECONDS_TOTAL" "$ACCOUNTS" "$work/acknowledged.txt" || status=$?
echo
echo "daemon log lines at warning or above: $(wc -l < "$work/daemon.log")"
if [ -s "$work/daemon.log" ]; then head -5 "$work/daemon.log" | cut -c1-200; fi
stop_daemon
start_daemon
# One account after another, so that the daemon opens each account's preferences once.
sort -s -k1,1 "$work/acknowledged.txt" > "$work/acknowledged-by-account.txt"
verify_start=$(date +%s)
echo "after a restart (SIGTERM, start), every acknowledged Set read back with Get:"
"$work/soak" verify "$work/sock" "$work/acknowledged-by-account.txt" || status=$?
echo "verified in $(( $(date +%s) - verify_start )) s"
echo "account files: $(ls "$work/data/accounts" | grep -c '\.sqlite$'), data root $(du -sh "$work/data" | cut -f1)"
exit $status
