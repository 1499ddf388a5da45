#!/usr/bin/env bash
# Server benchmarks, each compared side by side in one run:
#   1. Ping and Status at 1 and 50 clients, against redis-server answering PING, and
#      Status over varlink beside the line protocol's;
#   2. Switch between two up-to-date accounts: round-trip p50 and p99;
#   3. jsonl export of a 1,000,000-row account, against `sqlite3 -json` on the same file;
#   4. daemon memory (RSS) idle and after touching 1,000 accounts;
#   5. Set at 32 clients with group commit, against one transaction per Set, and against
#      redis-server SET with appendfsync always (the durable peer, run in pairs with accountd);
#   6. Get at 50 clients, against redis-server GET.
#
#   bash bench/server.sh [SECONDS_PER_RUN]
#
# ACCOUNTD_BASELINE=DIR (a folder holding another build's accountd and accountctl) also
# measures that build, the baseline, beside this tree's release build: every measurement
# of accountd runs on both, one right after the other (baseline first in odd rounds, current
# first in even ones), BENCH_ROUNDS times (default 3), and a last table gives each figure's
# median per build and the ratio current / baseline. ACCOUNTD_BIN=DIR measures the build in
# DIR as the current one instead of building this tree (accountctl is needed for section 3 only).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-5}
ONLY=${BENCH_ONLY:-1 2 3 4 5 6}   # which sections to run, e.g. BENCH_ONLY="1 2"
REPEATS=${BENCH_REPEATS:-3}       # section 5: runs of each mode, whose median is reported
want() { [[ " $ONLY " == *" $1 "* ]]; }
bash scripts/install-deps.sh redis-server bc >/dev/null
if [ -z "${ACCOUNTD_BIN:-}" ]; then
    ACCOUNTD_BIN=$(bash scripts/release-build.sh)
fi
# The builds measured, and the folder of each one's binaries.
declare -A BIN=([current]="$(cd "$ACCOUNTD_BIN" && pwd)")
builds=(current)
ROUNDS=1
if [ -n "${ACCOUNTD_BASELINE:-}" ]; then
    tools=(accountd)
    if want 3; then tools+=(accountctl); fi
    for tool in "${tools[@]}"; do
        [ -x "$ACCOUNTD_BASELINE/$tool" ] || { echo "ACCOUNTD_BASELINE=$ACCOUNTD_BASELINE has no executable $tool: point it at the folder of the baseline build's accountd and accountctl" >&2; exit 2; }
    done
    BIN[baseline]=$(cd "$ACCOUNTD_BASELINE" && pwd)
    builds=(baseline current)
    ROUNDS=${BENCH_ROUNDS:-3}
fi
work=$(mktemp -d /tmp/accountd-bench.XXXXXX)
gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(redis-server --version | cut -d' ' -f3); sqlite $(sqlite3 --version | cut -d' ' -f1)"
if [ ${#builds[@]} -gt 1 ]; then
    echo "builds: baseline ${BIN[baseline]}, current ${BIN[current]}; $ROUNDS rounds, baseline first in odd rounds and current first in even ones"
fi

start_daemon() {  # start_daemon BUILD NAME [extra config lines]: BUILD's accountd in $work/NAME
    local bin=${BIN[$1]} name=$2; shift 2
    mkdir -p "$work/$name"
    printf '%s\n' "$@" > "$work/$name/config.yaml"
    "$bin/accountd" --config "$work/$name/config.yaml" --data-root "$work/$name/data" --socket "$work/$name/sock" \
        --schema config/schema --log-level warning 2>"$work/$name/log" &
    pids+=($!)
    daemon_pid=$!
    for _ in $(seq 100); do [ -S "$work/$name/sock" ] && break; sleep 0.05; done
    sleep 0.2
}
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
# Labels a line with its build when there are two; prints nothing otherwise.
tag() { if [ ${#builds[@]} -gt 1 ]; then printf '[%s] ' "$1"; fi; }
# figure BUILD NAME VALUE: one measurement, for the last table (printed when there are two builds).
figure() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$work/figures"; }
rounds() { seq "$ROUNDS"; }
# in_turn N: the builds in the order in which round N measures them; the order flips every
# round, so that neither build always runs right after the other.
in_turn() { if [ $(($1 % 2)) -eq 1 ]; then printf '%s\n' "${builds[@]}"; else printf '%s\n' "${builds[@]}" | tac; fi; }

# Redis on a Unix socket in the work folder, nothing on TCP.
redis-server --port 0 --unixsocket "$work/redis.sock" --save '' --appendonly no --daemonize no >/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/redis.sock" ] && break; sleep 0.05; done

# One daemon per build for sections 1, 2 and 4; the one not being measured is idle.
declare -A MAIN_PID
for b in "${builds[@]}"; do start_daemon "$b" "main-$b"; MAIN_PID[$b]=$daemon_pid; done
if want 1; then
echo
echo "== 1. Ping and Status, requests per second (closed loop, one request in flight per client)"
for clients in 1 50; do
    plural=s; [ $clients -gt 1 ] || plural=""
    for round in $(rounds); do
        redis=$(LOADGEN_CRLF=1 "$work/loadgen" "$work/redis.sock" $clients "$SECONDS_PER_RUN" 1 PING)
        r=$(echo "$redis" | field rps)
        for b in $(in_turn "$round"); do
            ping=$("$work/loadgen" "$work/main-$b/sock" $clients "$SECONDS_PER_RUN" 1 ping)
            status=$("$work/loadgen" "$work/main-$b/sock" $clients "$SECONDS_PER_RUN" 1 status)
            p=$(echo "$ping" | field rps); s=$(echo "$status" | field rps)
            printf '%s%2d clients: redis PING %8.0f/s | accountd Ping %8.0f/s (%.2fx) | Status %8.0f/s (%.2fx)\n' \
                "$(tag "$b")" $clients "$r" "$p" "$(echo "$p / $r" | bc -l)" "$s" "$(echo "$s / $r" | bc -l)"
            figure "$b" "Ping, $clients client$plural (/s)" "$p"
            figure "$b" "Status, $clients client$plural (/s)" "$s"
            # The same Status over varlink (NUL-terminated JSON, on the daemon's io.accountd
            # socket), for a build that serves one.
            if [ -S "$work/main-$b/io.accountd" ]; then
                varlink=$(LOADGEN_NUL=1 "$work/loadgen" "$work/main-$b/io.accountd" $clients "$SECONDS_PER_RUN" 1 '{"method":"io.accountd.Status"}')
                v=$(echo "$varlink" | field rps)
                printf '%s%2d clients: varlink Status %8.0f/s, %.2fx the line protocol'"'"'s Status (target >= 0.9x at 50)\n' \
                    "$(tag "$b")" $clients "$v" "$(echo "$v / $s" | bc -l)"
                figure "$b" "varlink Status, $clients client$plural (/s)" "$v"
            fi
        done
    done
done

fi

if want 2; then
echo
echo "== 2. Switch between two up-to-date accounts"
for b in "${builds[@]}"; do "$work/loadgen" "$work/main-$b/sock" 1 1 1 "switch alice" "switch bob" >/dev/null; done
for round in $(rounds); do
    for b in $(in_turn "$round"); do
        switch=$("$work/loadgen" "$work/main-$b/sock" 1 "$SECONDS_PER_RUN" 1 "switch alice" "switch bob")
        echo "$(tag "$b")switch round trip: p50 $(echo "$switch" | field p50_ms) ms, p99 $(echo "$switch" | field p99_ms) ms ($(echo "$switch" | field requests) switches)"
        figure "$b" "Switch p50 (ms)" "$(echo "$switch" | field p50_ms)"
        figure "$b" "Switch p99 (ms)" "$(echo "$switch" | field p99_ms)"
    done
done

fi

if want 4; then
echo
echo "== 4. Memory (RSS)"
for b in "${builds[@]}"; do
    pid=${MAIN_PID[$b]}
    idle_rss=$(rss_mb "$pid")
    requests=(); for i in $(seq 1 1000); do requests+=("switch user$i"); done
    "$work/loadgen" "$work/main-$b/sock" 1 600 1 "${requests[@]}" >/dev/null &
    lg=$!
    while [ "$(ls "$work/main-$b/data/accounts" | grep -c '^user.*sqlite$')" -lt 1000 ]; do sleep 0.2; done
    kill $lg 2>/dev/null || true; wait $lg 2>/dev/null || true
    "$work/loadgen" "$work/main-$b/sock" 4 2 1 status >/dev/null
    touched_rss=$(rss_mb "$pid")
    echo "$(tag "$b")RSS idle ${idle_rss} MB; after touching 1,000 accounts ${touched_rss} MB (target < 50 MB)"
    figure "$b" "RSS idle (MB)" "$idle_rss"
    figure "$b" "RSS after 1,000 accounts (MB)" "$touched_rss"
done

fi

if want 3; then
echo
echo "== 3. jsonl export of 1,000,000 rows"
mkdir -p "$work/big/migrations"
cat > "$work/big/migrations/0001_items.sql" <<'SQL'
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, price REAL, note TEXT);
SQL
for b in "${builds[@]}"; do kill "${MAIN_PID[$b]}"; wait "${MAIN_PID[$b]}" 2>/dev/null || true; done
# Each build creates its own account file, then serves it from its own daemon.
for b in "${builds[@]}"; do
    "${BIN[$b]}/accountd" migrate --create --data-root "$work/bigroot-$b" --schema "$work/big" big >/dev/null
    sqlite3 "$work/bigroot-$b/accounts/big.sqlite" >/dev/null <<'SQL'
PRAGMA synchronous = OFF;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000)
INSERT INTO item SELECT i, 'item ' || i, i % 1000, i * 0.25, CASE WHEN i % 5 = 0 THEN NULL ELSE hex(randomblob(8)) END FROM c;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
    # Each its own varlink socket too: beside --socket, both builds' would be $work/io.accountd.
    "${BIN[$b]}/accountd" --config /dev/null --data-root "$work/bigroot-$b" --socket "$work/big-$b.sock" \
        --varlink-socket "$work/big-$b.varlink" --schema "$work/big" --log-level warning 2>"$work/big-$b.log" &
    pids+=($!)
    for _ in $(seq 100); do [ -S "$work/big-$b.sock" ] && break; sleep 0.05; done
    [ -S "$work/big-$b.sock" ] || { echo "the $b build's daemon for the export did not start:" >&2; cat "$work/big-$b.log" >&2; exit 1; }
done
sleep 0.3
now() { date +%s.%N; }
min() { echo "if ($1 < $2) $1 else $2" | bc -l; }
declare -A best=([shell]=999)
for b in "${builds[@]}"; do best[$b]=999; done
for run in 1 2 3; do
    t0=$(now); sqlite3 -json "$work/bigroot-current/accounts/big.sqlite" 'SELECT * FROM item' > "$work/shell.json"; t1=$(now)
    s=$(echo "$t1 - $t0" | bc -l); best[shell]=$(min "$s" "${best[shell]}")
    line=$(printf 'run %d: sqlite3 -json %.2f s' $run "$s")
    for b in $(in_turn "$run"); do
        t1=$(now); "${BIN[$b]}/accountctl" --socket "$work/big-$b.sock" export big --format jsonl -o "$work/export-$b.jsonl" 2>/dev/null; t2=$(now)
        o=$(echo "$t2 - $t1" | bc -l); best[$b]=$(min "$o" "${best[$b]}")
        line+=$(printf ' | %saccountctl export jsonl %.2f s' "$(tag "$b")" "$o")
    done
    echo "$line"
done
for b in "${builds[@]}"; do
    printf '%sbest: sqlite3 -json %.2f s, accountd %.2f s: %.2fx (target <= 1.2x); %s rows written\n' "$(tag "$b")" "${best[shell]}" "${best[$b]}" \
        "$(echo "${best[$b]} / ${best[shell]}" | bc -l)" "$(wc -l < "$work/export-$b.jsonl")"
    figure "$b" "jsonl export of 1,000,000 rows, best of 3 (s)" "$(printf '%.3f' "${best[$b]}")"
done

fi

if want 5; then
echo
echo "== 5. Set at 32 clients: group commit against one transaction per Set (median of $REPEATS runs each, alternating)"
gcc -O2 -shared -fPIC -o "$work/slowsync.so" bench/slowsync.c -ldl
sets() {  # sets BUILD NAME REQUEST... : Sets/s and p50 of 32 clients on a new daemon NAME (config from $extra)
    local build=$1 name=$2; shift 2
    start_daemon "$build" "$name" ${extra:+"$extra"}
    "$work/loadgen" "$work/$name/sock" 1 1 1 "switch alice" >/dev/null
    "$work/loadgen" "$work/$name/sock" 32 "$SECONDS_PER_RUN" 1 "$@"
    kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
}
report() {  # report LABEL GROUPED SINGLE
    printf '%s: group commit %.0f Sets/s (p50 %s ms) | one transaction per Set %.0f Sets/s (p50 %s ms): %.1fx\n' \
        "$1" "$(echo "$2" | field rps)" "$(echo "$2" | field p50_ms)" "$(echo "$3" | field rps)" "$(echo "$3" | field p50_ms)" \
        "$(echo "$(echo "$2" | field rps) / $(echo "$3" | field rps)" | bc -l)"
}
median_of() {  # median_of OUTPUTS: of loadgen's output lines, the one whose rps is the median
    echo "$1" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rps=/) { split($i, kv, "="); print kv[2], $0 } }' \
        | sort -n | awk '{ lines[NR] = $0 } END { line = lines[int((NR + 1) / 2)]; sub(/^[^ ]* /, "", line); print line }'
}
measure() {  # measure TAG REQUEST...: group commit and one transaction per Set, alternately, REPEATS times each, on every build
    local tag=$1; shift
    local b i
    declare -gA grouped single
    declare -A g s
    for i in $(seq "$REPEATS"); do
        for b in $(in_turn "$i"); do extra=""; g[$b]+="$(sets "$b" "$tag-$b-g$i" "$@")"$'\n'; done
        for b in $(in_turn "$i"); do extra="preferences: { groupCommit: false }"; s[$b]+="$(sets "$b" "$tag-$b-s$i" "$@")"$'\n'; done
    done
    for b in "${builds[@]}"; do grouped[$b]=$(median_of "${g[$b]}"); single[$b]=$(median_of "${s[$b]}"); done
}
declare -A one_file_single
compare() {  # compare TAG DISK: both workloads, each with and without group commit
    local tag=$1 disk=$2 b
    # All 32 clients write to one file (the active account's preferences).
    measure "$tag-one" 'set user theme "dark"'
    for b in "${builds[@]}"; do
        report "$(tag "$b")$disk, 32 clients on one file (target >= 10x)" "${grouped[$b]}" "${single[$b]}"
        one_file_single[$b]=$(echo "${single[$b]}" | field rps)
        figure "$b" "Set, $disk, one file, group commit (/s)" "$(echo "${grouped[$b]}" | field rps)"
        figure "$b" "Set, $disk, one file, one transaction per Set (/s)" "${one_file_single[$b]}"
    done
    # Each client alternates between two files (the account's, then device.sqlite), so each
    # file's batches hold about half the clients.
    measure "$tag-two" 'set user theme "dark"' 'set switch beta {"on":true}'
    for b in "${builds[@]}"; do
        report "$(tag "$b")$disk, 32 clients alternating two files" "${grouped[$b]}" "${single[$b]}"
        figure "$b" "Set, $disk, two files, group commit (/s)" "$(echo "${grouped[$b]}" | field rps)"
        figure "$b" "Set, $disk, two files, one transaction per Set (/s)" "$(echo "${single[$b]}" | field rps)"
    done
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
# The durable peer: Redis answering SET only after its append-only file is fsynced
# (appendonly yes, appendfsync always), which shares one fsync among the clients served in
# one event-loop turn, against accountd's group commit on one file, 32 clients each. The
# host's speed drifts by more than the difference measured, so the two run in pairs, each
# accountd run right before (or, every other pair, right after) a Redis run, and the ratio
# reported is the median of the pairs' ratios.
mkdir -p "$work/redis-aof"
redis-server --port 0 --unixsocket "$work/redis-aof.sock" --save '' --appendonly yes --appendfsync always \
    --dir "$work/redis-aof" --daemonize no >/dev/null &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/redis-aof.sock" ] && break; sleep 0.05; done
aof_set() { LOADGEN_CRLF=1 "$work/loadgen" "$work/redis-aof.sock" 32 "$SECONDS_PER_RUN" 1 'SET theme dark' | field rps; }
ours_set() { extra=""; sets "$1" "durable-$1-$2" 'set user theme "dark"' | field rps; }  # ours_set BUILD PAIR
for b in "${builds[@]}"; do
    ratios="" ours_runs="" aof_runs=""
    for i in $(seq "$REPEATS"); do
        if [ $((i % 2)) -eq 1 ]; then
            ours=$(ours_set "$b" "$i"); aof=$(aof_set)
        else
            aof=$(aof_set); ours=$(ours_set "$b" "$i")
        fi
        ours_runs+="$ours "; aof_runs+="$aof "
        ratios+="$(echo "$ours / $aof" | bc -l)"$'\n'
    done
    ratio=$(echo "$ratios" | sed '/^$/d' | sort -n | awk '{ r[NR] = $1 } END { print r[int((NR + 1) / 2)] }')
    printf '%sdurable Set, 32 clients, in pairs: accountd group commit %s/s | redis SET, appendfsync always %s/s | median of the pairs'"'"' ratios %.2fx (target >= 0.8x)\n' \
        "$(tag "$b")" "$(echo $ours_runs | tr ' ' '/')" "$(echo $aof_runs | tr ' ' '/')" "$ratio"
    figure "$b" "durable Set, 32 clients: accountd / redis appendfsync always, median of pairs" "$(printf '%.2f' "$ratio")"
done
# For scale: the same 32 clients sending Ping, which does no work at all, on the same build.
for b in "${builds[@]}"; do
    extra=""; ping=$(sets "$b" "fast-ping-$b" ping)
    printf '%sfor scale, Ping at 32 clients: %.0f/s; 10x one transaction per Set would be %.0f Sets/s, %.0f%% of that\n' "$(tag "$b")" \
        "$(echo "$ping" | field rps)" "$(echo "10 * ${one_file_single[$b]}" | bc -l)" "$(echo "1000 * ${one_file_single[$b]} / $(echo "$ping" | field rps)" | bc -l)"
    figure "$b" "Ping, 32 clients, for scale (/s)" "$(echo "$ping" | field rps)"
done
# The same on a simulated disk whose flush takes 2 ms (bench/slowsync.c).
export LD_PRELOAD="$work/slowsync.so" SLOWSYNC_US=2000
compare slow "2 ms flush"
unset LD_PRELOAD SLOWSYNC_US

fi

if want 6; then
echo
echo "== 6. Get at 50 clients, against redis-server GET"
redis-cli -s "$work/redis.sock" SET theme dark >/dev/null
for b in "${builds[@]}"; do
    start_daemon "$b" "reads-$b"
    "$work/loadgen" "$work/reads-$b/sock" 1 1 1 "switch alice" 'set user theme "dark"' >/dev/null
done
for round in $(rounds); do
    redis=$(LOADGEN_CRLF=1 "$work/loadgen" "$work/redis.sock" 50 "$SECONDS_PER_RUN" 2 "GET theme")
    r=$(echo "$redis" | field rps)
    for b in $(in_turn "$round"); do
        ours=$("$work/loadgen" "$work/reads-$b/sock" 50 "$SECONDS_PER_RUN" 1 "get user theme")
        a=$(echo "$ours" | field rps)
        printf '%sredis GET %.0f/s | accountd Get %.0f/s: %.2fx (target >= 0.5x); errors: %s\n' "$(tag "$b")" "$r" "$a" "$(echo "$a / $r" | bc -l)" "$(echo "$ours" | field errors)"
        figure "$b" "Get, 50 clients (/s)" "$a"
    done
done
fi

if [ ${#builds[@]} -gt 1 ]; then
echo
echo "== Baseline and current: median of each figure's measurements, and current / baseline"
echo "   (for /s, above 1 means the current build is faster; for ms, s and MB, below 1 means it is faster or smaller)"
awk -F'\t' '
    !($2 in seen) { seen[$2] = 1; names[++n] = $2 }
    { count[$1, $2]++; values[$1, $2, count[$1, $2]] = $3 }
    function median(b, name,    k, i, j, t, v) {
        k = count[b, name]
        for (i = 1; i <= k; i++) v[i] = values[b, name, i]
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
        printf "%-52s %12s %12s %8s\n", "figure", "baseline", "current", "ratio"
        for (i = 1; i <= n; i++) {
            base = median("baseline", names[i]); cur = median("current", names[i])
            printf "%-52s %12.6g %12.6g %7.2fx\n", names[i], base, cur, base == 0 ? 0 : cur / base
        }
    }' "$work/figures"
fi
