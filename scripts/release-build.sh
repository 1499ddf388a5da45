#!/usr/bin/env bash
# The one way accountd's release build is made (`make install`, `make build CONFIG=release`,
# `make bench` and every script under bench/ use it): builds, then prints the folder holding the built programs.
#
#   bash scripts/release-build.sh [SWIFT BUILD OPTIONS...]   e.g. --product accountd, --scratch-path DIR
#
# Release builds turn off Swift's run-time exclusivity checks (`-enforce-exclusivity=unchecked`,
# for every module, SwiftNIO's included): they were about a seventh of the instructions of a
# request on the event loops (docs/PERFORMANCE.md, "Durable Set without the run-time exclusivity
# checks"). The debug build, which the test suite and the fuzzers run, keeps them, so an
# overlapping access is still caught where the code is tested. The compile-time checks stay on in both.
set -euo pipefail
cd "$(dirname "$0")/.." >/dev/null
# SWIFT may be a command of several words (`env swift`), as the Makefile allows.
read -ra swift <<<"${SWIFT:-swift}"
flags=(-c release -Xswiftc -enforce-exclusivity=unchecked)
# The build's own output only when it fails, so that callers can take the folder from stdout.
if ! log=$("${swift[@]}" build "${flags[@]}" "$@" 2>&1); then
    echo "$log" >&2
    echo "scripts/release-build.sh: the release build failed (swift build ${flags[*]} $*)" >&2
    exit 1
fi
"${swift[@]}" build "${flags[@]}" "$@" --show-bin-path
