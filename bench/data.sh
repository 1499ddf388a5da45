#!/usr/bin/env bash
# Benchmarks of an app's statements (Query, Execute), each against its peer in the same run:
#   1. point SELECT by primary key, 50 clients: accountd `Query` against `pgbench -S`
#      (scale 1) on PostgreSQL 15 over its Unix socket;
#   2. one-row durable INSERT, 32 clients: accountd `Execute` against pgbench running a
#      one-INSERT script;
#   3. a 1,000,000-row `Query` streamed to a client, against `sqlite3 -json` on the same file;
#   4. the daemon's RSS idle and after each of 10,000 accounts was queried once;
#   5. `Status {account}` at 50 clients, beside the daemon's own `Status` (issue 32).
#
#   bash bench/data.sh [SECONDS_PER_RUN] [ROUNDS]      (defaults 5 and 3)
#
# PostgreSQL is started by this script in a temporary folder, on a Unix socket only, with
# its default settings (fsync and synchronous_commit on), as user nobody (it refuses root).
# accountd and PostgreSQL are measured in turns, ROUNDS times (accountd first in odd
# rounds), and the ratio reported is the median of the rounds' ratios. Both are driven by
# 50 (or 32) clients, one request in flight each. pgbench runs its clients on 2 threads
# (-j 2); for the point SELECT, bench/loadgen.c does the same (LOADGEN_THREADS=2: its 50
# connections multiplexed with epoll on 2 threads), so that on a 2-core machine neither
# side pays for 50 client threads. The other sections still run one loadgen thread per client.
#
# BENCH_ONLY="1 3" runs only some sections; ACCOUNTD_BIN=DIR measures the accountd in DIR
# instead of this tree's release build. The figures go into docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-5}
ROUNDS=${2:-3}
ONLY=${BENCH_ONLY:-1 2 3 4 5}
want() { [[ " $ONLY " == *" $1 "* ]]; }
PG=/usr/lib/postgresql/15/bin
[ -x "$PG/postgres" ] || { echo "PostgreSQL 15 is not installed at $PG: apt-get install postgresql-15" >&2; exit 2; }
bash scripts/install-deps.sh sqlite3 bc >/dev/null
if [ -n "${ACCOUNTD_BIN:-}" ]; then
    BIN=$(cd "$ACCOUNTD_BIN" && pwd)   # another build's accountd, measured instead of this tree's
else
    BIN=$(bash scripts/release-build.sh --product accountd)
fi
work=$(mktemp -d /tmp/accountd-bench-data.XXXXXX)
chmod 755 "$work"
gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
pids=()
pg_started=""
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
cleanup() {
    [ -z "$pg_started" ] || as_nobody "$PG/pg_ctl" -D "$work/pg/data" -m immediate stop >/dev/null 2>&1 || true
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $("$PG/postgres" --version); sqlite $(sqlite3 --version | cut -d' ' -f1); $(df -T "$work" | awk 'NR == 2 {print $2}') at $work; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# The bundle: pgbench's two tables, and a wide one for the streamed Query.
mkdir -p "$work/bundle/migrations"
cat > "$work/bundle/migrations/0001_bench.sql" <<'SQL'
CREATE TABLE accounts (aid INTEGER PRIMARY KEY, bid INTEGER, abalance INTEGER, filler TEXT);
CREATE TABLE history (tid INTEGER, bid INTEGER, aid INTEGER, delta INTEGER, mtime TEXT, filler TEXT);
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, price REAL, note TEXT);
SQL
# accountd's account "bench": pgbench_accounts at scale 1 (100,000 rows, an 84-character filler).
"$BIN/accountd" migrate --create --data-root "$work/data" --schema "$work/bundle" bench >/dev/null
sqlite3 "$work/data/accounts/bench.sqlite" >/dev/null <<'SQL'
PRAGMA synchronous = OFF;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
INSERT INTO accounts SELECT i, 1, 0, printf('%84s', '') FROM c;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
# accountd's account "big" for section 3: 1,000,000 rows of five columns.
if want 3; then
    "$BIN/accountd" migrate --create --data-root "$work/data" --schema "$work/bundle" big >/dev/null
    sqlite3 "$work/data/accounts/big.sqlite" >/dev/null <<'SQL'
PRAGMA synchronous = OFF;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000000)
INSERT INTO item SELECT i, 'item ' || i, i % 1000, i * 0.25, CASE WHEN i % 5 = 0 THEN NULL ELSE hex(randomblob(8)) END FROM c;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
fi
cat > "$work/config.yaml" <<'YAML'
limits:
  queryTimeoutMs: 600000
YAML
start_daemon() {  # start_daemon DATA_ROOT SOCKET: the release accountd, its pid in $daemon_pid
    "$BIN/accountd" --config "$work/config.yaml" --data-root "$1" --socket "$2" --schema "$work/bundle" --log-level warning 2>>"$work/daemon.log" &
    daemon_pid=$!
    pids+=("$daemon_pid")
    for _ in $(seq 200); do [ -S "$2" ] && break; sleep 0.05; done
    sleep 0.2
}
start_daemon "$work/data" "$work/sock"
main_pid=$daemon_pid

# PostgreSQL 15: a cluster in $work/pg as nobody, listening on a Unix socket only.
if want 1 || want 2; then
    mkdir -p "$work/pg"
    chown nobody: "$work/pg"
    as_nobody "$PG/initdb" -D "$work/pg/data" -U postgres -A trust >/dev/null
    as_nobody "$PG/pg_ctl" -D "$work/pg/data" -l "$work/pg/log" -w \
        -o "-k $work/pg -c listen_addresses=''" start >/dev/null
    pg_started=1
    pgbench() { "$PG/pgbench" -h "$work/pg" -U postgres "$@" postgres; }
    pgbench -i -s 1 -q >/dev/null 2>&1
    echo "PostgreSQL: $("$PG/psql" -h "$work/pg" -U postgres -Atc "SELECT 'fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit') || ', shared_buffers=' || current_setting('shared_buffers')" postgres)"
    tps() { sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
fi

# compare LABEL CLIENTS PEER_COMMAND ACCOUNTD_LOADGEN_ARGS...: ROUNDS rounds of both in turn.
compare() {
    local label=$1 clients=$2 peer=$3; shift 3
    local ratios="" ours_runs="" peer_runs="" round ours theirs
    for round in $(seq "$ROUNDS"); do
        if [ $((round % 2)) -eq 1 ]; then
            ours=$("$@" | field rps); theirs=$(eval "$peer" | tps)
        else
            theirs=$(eval "$peer" | tps); ours=$("$@" | field rps)
        fi
        printf '  round %d: accountd %.0f/s | PostgreSQL %.0f/s | %.2fx\n' "$round" "$ours" "$theirs" "$(echo "$ours / $theirs" | bc -l)"
        ours_runs+="$ours "; peer_runs+="$theirs "
        ratios+="$(echo "$ours / $theirs" | bc -l)"$'\n'
    done
    printf '%s, %d clients: accountd %s/s | pgbench %s/s | median of the rounds'"'"' ratios %.2fx\n' "$label" "$clients" \
        "$(echo $ours_runs | tr ' ' '/')" "$(printf '%.0f/' $peer_runs | sed 's/\/$//')" "$(echo "$ratios" | sed '/^$/d' | median)"
}

if want 1; then
    echo
    echo "== 1. point SELECT by primary key, 50 clients (target >= 1.0x pgbench -S; aim 2x)"
    select='{"method":"io.accountd.Query","parameters":{"account":"bench","sql":"SELECT abalance FROM accounts WHERE aid = ?","parameters":[@R@]}}'
    LOADGEN_RANDOM=100000 "$work/loadgen" "$work/sock" 1 1 1 "$select" >/dev/null
    export LOADGEN_RANDOM=100000 LOADGEN_THREADS=2
    compare "point SELECT" 50 "pgbench -S -n -c 50 -j 2 -T $SECONDS_PER_RUN 2>/dev/null" \
        "$work/loadgen" "$work/sock" 50 "$SECONDS_PER_RUN" 1 "$select"
    unset LOADGEN_RANDOM LOADGEN_THREADS
fi

if want 2; then
    echo
    echo "== 2. one-row durable INSERT, 32 clients (target >= 1.0x pgbench with a one-INSERT script)"
    cat > "$work/insert.sql" <<'SQL'
\set aid random(1, 100000)
\set bid random(1, 1)
\set tid random(1, 10)
\set delta random(-5000, 5000)
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
SQL
    insert='{"method":"io.accountd.Execute","parameters":{"account":"bench","statements":[{"sql":"INSERT INTO history (tid, bid, aid, delta, mtime) VALUES (?, 1, ?, ?, CURRENT_TIMESTAMP)","parameters":[@R@,@R@,@R@]}]}}'
    export LOADGEN_RANDOM=10
    compare "one-row INSERT" 32 "pgbench -n -f $work/insert.sql -c 32 -j 2 -T $SECONDS_PER_RUN 2>/dev/null" \
        "$work/loadgen" "$work/sock" 32 "$SECONDS_PER_RUN" 1 "$insert"
    unset LOADGEN_RANDOM
    echo "  rows inserted by accountd: $(sqlite3 "$work/data/accounts/bench.sqlite" 'SELECT count(*) FROM history')"
fi

if want 3; then
    echo
    echo "== 3. 1,000,000 rows streamed (Query with more) against sqlite3 -json on the same file (target <= 1.2x the time)"
    stream='{"method":"io.accountd.Query","parameters":{"account":"big","sql":"SELECT * FROM item"},"more":true}'
    now() { date +%s.%N; }
    shell_runs="" ours_runs=""
    for run in $(seq "$ROUNDS"); do
        ours() { LOADGEN_STREAM=1 LOADGEN_TOTAL=1 "$work/loadgen" "$work/sock" 1 600 1 "$stream" 2>"$work/stream.last" | field p50_ms; }
        shell() { local t0; t0=$(now); sqlite3 -json "$work/data/accounts/big.sqlite" 'SELECT * FROM item' > /dev/null; echo "($(now) - $t0) * 1000" | bc -l; }
        if [ $((run % 2)) -eq 1 ]; then o=$(ours); s=$(shell); else s=$(shell); o=$(ours); fi
        printf '  run %d: sqlite3 -json %.0f ms | accountd Query %.0f ms | %.2fx; %s\n' "$run" "$s" "$o" "$(echo "$o / $s" | bc -l)" "$(cat "$work/stream.last")"
        shell_runs+="$s"$'\n'; ours_runs+="$o"$'\n'
    done
    s=$(echo "$shell_runs" | sed '/^$/d' | sort -n | head -1); o=$(echo "$ours_runs" | sed '/^$/d' | sort -n | head -1)
    printf '1,000,000 rows, best of %d: sqlite3 -json %.0f ms | accountd Query %.0f ms | %.2fx\n' "$ROUNDS" "$s" "$o" "$(echo "$o / $s" | bc -l)"
fi

if want 5; then
    echo
    echo "== 5. Status {account} at 50 clients (target >= 15,000/s), beside the daemon's Status"
    for round in $(seq "$ROUNDS"); do
        d=$("$work/loadgen" "$work/sock" 50 "$SECONDS_PER_RUN" 1 status)
        a=$("$work/loadgen" "$work/sock" 50 "$SECONDS_PER_RUN" 1 "status bench")
        printf '  round %d: Status %.0f/s (p50 %s ms) | Status {account} %.0f/s (p50 %s ms, errors %s)\n' "$round" \
            "$(echo "$d" | field rps)" "$(echo "$d" | field p50_ms)" "$(echo "$a" | field rps)" "$(echo "$a" | field p50_ms)" "$(echo "$a" | field errors)"
    done
fi

if want 4; then
    echo
    echo "== 4. RSS with 10,000 accounts each queried once, against idle (target <= +20 MB)"
    kill "$main_pid"; wait "$main_pid" 2>/dev/null || true
    "$BIN/accountd" migrate --create --data-root "$work/seed" --schema "$work/bundle" template >/dev/null
    python3 bench/fleet.py make "$work/seed/accounts/template.sqlite" "$work/fleet/accounts" 10000
    start_daemon "$work/fleet" "$work/fleet.sock"
    "$work/loadgen" "$work/fleet.sock" 1 1 1 ping >/dev/null
    sleep 1
    idle=$(rss_mb "$daemon_pid")
    out=$(LOADGEN_TOTAL=10000 "$work/loadgen" "$work/fleet.sock" 4 600 1 \
        '{"method":"io.accountd.Query","parameters":{"account":"u@S@","sql":"SELECT count(*) FROM accounts"}}')
    sleep 1
    touched=$(rss_mb "$daemon_pid")
    printf 'RSS idle %s MB; after 10,000 accounts each queried once %s MB: %+.1f MB (%s queries, %s errors, %.0f/s)\n' "$idle" "$touched" \
        "$(echo "$touched - $idle" | bc -l)" "$(echo "$out" | field requests)" "$(echo "$out" | field errors)" "$(echo "$out" | field rps)"
fi
