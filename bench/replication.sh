#!/usr/bin/env bash
# Replication with Litestream 0.5 (docs/REPLICATION.md), measured with a file:// replica:
#   1. lag: from an acknowledged Set to the value's presence in a `litestream restore`
#      of the replica, at the default sync interval (1 s), SAMPLES times;
#   2. Litestream's memory (RSS) and CPU with 1,000 replicated accounts: idle, and while
#      one Set goes to each account in turn.
#
#   bash bench/replication.sh
#
# LITESTREAM=PATH picks the litestream program (default: .build/venv/bin/litestream, which
# `make venv` installs). BIN=DIR picks the folder of accountd and accountctl (default: the
# release build, made here; BIN=.build/debug skips that build: the figures are Litestream's).
set -euo pipefail
cd "$(dirname "$0")/.."
LITESTREAM=${LITESTREAM:-$PWD/.build/venv/bin/litestream}
SAMPLES=${SAMPLES:-20}
ACCOUNTS=${ACCOUNTS:-1000}
IDLE_SECONDS=${IDLE_SECONDS:-30}
[ -x "$LITESTREAM" ] || { echo "no litestream at $LITESTREAM: run 'make venv', or set LITESTREAM" >&2; exit 2; }
if [ -z "${BIN:-}" ]; then
    BIN=$(bash scripts/release-build.sh)
fi
work=$(mktemp -d /tmp/accountd-replication.XXXXXX)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); litestream $("$LITESTREAM" version); accountd from $BIN"

# The daemon with replication on; it writes $work/run/litestream.yml, Litestream runs on it.
mkdir -p "$work/run"
cat > "$work/config.yaml" <<EOF
replication:
  litestream:
    replica: file://$work/replica
    config: $work/run/litestream.yml
    program: $LITESTREAM
EOF
"$BIN/accountd" --config "$work/config.yaml" --data-root "$work/data" --socket "$work/sock" --schema config/schema \
    --log-level warning 2>"$work/accountd.log" &
pids+=($!)
for _ in $(seq 200); do [ -S "$work/sock" ] && [ -f "$work/run/litestream.yml" ] && break; sleep 0.05; done
ctl() { "$BIN/accountctl" --socket "$work/sock" "$@"; }
ctl switch alice >/dev/null
"$LITESTREAM" replicate -config "$work/run/litestream.yml" -no-expand-env >"$work/litestream.log" 2>&1 &
lpid=$!
pids+=($lpid)
until "$LITESTREAM" list -json -socket "$work/run/litestream.sock" 2>/dev/null | grep -q '"status": "replicating"'; do sleep 0.05; done

# 1. Lag: Set (acknowledged once durable), then restore the replica every 20 ms until the value is there.
now_ms() { date +%s%3N; }
lags=()
for i in $(seq "$SAMPLES"); do
    ctl set user lag "$i" >/dev/null
    acked=$(now_ms)
    while :; do
        rm -f "$work/r.sqlite"
        if "$LITESTREAM" restore -o "$work/r.sqlite" "file://$work/replica/alice.sqlite" 2>/dev/null &&
            [ "$(sqlite3 "$work/r.sqlite" "SELECT value FROM accountd_prefs WHERE namespace = 'user' AND key = 'lag'" 2>/dev/null)" = "$i" ]; then
            break
        fi
        sleep 0.02
    done
    lags+=($(($(now_ms) - acked)))
    sleep 0.$((RANDOM % 10))   # Sets land at random points of the sync interval
done
printf '%s\n' "${lags[@]}" | sort -n > "$work/lags"
pick() { sed -n "$(( ($(wc -l < "$work/lags") * $1 + 99) / 100 ))p" "$work/lags"; }
echo "lag, Set acknowledged -> in a restore of the replica (ms, $SAMPLES samples, sync interval 1 s): min $(head -1 "$work/lags"), median $(pick 50), p95 $(pick 95), max $(tail -1 "$work/lags")"

# 2. 1,000 accounts replicated: created through the daemon, then Litestream's RSS and CPU.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
hz=$(getconf CLK_TCK)
start=$(now_ms)
for i in $(seq "$ACCOUNTS"); do echo "switch user$i"; done | socat -t 600 - "UNIX-CONNECT:$work/sock" >/dev/null
echo "created $ACCOUNTS accounts through the daemon in $(( ($(now_ms) - start) / 1000 )) s"
until [ "$("$LITESTREAM" list -json -socket "$work/run/litestream.sock" | grep -c '"status": "replicating"')" -ge $((ACCOUNTS + 2)) ]; do sleep 0.2; done
echo "Litestream replicates all $((ACCOUNTS + 2)) databases ($ACCOUNTS accounts, alice, device.sqlite) after $(( ($(now_ms) - start) / 1000 )) s; RSS $(rss_mb $lpid) MB"
sleep 5   # the first snapshots of the new databases settle
t0=$(cpu_ticks $lpid)
sleep "$IDLE_SECONDS"
t1=$(cpu_ticks $lpid)
echo "idle, $IDLE_SECONDS s: Litestream CPU $(echo "scale=1; 100 * ($t1 - $t0) / $hz / $IDLE_SECONDS" | bc)% of one core, RSS $(rss_mb $lpid) MB"
t0=$(cpu_ticks $lpid)
start=$(now_ms)
for i in $(seq "$ACCOUNTS"); do
    printf '{"method":"io.accountd.Set","parameters":{"namespace":"user","key":"k","value":%d,"account":"user%d"}}\n' "$i" "$i"
done | socat -t 600 - "UNIX-CONNECT:$work/sock" >/dev/null
elapsed=$(( $(now_ms) - start ))
sleep 3   # the last Sets are shipped
t1=$(cpu_ticks $lpid)
seconds=$(echo "scale=3; ($elapsed + 3000) / 1000" | bc)
echo "one Set to each of the $ACCOUNTS accounts (in $elapsed ms) and 3 s after: Litestream CPU $(echo "scale=1; 100 * ($t1 - $t0) / $hz / $seconds" | bc)% of one core, RSS $(rss_mb $lpid) MB"
echo "replica on disk: $(du -sh "$work/replica" | cut -f1); Litestream's local state under accounts/: $(du -sch "$work"/data/accounts/.*-litestream 2>/dev/null | tail -1 | cut -f1)"
