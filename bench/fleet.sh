#!/usr/bin/env bash
# Fleet benchmark: ACCOUNTS accounts at version 1 of the sample bundle, then, on the
# release build:
#   - start-up (launch to the first answered Ping), RSS idle, Status p50 (1 client), List;
#   - Migrate {all} to version 3 through `accountctl migrate --all`, and RSS after it;
#   - beside it, in the same run, the loop an operator would write by hand (bench/fleet.py:
#     Python's sqlite3, one transaction per file, synchronous=FULL) on copies of the same
#     files, and the ratio. Each side starts after a sync and a 61 s pause (below), so a
#     run takes two minutes more than its measurements.
#
#   - after it, the disk per account (file, WAL, snapshots, Litestream state, from the
#     daemon's accountd_disk_bytes), RSS, and what a metrics scrape costs (the first one
#     reads every file's state; the next ones only stat the files that did not change).
#
#   bash bench/fleet.sh [ACCOUNTS]      (default 1000; the issue's large run is 100000)
#   BENCH_BUILD=debug bash bench/fleet.sh 1000    (the debug build, when no release build is at hand)
#
# The figures go into docs/PERFORMANCE.md; the sizing in docs/OPERATIONS.md takes them from there.
set -euo pipefail
cd "$(dirname "$0")/.."
ACCOUNTS=${1:-1000}
bash scripts/install-deps.sh sqlite3 bc >/dev/null
BUILD=${BENCH_BUILD:-release}
if [ "$BUILD" = release ]; then
    BIN=$(bash scripts/release-build.sh)
else
    swift build -c "$BUILD" >/dev/null
    BIN=$(swift build -c "$BUILD" --show-bin-path)
fi
work=$(mktemp -d /tmp/accountd-fleet.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc -l; }
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

echo "machine: $(nproc) cores; $ACCOUNTS accounts; sqlite $(sqlite3 --version | cut -d' ' -f1); $(df -T "$work" | awk 'NR == 2 {print $2}') at $work"
mkdir -p "$work/v1/migrations"
cp config/schema/migrations/0001_*.sql "$work/v1/migrations/"
"$BIN/accountd" migrate --create --data-root "$work/seed" --schema "$work/v1" template >/dev/null
t0=$(now)
python3 bench/fleet.py make "$work/seed/accounts/template.sqlite" "$work/data/accounts" "$ACCOUNTS"
cp -a "$work/data/accounts" "$work/loop"
sync
printf 'made %d accounts at version 1 in %.1f s (and a copy for the loop)\n' "$ACCOUNTS" "$(since "$t0")"

# Start-up: launch to the first answered Ping; the median of three launches, the first of
# which also meets whatever the kernel still has to write back of the fleet just made.
launch() {
    "$BIN/accountd" --config /dev/null --data-root "$work/data" --socket "$work/sock" --schema config/schema --log-level warning 2>"$work/log" &
    pid=$!
    until "$BIN/accountctl" --socket "$work/sock" ping >/dev/null 2>&1; do sleep 0.005; done
}
launches=()
for run in 1 2 3; do
    t0=$(now)
    launch
    launches+=("$(since "$t0")")
    [ "$run" = 3 ] || { kill "$pid"; wait "$pid" 2>/dev/null || true; }
done
startup=$(printf '%s\n' "${launches[@]}" | sort -n | sed -n 2p)
echo "start-up, three launches: ${launches[*]} s"
sleep 1
idle=$(rss_mb "$pid")
status=$("$work/loadgen" "$work/sock" 1 3 1 status | sed -n 's/.*p50_ms=\([0-9.]*\).*/\1/p')
t0=$(now)
listed=$("$BIN/accountctl" --socket "$work/sock" list | wc -l)
list=$(since "$t0")
printf 'start-up %.3f s | RSS idle %s MB | Status p50 %s ms (1 client) | List %.2f s (%s lines)\n' "$startup" "$idle" "$status" "$list" "$listed"

# Each side starts on a quiet filesystem. ext4 without a journal (this machine's) avoids
# reusing an inode freed in the last 60 s (300 s while its inode table block is unwritten):
# every file created checks the freed ones one by one. Making the fleet frees two inodes per account (the
# -wal and -shm of each copy's one SQLite open), and migrating frees some too. Without the
# pauses, accountd would pay for the making's deletions, and the loop for accountd's.
quiet() { sync; sleep 61; }
quiet
t0=$(now)
"$BIN/accountctl" --socket "$work/sock" migrate --all | tail -1
daemon=$(since "$t0")
after=$(rss_mb "$pid")
quiet
loop=$(python3 bench/fleet.py migrate "$work/loop" config/schema/migrations/0002_*.sql config/schema/migrations/0003_*.sql)
printf 'Migrate {all}: accountd %.2f s (%.2f ms per account) | Python loop %.2f s (%.2f ms) | %.2fx (target <= 1.2x)\n' \
    "$daemon" "$(echo "$daemon * 1000 / $ACCOUNTS" | bc -l)" "$loop" "$(echo "$loop * 1000 / $ACCOUNTS" | bc -l)" "$(echo "$daemon / $loop" | bc -l)"
printf 'RSS: idle %s MB, after migrating %s MB (+%.1f MB; target <= +10 MB)\n' "$idle" "$after" "$(echo "$after - $idle" | bc -l)"

# Disk per account and the cost of a scrape, from the daemon's own figures.
t0=$(now)
"$BIN/accountctl" --socket "$work/sock" metrics >"$work/metrics.1"
first=$(since "$t0")
t0=$(now)
"$BIN/accountctl" --socket "$work/sock" metrics >"$work/metrics.2"
second=$(since "$t0")
metric() { awk -v key="$1" 'index($0, key " ") == 1 {print $2}' "$work/metrics.2"; }
per() { echo "$1 / $ACCOUNTS / 1024" | bc -l; }
printf 'disk per account: file %.1f KiB, WAL %.1f KiB, snapshots %.1f KiB (%s in all), Litestream state %.1f KiB\n' \
    "$(per "$(metric 'accountd_disk_bytes{kind="file"}')")" "$(per "$(metric 'accountd_disk_bytes{kind="wal"}')")" \
    "$(per "$(metric 'accountd_disk_bytes{kind="snapshots"}')")" "$(metric accountd_snapshots_stored)" \
    "$(per "$(metric 'accountd_disk_bytes{kind="litestream"}')")"
printf 'metrics scrape: first %.3f s, next %.3f s | RSS after the scrapes %s MB\n' "$first" "$second" "$(rss_mb "$pid")"
grep '^accountd_accounts_by_state' "$work/metrics.2" | tr '\n' ' '; echo
v=$(sqlite3 "$work/data/accounts/u000001.sqlite" 'PRAGMA user_version')
w=$(sqlite3 "$work/loop/u000001.sqlite" 'PRAGMA user_version')
echo "check: accountd's u000001 at version $v, the loop's at $w"
