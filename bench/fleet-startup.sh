#!/usr/bin/env bash
# Start-up and Status against the size of the fleet: launches the release daemon on a
# fleet of SMALL accounts and on one of LARGE accounts, alternately, ROUNDS times each,
# and reports each launch (to the first answered Ping) and the Status p50 of a 2-second
# run after it, then the medians and their ratio. The fleets are made as bench/fleet.sh
# makes them, then the script syncs and waits 61 s (see "Fleets" in docs/PERFORMANCE.md).
#
#   bash bench/fleet-startup.sh [SMALL] [LARGE] [ROUNDS]     (defaults: 1000 100000 7)
set -euo pipefail
cd "$(dirname "$0")/.."
SMALL=${1:-1000}
LARGE=${2:-100000}
ROUNDS=${3:-7}
bash scripts/install-deps.sh sqlite3 bc >/dev/null
BIN=$(bash scripts/release-build.sh)
work=$(mktemp -d /tmp/accountd-fleet-startup.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
now() { date +%s.%N; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

mkdir -p "$work/v1/migrations"
cp config/schema/migrations/0001_*.sql "$work/v1/migrations/"
"$BIN/accountd" migrate --create --data-root "$work/seed" --schema "$work/v1" template >/dev/null
for size in "$SMALL" "$LARGE"; do
    python3 bench/fleet.py make "$work/seed/accounts/template.sqlite" "$work/fleet-$size/accounts" "$size"
done
sync
echo "made fleets of $SMALL and $LARGE accounts; waiting 61 s for the filesystem to settle"
sleep 61

for round in $(seq "$ROUNDS"); do
    for size in "$SMALL" "$LARGE"; do
        t0=$(now)
        "$BIN/accountd" --config /dev/null --data-root "$work/fleet-$size" --socket "$work/sock" --schema config/schema \
            --log-level warning 2>"$work/log" &
        pid=$!
        until "$BIN/accountctl" --socket "$work/sock" ping >/dev/null 2>&1; do sleep 0.005; done
        ms=$(echo "($(now) - $t0) * 1000" | bc -l)
        p50=$("$work/loadgen" "$work/sock" 1 2 1 status | sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p')
        kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
        printf 'round %d, %d accounts: start-up %.0f ms, Status p50 %s ms\n' "$round" "$size" "$ms" "$p50"
        echo "$size $ms $p50" >>"$work/runs"
    done
done
declare -A startup status
for size in "$SMALL" "$LARGE"; do
    startup[$size]=$(awk -v s="$size" '$1 == s { print $2 }' "$work/runs" | median)
    status[$size]=$(awk -v s="$size" '$1 == s { print $3 }' "$work/runs" | median)
done
printf 'medians: %d accounts start-up %.0f ms, Status p50 %s ms | %d accounts start-up %.0f ms, Status p50 %s ms\n' \
    "$SMALL" "${startup[$SMALL]}" "${status[$SMALL]}" "$LARGE" "${startup[$LARGE]}" "${status[$LARGE]}"
printf 'ratio %d / %d accounts: start-up %.2fx, Status p50 %.2fx (target: within 20%%)\n' "$LARGE" "$SMALL" \
    "$(echo "${startup[$LARGE]} / ${startup[$SMALL]}" | bc -l)" "$(echo "${status[$LARGE]} / ${status[$SMALL]}" | bc -l)"
