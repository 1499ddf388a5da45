#!/usr/bin/env bash
# The CPU cost of a durable Set when many clients share its commit, counted in instructions:
# the release daemon runs under `valgrind --tool=callgrind --separate-threads=yes`, CLIENTS
# clients send 1,000 Sets to warm up, the counters are zeroed, they send COUNT more, and each
# thread's count is printed with the totals per Set of the event loops (the two busiest
# threads) and of the rest (the blocking pool's commits). The batches a commit holds depend
# on how valgrind schedules the threads, so two runs differ by a few percent, not more.
#
#   bash bench/callgrind-sets.sh [COUNT] [CLIENTS] [BIN_DIR]   (defaults 3000, 32, this tree's release build)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${1:-3000}
CLIENTS=${2:-32}
. bench/callgrind-setup.sh
callgrind_setup "${3:-}" accountd-callgrind-sets

"$BIN/accountd" migrate --create --data-root "$work/data" --schema config/schema alice >/dev/null
mkdir -p "$work/out"
LD_PRELOAD="$work/sigsuspend-shim.so" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$work/out/callgrind.out.%p" \
    "$work/accountd" --config /dev/null --data-root "$work/data" --socket "$work/sock" --schema config/schema --log-level warning \
    2>"$work/valgrind.log" &
pid=$!
for _ in $(seq 1200); do [ -S "$work/sock" ] && break; sleep 0.1; done
[ -S "$work/sock" ] || { echo "the daemon did not start under valgrind:" >&2; tail "$work/valgrind.log" >&2; exit 1; }
"$work/loadgen" "$work/sock" 1 60 1 "switch alice" >/dev/null
LOADGEN_TOTAL=1000 "$work/loadgen" "$work/sock" "$CLIENTS" 600 1 'set user theme "dark"' >/dev/null
callgrind_control -z "$pid" >/dev/null
out=$(LOADGEN_TOTAL=$COUNT "$work/loadgen" "$work/sock" "$CLIENTS" 600 1 'set user theme "dark"')
rm -f "$work"/out/*
callgrind_control -d "$pid" >/dev/null
echo "accountd at $BIN, $COUNT durable Sets from $CLIENTS clients after 1,000 ($(echo "$out" | sed -n 's/.*errors=\([0-9]*\).*/\1/p') errors)"
# Each dumped thread's instructions, from callgrind_annotate's PROGRAM TOTALS.
for file in "$work"/out/callgrind.out.*; do
    callgrind_annotate "$file" 2>/dev/null | awk -v f="${file##*-}" '/PROGRAM TOTALS/ { gsub(",", "", $1); print f, $1 }'
done | sort -k2 -n > "$work/threads"
awk -v n="$COUNT" '{ t[NR] = $2; all += $2 } END {
    loops = t[NR] + t[NR - 1]
    printf "per Set: event loops %.0f, other threads %.0f, all %.0f instructions\n", loops / n, (all - loops) / n, all / n }' "$work/threads"
