#!/usr/bin/env bash
# Moving an account between two hosts (docs/REPLICATION.md, "Moving an account to another
# host"): two data roots, each with its own daemon and Litestream replicating to its own
# file:// base, stand for hosts A and B. For each size, an account filled with ROWS rows of
# about 120 bytes is handed off on A (`remove --handoff`) and pulled on B (`pull --replica`);
# the time the account is unavailable is from the start of the handoff to the end of the
# pull (B's first switch to it is timed too).
#
#   bash bench/move.sh [ROWS...]          (default: 1000 100000 800000)
#
# LITESTREAM=PATH and BIN=DIR as in bench/replication.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
LITESTREAM=${LITESTREAM:-$PWD/.build/venv/bin/litestream}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(1000 100000 800000)
[ -x "$LITESTREAM" ] || { echo "no litestream at $LITESTREAM: run 'make venv', or set LITESTREAM" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
    BIN=$(bash scripts/release-build.sh)
fi
work=$(mktemp -d /tmp/accountd-move.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo "machine: $(nproc) cores; litestream $("$LITESTREAM" version); accountd from $BIN"
now_ms() { date +%s%3N; }

for host in a b; do
    mkdir -p "$work/$host/run"
    cat > "$work/$host/config.yaml" <<YAML
replication:
  litestream:
    replica: file://$work/replica-$host
    config: $work/$host/run/litestream.yml
    program: $LITESTREAM
YAML
    "$BIN/accountd" --config "$work/$host/config.yaml" --data-root "$work/$host/data" --socket "$work/$host/sock" \
        --schema config/schema --log-level warning 2>"$work/$host/accountd.log" &
    pids+=($!)
    for _ in $(seq 200); do [ -S "$work/$host/sock" ] && [ -f "$work/$host/run/litestream.yml" ] && break; sleep 0.05; done
    "$LITESTREAM" replicate -config "$work/$host/run/litestream.yml" -no-expand-env >"$work/$host/litestream.log" 2>&1 &
    pids+=($!)
done
ctl() { local host=$1; shift; "$BIN/accountctl" --socket "$work/$host/sock" "$@"; }
ctl a switch keeper >/dev/null

for rows in "${SIZES[@]}"; do
    account="moved$rows"
    ctl a switch "$account" >/dev/null
    ctl a switch keeper >/dev/null
    sqlite3 "$work/a/data/accounts/$account.sqlite" \
        "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < $rows)
         INSERT INTO app_data(key, value) SELECT 'key-' || i, printf('%0100d', i) FROM c;" >/dev/null
    size=$(stat -c %s "$work/a/data/accounts/$account.sqlite")
    until "$LITESTREAM" list -json -socket "$work/a/run/litestream.sock" | grep -A3 "$account.sqlite" | grep -q '"replicating"'; do sleep 0.05; done
    "$LITESTREAM" sync -wait -socket "$work/a/run/litestream.sock" "$work/a/data/accounts/$account.sqlite" >/dev/null
    start=$(now_ms)
    ctl a remove "$account" --handoff >/dev/null
    handed=$(now_ms)
    ctl b pull "$account" --replica "file://$work/replica-a" >/dev/null
    pulled=$(now_ms)
    ctl b switch "$account" >/dev/null
    switched=$(now_ms)
    ctl b switch keeper >/dev/null 2>&1 || true
    [ "$(sqlite3 "$work/b/data/accounts/$account.sqlite" 'SELECT count(*) FROM app_data')" = "$rows" ] || { echo "rows lost for $account" >&2; exit 1; }
    echo "rows $rows ($((size / 1024)) KiB): handoff on A $((handed - start)) ms, pull on B $((pulled - handed)) ms, unavailable $((pulled - start)) ms (first switch on B after $((switched - start)) ms)"
done
