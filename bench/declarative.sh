#!/usr/bin/env bash
# Benchmark: a declarative bundle's planned table rebuild of a 1,000,000-row account,
# beside the sqlite3 shell running the hand-written rebuild for the same change on a copy
# of the same file, in one run; then the time to plan a 100-table schema.
#
#   bash bench/declarative.sh [ROWS] [RUNS]
#
# Prints one line per run and a summary with the ratio. The figures go into docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
RUNS=${2:-3}
BIN=$(bash scripts/release-build.sh --product accountd)
work=$(mktemp -d /tmp/accountd-bench-declarative.XXXXXX)
trap 'rm -rf "$work"' EXIT

# Version 1, and version 2 as a declarative schema.sql: qty becomes NOT NULL DEFAULT 0 with a
# CHECK, and a label column with its index appears: a change ALTER TABLE cannot make, so a rebuild.
mkdir -p "$work/b1" "$work/b2"
cat > "$work/b1/schema.sql" <<'SQL'
-- accountd: declarative version 1
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, note TEXT);
CREATE INDEX item_name ON item(name);
SQL
cat > "$work/b2/schema.sql" <<'SQL'
-- accountd: declarative version 2
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0 CHECK (qty >= 0), note TEXT, label TEXT);
CREATE INDEX item_name ON item(name);
CREATE INDEX item_label ON item(label);
SQL
# The same change written by hand, as an app would write it for a chain.
cat > "$work/by-hand.sql" <<'SQL'
CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0 CHECK (qty >= 0), note TEXT, label TEXT);
INSERT INTO item_new (id, name, qty, note) SELECT id, name, coalesce(qty, 0), note FROM item;
DROP TABLE item;
ALTER TABLE item_new RENAME TO item;
CREATE INDEX item_name ON item(name);
CREATE INDEX item_label ON item(label);
SQL

"$BIN/accountd" migrate --create --data-root "$work/seed" --schema "$work/b1" bench >/dev/null
sqlite3 "$work/seed/accounts/bench.sqlite" >/dev/null <<SQL
PRAGMA synchronous = OFF;
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $ROWS)
INSERT INTO item (id, name, qty, note) SELECT i, 'item ' || i, CASE WHEN i % 7 = 0 THEN NULL ELSE i % 1000 END, hex(randomblob(16)) FROM c;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
size=$(stat -c %s "$work/seed/accounts/bench.sqlite")
echo "account: $ROWS rows, $((size / 1048576)) MiB; runs: $RUNS; sqlite $(sqlite3 --version | cut -d' ' -f1); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "the plan:"
"$BIN/accountd" plan --data-root "$work/seed" --schema "$work/b2" bench 2>/dev/null | sed 's/^/  /'

now() { date +%s.%N; }
shell_times=(); migration_times=(); snapshot_times=(); total_times=()
for run in $(seq 1 "$RUNS"); do
    # The shell: the hand-written rebuild, in one transaction, on a copy of the same file.
    rm -rf "$work/shell" && mkdir "$work/shell" && cp "$work/seed/accounts/bench.sqlite" "$work/shell/copy.sqlite"
    sync
    t0=$(now)
    { echo "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF; BEGIN;"; cat "$work/by-hand.sql"; echo "COMMIT;"; } | sqlite3 -bail "$work/shell/copy.sqlite"
    t1=$(now)
    shell_ms=$(echo "($t1 - $t0) * 1000" | bc -l)

    # accountd: snapshot, then the transaction: plan (with its loss counts), steps,
    # foreign-key and schema checks, history row, commit.
    rm -rf "$work/run" && cp -a "$work/seed" "$work/run"
    sync
    out=$("$BIN/accountd" migrate --data-root "$work/run" --schema "$work/b2" bench)
    total_ms=$(echo "$out" | sed -n 's/.*total \([0-9.]*\) ms.*/\1/p')
    snap_ms=$(echo "$out" | sed -n 's/.*snapshot \([0-9.]*\) ms.*/\1/p')
    mig_ms=$(echo "$out" | sed -n 's/.*migration \([0-9.]*\) ms.*/\1/p')
    printf 'run %d: sqlite3 shell %.0f ms | accountd declarative migration %.0f ms, snapshot %.0f ms, whole switch %.0f ms\n' \
        "$run" "$shell_ms" "$mig_ms" "$snap_ms" "$total_ms"
    shell_times+=("$shell_ms"); migration_times+=("$mig_ms"); snapshot_times+=("$snap_ms"); total_times+=("$total_ms")
done
# Both ends hold the same rows.
a=$(sqlite3 "$work/shell/copy.sqlite" "SELECT count(*), sum(qty), count(note) FROM item")
b=$(sqlite3 "$work/run/accounts/bench.sqlite" "SELECT count(*), sum(qty), count(note) FROM item")
[ "$a" = "$b" ] || { echo "the shell's rows ($a) and accountd's ($b) differ" >&2; exit 1; }

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
shell=$(median "${shell_times[@]}"); migration=$(median "${migration_times[@]}")
snapshot=$(median "${snapshot_times[@]}"); total=$(median "${total_times[@]}")
printf 'median: sqlite3 shell %.0f ms; accountd declarative migration %.0f ms (ratio %.2fx, target <= 1.1x); snapshot %.0f ms; whole switch without snapshot %.0f ms (ratio %.2fx)\n' \
    "$shell" "$migration" "$(echo "$migration / $shell" | bc -l)" "$snapshot" "$(echo "$total - $snapshot" | bc -l)" \
    "$(echo "($total - $snapshot) / $shell" | bc -l)"

# Planning a 100-table schema: version 1 has 100 tables of 5 columns, each with an index
# and 100 rows; version 2 adds a column to 50 of them (ALTER TABLE ADD COLUMN) and a CHECK
# to the other 50 (a rebuild each, with its loss count), and an index on each.
mkdir -p "$work/p1" "$work/p2"
{
    echo "-- accountd: declarative version 1"
    for i in $(seq 1 100); do
        echo "CREATE TABLE t$i (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER, c REAL, d BLOB);"
        echo "CREATE INDEX t${i}_a ON t$i(a);"
    done
} > "$work/p1/schema.sql"
{
    echo "-- accountd: declarative version 2"
    for i in $(seq 1 100); do
        if [ $((i % 2)) -eq 0 ]; then
            echo "CREATE TABLE t$i (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER, c REAL, d BLOB, e TEXT);"
        else
            echo "CREATE TABLE t$i (id INTEGER PRIMARY KEY, a TEXT NOT NULL, b INTEGER CHECK (b >= 0), c REAL, d BLOB);"
        fi
        echo "CREATE INDEX t${i}_a ON t$i(a);"
        echo "CREATE INDEX t${i}_b ON t$i(b);"
    done
} > "$work/p2/schema.sql"
"$BIN/accountd" migrate --create --data-root "$work/plan" --schema "$work/p1" wide >/dev/null
{
    echo "BEGIN;"
    for i in $(seq 1 100); do
        echo "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 100) INSERT INTO t$i (a, b, c) SELECT 'x' || n, n, n / 2.0 FROM c;"
    done
    echo "COMMIT;"
} | sqlite3 "$work/plan/accounts/wide.sqlite"
plan_times=(); wall_times=()
for run in 1 2 3 4 5; do
    t0=$(now)
    err=$("$BIN/accountd" plan --data-root "$work/plan" --schema "$work/p2" wide 2>&1 >"$work/plan.sql")
    t1=$(now)
    plan_times+=("$(echo "$err" | sed -n 's/.*planned in \([0-9.]*\) ms.*/\1/p')")
    wall_times+=("$(echo "($t1 - $t0) * 1000" | bc -l)")
done
steps=$(grep -c '^-- step ' "$work/plan.sql")
printf 'planning 100 tables (%d steps): median %.1f ms (target < 50 ms); whole accountd plan process, bundle load included: %.0f ms\n' \
    "$steps" "$(median "${plan_times[@]}")" "$(median "${wall_times[@]}")"
