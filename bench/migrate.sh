#!/usr/bin/env bash
# Benchmark: migrate a 1,000,000-row account through a table rebuild with accountd,
# beside the sqlite3 shell running the same SQL on a copy of the same file, in one run.
#
#   bash bench/migrate.sh [ROWS] [RUNS]
#
# Prints one line per run and a summary with the ratio. The figures go into docs/PERFORMANCE.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
RUNS=${2:-3}
BIN=$(bash scripts/release-build.sh --product accountd)
work=$(mktemp -d /tmp/accountd-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/b1/migrations" "$work/b2/migrations"
cat > "$work/b1/migrations/0001_items.sql" <<'SQL'
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER, note TEXT);
CREATE INDEX item_name ON item(name);
SQL
cp "$work/b1/migrations/0001_items.sql" "$work/b2/migrations/"
cat > "$work/b2/migrations/0002_rebuild_item.sql" <<'SQL'
CREATE TABLE item_new (id INTEGER PRIMARY KEY, name TEXT NOT NULL, qty INTEGER NOT NULL DEFAULT 0 CHECK (qty >= 0), note TEXT, label TEXT);
INSERT INTO item_new (id, name, qty, note, label) SELECT id, name, coalesce(qty, 0), note, upper(name) FROM item;
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
echo "account: $ROWS rows, $((size / 1048576)) MiB; runs: $RUNS; sqlite $(sqlite3 --version | cut -d' ' -f1)"

now() { date +%s.%N; }
shell_times=(); migration_times=(); snapshot_times=(); total_times=()
for run in $(seq 1 "$RUNS"); do
    # The shell: the same SQL, in one transaction, on a copy of the same file.
    rm -rf "$work/shell" && mkdir "$work/shell" && cp "$work/seed/accounts/bench.sqlite" "$work/shell/copy.sqlite"
    sync
    t0=$(now)
    { echo "PRAGMA synchronous = FULL; BEGIN;"; cat "$work/b2/migrations/0002_rebuild_item.sql"; echo "COMMIT;"; } | sqlite3 -bail "$work/shell/copy.sqlite"
    t1=$(now)
    shell_ms=$(echo "($t1 - $t0) * 1000" | bc -l)

    # accountd: snapshot, then the migration transaction (with its foreign-key and schema checks).
    rm -rf "$work/run" && cp -a "$work/seed" "$work/run"
    sync
    out=$("$BIN/accountd" migrate --data-root "$work/run" --schema "$work/b2" bench)
    total_ms=$(echo "$out" | sed -n 's/.*total \([0-9.]*\) ms.*/\1/p')
    snap_ms=$(echo "$out" | sed -n 's/.*snapshot \([0-9.]*\) ms.*/\1/p')
    mig_ms=$(echo "$out" | sed -n 's/.*migration \([0-9.]*\) ms.*/\1/p')
    printf 'run %d: sqlite3 shell %.0f ms | accountd migration %.0f ms, snapshot %.0f ms, whole switch %.0f ms\n' \
        "$run" "$shell_ms" "$mig_ms" "$snap_ms" "$total_ms"
    shell_times+=("$shell_ms"); migration_times+=("$mig_ms"); snapshot_times+=("$snap_ms"); total_times+=("$total_ms")
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
shell=$(median "${shell_times[@]}"); migration=$(median "${migration_times[@]}")
snapshot=$(median "${snapshot_times[@]}"); total=$(median "${total_times[@]}")
printf 'median: sqlite3 shell %.0f ms; accountd migration %.0f ms (ratio %.2fx, target <= 1.15x); snapshot %.0f ms; whole switch without snapshot %.0f ms (ratio %.2fx)\n' \
    "$shell" "$migration" "$(echo "$migration / $shell" | bc -l)" "$snapshot" "$(echo "$total - $snapshot" | bc -l)" \
    "$(echo "($total - $snapshot) / $shell" | bc -l)"
