# Sourced by bench/callgrind.sh and bench/callgrind-sets.sh, in the repository's root:
# the daemon to count (BIN_DIR, `$1` of `callgrind_setup`, or this tree's release build,
# built), valgrind (installed when missing), a work folder (`$2`: its name) with the load
# generator and bench/sigsuspend-shim.c built, and a copy of the daemon without its DWARF 5
# debug info, which valgrind 3.19 cannot read. Sets BIN, work and pid; on exit the daemon
# started as `$pid` is stopped and the work folder removed.
callgrind_setup() {
    if [ -n "${1:-}" ]; then
        BIN=$(cd "$1" && pwd)
    else
        BIN=$(bash scripts/release-build.sh --product accountd)
    fi
    command -v valgrind >/dev/null || bash scripts/install-deps.sh valgrind >/dev/null
    work=$(mktemp -d "/tmp/$2.XXXXXX")
    gcc -O2 -pthread -o "$work/loadgen" bench/loadgen.c
    gcc -O2 -shared -fPIC -o "$work/sigsuspend-shim.so" bench/sigsuspend-shim.c
    strip --strip-debug -o "$work/accountd" "$BIN/accountd"
    pid=
    trap callgrind_cleanup EXIT
}

callgrind_cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; }
