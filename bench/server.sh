#!/usr/bin/env bash
# Server benchmarks, each compared side by side in one run:
#   1. Ping and Status at 1 and 50 clients, against redis-server answering PING, and
#      Status over varlink beside the line protocol's;
#   2. Switch between two up-to-date accounts: round-trip p50 and p99;
#   3. jsonl export of a 1,000,000-row account, against `sqlite3 -json` on the same file;
#   4. daemon memory (RSS) idle and after touching 1,000 accounts;
#   5. Set at 32 clients with group commit, against one transaction per Set;
#   6. Get at 50 clients, against redis-server GET.
#
#   bash bench/server.sh [SECONDS_PER_RUN]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-5}
ONLY=${BENCH_ONLY:-1 2 3 4 5 6}   # which sections to run, e.g. BENCH_ONLY="1 2"
REPEATS=${BENCH_REPEATS:-3}       # section 5: runs of each mode, whose median is reported
want() { [[ " $ONLY " == *" $1 "* ]]; }
bash scripts/install-deps.sh redis-server bc >/dev/null
swift build -c release >/dev/null
BIN=$(swift build -c release --show-bin-path)
work=$(mktemp -d /tmp/accountd-bench.XXXXXX)
gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(redis-server --version | cut -d' ' -f3); sqlite $(sqlite3 --version | cut -d' ' -f1)"

start_daemon() {  # start_daemon NAME [extra config lines]
    local name=$1; shift
    mkdir -p "$work/$name"
    printf '%s\n' "$@" > "$work/$name/config.yaml"
    "$BIN/accountd" --config "$work/$name/config.yaml" --data-root "$work/$name/data" --socket "$work/$name/sock" \
        --schema config/schema --log-level warning 2>"$work/$name/log" &
    pids+=($!)
    daemon_pid=$!
    for _ in $(seq 100); do [ -S "$work/$name/sock" ] && break; sleep 0.05; done
    sleep 0.2
}
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }

# Redis on a Unix socket in the work folder, nothing on TCP.
redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no --daemonize no >/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.05; done

start_daemon main
SOCK="$work/main/sock"
if want 1; then
echo
echo "== 1. Ping and Status, requests per second (closed loop, one request in flight per client)"
for clients in 1 50; do
    redis=$(LOADGEN_CRLF=1 "$work/loadgen" "$work/redis.sock" $clients "$SECONDS_PER_RUN" 1 PING)
    ping=$("$work/loadgen" "$SOCK" $clients "$SECONDS_PER_RUN" 1 ping)
    status=$("$work/loadgen" "$SOCK" $clients "$SECONDS_PER_RUN" 1 status)
    r=$(echo "$redis" | field rps); p=$(echo "$ping" | field rps); s=$(echo "$status" | field rps)
    printf '%2d clients: redis PING %8.0f/s | accountd Ping %8.0f/s (%.2fx) | Status %8.0f/s (%.2fx)\n' \
        $clients "$r" "$p" "$(echo "$p / $r" | bc -l)" "$s" "$(echo "$s / $r" | bc -l)"
    # The same Status over varlink (NUL-terminated JSON, on the daemon's io.accountd socket).
    varlink=$(LOADGEN_NUL=1 "$work/loadgen" "$work/main/io.accountd" $clients "$SECONDS_PER_RUN" 1 '{"method":"io.accountd.Status"}')
    v=$(echo "$varlink" | field rps)
    printf '%2d clients: varlink Status %8.0f/s, %.2fx the line protocol'"'"'s Status (target >= 0.9x at 50)\n' \
        $clients "$v" "$(echo "$v / $s" | bc -l)"
done

fi

if want 2; then
echo
echo "== 2. Switch between two up-to-date accounts"
"$work/loadgen" "$SOCK" 1 1 1 "switch alice" "switch bob" >/dev/null
switch=$("$work/loadgen" "$SOCK" 1 "$SECONDS_PER_RUN" 1 "switch alice" "switch bob")
echo "switch round trip: p50 $(echo "$switch" | field p50_ms) ms, p99 $(echo "$switch" | field p99_ms) ms ($(echo "$switch" | field requests) switches)"

fi

if want 4; then
echo
echo "== 4. Memory (RSS)"
idle_rss=$(rss_mb "$daemon_pid")
requests=(); for i in $(seq 1 1000); do requests+=("switch user$i"); done
"$work/loadgen" "$SOCK" 1 600 1 "${requests[@]}" >/dev/null &
lg=$!
while [ "$(ls "$work/main/data/accounts" | grep -c '^user.*sqlite$')" -lt 1000 ]; do sleep 0.2; done
kill $lg 2>/dev/null || true; wait $lg 2>/dev/null || true
"$work/loadgen" "$SOCK" 4 2 1 status >/dev/null
echo "RSS idle ${idle_rss} MB; after touching 1,000 accounts $(rss_mb "$daemon_pid") MB (target < 50 MB)"

fi

if want 3; then
echo
echo "== 3. jsonl export of 1,000,000 rows"
mkdir -p "$work/big/migrations"
cat > "$work/big/migrations/0001_items.sql" <<'SQL'
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, price REAL, note TEXT);
SQL
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
"$BIN/accountd" migrate --create --data-root "$work/bigroot" --schema "$work/big" big >/dev/null
sqlite3 "$work/bigroot/accounts/big.sqlite" >/dev/null <<'SQL'
PRAGMA synchronous = OFF;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000)
INSERT INTO item SELECT i, 'item ' || i, i % 1000, i * 0.25, CASE WHEN i % 5 = 0 THEN NULL ELSE hex(randomblob(8)) END FROM c;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
"$BIN/accountd" --config /dev/null --data-root "$work/bigroot" --socket "$work/big.sock" --schema "$work/big" --log-level warning 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/big.sock" ] && break; sleep 0.05; done
sleep 0.3
now() { date +%s.%N; }
best_shell=999; best_ours=999
for run in 1 2 3; do
    t0=$(now); sqlite3 -json "$work/bigroot/accounts/big.sqlite" 'SELECT * FROM item' > "$work/shell.json"; t1=$(now)
    "$BIN/accountctl" --socket "$work/big.sock" export big --format jsonl -o "$work/export.jsonl" 2>/dev/null; t2=$(now)
    s=$(echo "$t1 - $t0" | bc -l); o=$(echo "$t2 - $t1" | bc -l)
    best_shell=$(echo "if ($s < $best_shell) $s else $best_shell" | bc -l); best_ours=$(echo "if ($o < $best_ours) $o else $best_ours" | bc -l)
    printf 'run %d: sqlite3 -json %.2f s | accountctl export jsonl %.2f s\n' $run "$s" "$o"
done
printf 'best: sqlite3 -json %.2f s, accountd %.2f s: %.2fx (target <= 1.2x); %s rows written\n' "$best_shell" "$best_ours" \
    "$(echo "$best_ours / $best_shell" | bc -l)" "$(wc -l < "$work/export.jsonl")"

fi

if want 5; then
echo
echo "== 5. Set at 32 clients: group commit against one transaction per Set (median of $REPEATS runs each, alternating)"
gcc -O2 -shared -fPIC -o "$work/slowsync.so" bench/slowsync.c -ldl
sets() {  # sets NAME REQUEST... : Sets/s and p50 of 32 clients on a new daemon NAME (config from $extra)
    local name=$1; shift
    start_daemon "$name" ${extra:+"$extra"}
    "$work/loadgen" "$work/$name/sock" 1 1 1 "switch alice" >/dev/null
    "$work/loadgen" "$work/$name/sock" 32 "$SECONDS_PER_RUN" 1 "$@"
    kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
}
report() {  # report LABEL GROUPED SINGLE
    printf '%s: group commit %.0f Sets/s (p50 %s ms) | one transaction per Set %.0f Sets/s (p50 %s ms): %.1fx\n' \
        "$1" "$(echo "$2" | field rps)" "$(echo "$2" | field p50_ms)" "$(echo "$3" | field rps)" "$(echo "$3" | field p50_ms)" \
        "$(echo "$(echo "$2" | field rps) / $(echo "$3" | field rps)" | bc -l)"
}
median_of() {  # median_of OUTPUT...: the loadgen output whose rps is the median
    printf '%s\n' "$@" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rps=/) { split($i, kv, "="); print kv[2], $0 } }' \
        | sort -n | awk '{ lines[NR] = $0 } END { line = lines[int((NR + 1) / 2)]; sub(/^[^ ]* /, "", line); print line }'
}
measure() {  # measure TAG REQUEST...: group commit and one transaction per Set, alternately, REPEATS times each
    local tag=$1; shift
    local g=() s=() i
    for i in $(seq "$REPEATS"); do
        extra=""; g+=("$(sets "$tag-g$i" "$@")")
        extra="preferences: { groupCommit: false }"; s+=("$(sets "$tag-s$i" "$@")")
    done
    grouped=$(median_of "${g[@]}"); single=$(median_of "${s[@]}")
}
compare() {  # compare TAG DISK: both workloads, each with and without group commit
    local tag=$1 disk=$2
    # All 32 clients write to one file (the active account's preferences).
    measure "$tag-one" 'set user theme "dark"'
    report "$disk, 32 clients on one file (target >= 10x)" "$grouped" "$single"
    one_file_single=$(echo "$single" | field rps)
    # Each client alternates between two files (the account's, then device.sqlite), so each
    # file's batches hold about half the clients.
    measure "$tag-two" 'set user theme "dark"' 'set switch beta {"on":true}'
    report "$disk, 32 clients alternating two files" "$grouped" "$single"
}
fsync_ms=$(python3 - "$work" <<'PY'
import os, sys, time
path = os.path.join(sys.argv[1], "fsync-probe")
fd = os.open(path, os.O_CREAT | os.O_WRONLY)
os.write(fd, b"\0" * 65536); os.fsync(fd)
times = []
for i in range(500):
    os.pwrite(fd, b"x" * 4096, (i % 16) * 4096)
    t = time.perf_counter(); os.fdatasync(fd); times.append(time.perf_counter() - t)
times.sort(); print("%.3f" % (times[len(times) // 2] * 1000))
PY
)
echo "this disk: fdatasync of a 4 KiB overwrite, p50 ${fsync_ms} ms (the cost one transaction per Set pays every time)"
compare fast "this disk"
# For scale: the same 32 clients sending Ping, which does no work at all, on the same build.
extra=""; ping=$(sets fast-ping ping)
printf 'for scale, Ping at 32 clients: %.0f/s; 10x one transaction per Set would be %.0f Sets/s, %.0f%% of that\n' \
    "$(echo "$ping" | field rps)" "$(echo "10 * $one_file_single" | bc -l)" "$(echo "1000 * $one_file_single / $(echo "$ping" | field rps)" | bc -l)"
# The same on a simulated disk whose flush takes 2 ms (bench/slowsync.c).
export LD_PRELOAD="$work/slowsync.so" SLOWSYNC_US=2000
compare slow "2 ms flush"
unset LD_PRELOAD SLOWSYNC_US

fi

if want 6; then
echo
echo "== 6. Get at 50 clients, against redis-server GET"
start_daemon reads
redis-cli -s "$work/redis.sock" SET theme dark >/dev/null
redis=$(LOADGEN_CRLF=1 "$work/loadgen" "$work/redis.sock" 50 "$SECONDS_PER_RUN" 2 "GET theme")
"$work/loadgen" "$work/reads/sock" 1 1 1 "switch alice" 'set user theme "dark"' >/dev/null
ours=$("$work/loadgen" "$work/reads/sock" 50 "$SECONDS_PER_RUN" 1 "get user theme")
r=$(echo "$redis" | field rps); a=$(echo "$ours" | field rps)
printf 'redis GET %.0f/s | accountd Get %.0f/s: %.2fx (target >= 0.5x); errors: %s\n' "$r" "$a" "$(echo "$a / $r" | bc -l)" "$(echo "$ours" | field errors)"
fi
