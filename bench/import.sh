#!/usr/bin/env bash
# Importing an `sql` export (docs/PROTOCOL.md, "Import"): for each size, an account filled
# with ROWS rows of about 120 bytes is exported with `accountctl export --format sql` and
# imported back under another name (`accountctl import NAME FILE --rebind`) on the same
# daemon; the time of the import is printed, and while it runs the account is asked for
# (`snapshot NAME`), which answers at once when the import does not hold its lock.
#
#   bash bench/import.sh [ROWS...]          (default: 10000 300000 1000000)
#
# BIN=DIR as in bench/replication.sh (default: a release build).
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(10000 300000 1000000)
if [ -z "${BIN:-}" ]; then
    BIN=$(bash scripts/release-build.sh)
fi
work=$(mktemp -d /tmp/accountd-import.XXXXXX)
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo "machine: $(nproc) cores; accountd from $BIN"
now_ms() { date +%s%3N; }
echo '{}' > "$work/config.yaml"
"$BIN/accountd" --config "$work/config.yaml" --data-root "$work/data" --socket "$work/sock" \
    --schema config/schema --log-level warning 2>"$work/accountd.log" &
pid=$!
for _ in $(seq 200); do [ -S "$work/sock" ] && break; sleep 0.05; done
ctl() { "$BIN/accountctl" --socket "$work/sock" "$@"; }
ctl switch keeper >/dev/null

for rows in "${SIZES[@]}"; do
    account="src$rows"
    ctl switch "$account" >/dev/null
    ctl switch keeper >/dev/null
    sqlite3 "$work/data/accounts/$account.sqlite" \
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $rows)
         INSERT INTO app_data(key, value) SELECT 'key-' || i, printf('%0100d', i) FROM c;" >/dev/null
    ctl export "$account" --format sql -o "$work/$account.sql" >/dev/null 2>&1
    size=$(stat -c %s "$work/$account.sql")
    start=$(now_ms)
    ctl import "imp$rows" "$work/$account.sql" --rebind >/dev/null &
    importer=$!
    sleep 0.2
    asked=$(now_ms)
    ctl snapshot "imp$rows" >/dev/null 2>&1 || true
    answered=$(now_ms)
    wait "$importer"
    done_ms=$(now_ms)
    [ "$(sqlite3 "$work/data/accounts/imp$rows.sqlite" 'SELECT count(*) FROM app_data')" = "$rows" ] || { echo "rows lost for imp$rows" >&2; exit 1; }
    echo "rows $rows ($((size / 1024)) KiB of SQL): import $((done_ms - start)) ms; a call on the account 0.2 s in answered in $((answered - asked)) ms"
done
