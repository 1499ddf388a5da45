#!/usr/bin/env bash
# The CPU cost of one request, counted in instructions: the release daemon runs under
# `valgrind --tool=callgrind`, takes WARMUP requests of a kind, its counters are zeroed, it
# answers COUNT more from one client, and the instructions counted over all its threads,
# divided by COUNT, are that request's cost. Unlike a time, the count is the same on every
# run (within a fraction of a percent), whatever else the machine is doing.
#
#   bash bench/callgrind.sh [COUNT] [BIN_DIR]      (default 2000; BIN_DIR: another build's
#                                                  accountd, to compare; default this tree's release build)
#
# Valgrind 3.19 (Debian 12) crashes in libdispatch's signal thread, whose sigsuspend() mask
# is read-only memory that valgrind writes to; bench/sigsuspend-shim.c, preloaded, hands it a
# writable copy.
#
# Kinds: Ping, Status, Status {account}, Get, Set (durable, one client: one commit each),
# Query (a point SELECT by primary key), Execute (a one-row INSERT, one commit each).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-2000}
WARMUP=200
. bench/callgrind-setup.sh
callgrind_setup "${2:-}" accountd-callgrind

# The sample bundle; alice holds 1,000 rows in user_info.
"$BIN/accountd" migrate --create --data-root "$work/data" --schema config/schema alice >/dev/null
sqlite3 "$work/data/accounts/alice.sqlite" \
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000) INSERT INTO user_info (user_id, user_name) SELECT i, 'user ' || i FROM c; PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
LD_PRELOAD="$work/sigsuspend-shim.so" valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out.%p" \
    "$work/accountd" --config /dev/null --data-root "$work/data" --socket "$work/sock" --schema config/schema --log-level warning \
    2>"$work/valgrind.log" &
pid=$!
for _ in $(seq 1200); do [ -S "$work/sock" ] && break; sleep 0.1; done
[ -S "$work/sock" ] || { echo "the daemon did not start under valgrind:" >&2; tail "$work/valgrind.log" >&2; exit 1; }
"$work/loadgen" "$work/sock" 1 60 1 "switch alice" 'set user theme "dark"' >/dev/null

# cost NAME REQUEST: instructions per request of REQUEST.
cost() {
    local name=$1 request=$2 out
    LOADGEN_RANDOM=1000 LOADGEN_TOTAL=$WARMUP "$work/loadgen" "$work/sock" 1 600 1 "$request" >/dev/null
    callgrind_control -z "$pid" >/dev/null
    out=$(LOADGEN_RANDOM=1000 LOADGEN_TOTAL=$COUNT "$work/loadgen" "$work/sock" 1 600 1 "$request")
    rm -f "$work"/callgrind.out.*.[0-9]*
    callgrind_control -d "$pid" >/dev/null
    local total
    total=$(cat "$work"/callgrind.out.*.[0-9]* 2>/dev/null | awk '/^totals:/ { t += $2 } /^summary:/ { s += $2 } END { printf "%.0f\n", (t > 0 ? t : s) }')
    printf '%-18s %10.0f instructions per request (%s requests, %s errors)\n' "$name" "$(echo "$total / $COUNT" | bc -l)" \
        "$(echo "$out" | sed -n 's/.*requests=\([0-9]*\).*/\1/p')" "$(echo "$out" | sed -n 's/.*errors=\([0-9]*\).*/\1/p')"
}
echo "accountd at $BIN, $COUNT requests of each kind after $WARMUP to warm up, one client"
cost "Ping" ping
cost "Status" status
# A Status of an account reads /proc/locks, which lists every lock on the machine: its cost grows with them.
echo "locks on the machine (/proc/locks): $(wc -l </proc/locks)"
cost "Status {account}" "status alice"
cost "Get" "get user theme"
cost "Set" 'set user theme "dark"'
cost "Query" '{"method":"io.accountd.Query","parameters":{"sql":"SELECT user_name FROM user_info WHERE user_id = ?","parameters":[@R@]}}'
cost "Execute" '{"method":"io.accountd.Execute","parameters":{"statements":[{"sql":"INSERT INTO user_info (user_name) VALUES (?)","parameters":["u@R@"]}]}}'
