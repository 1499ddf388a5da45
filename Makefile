# accountd: `make run` and `make test` do all the set-up on a fresh machine.

SWIFT       ?= swift
CONFIG      ?= debug
DATA_ROOT   ?= $(CURDIR)/run/data
SOCKET      ?= $(CURDIR)/run/accountd.sock
SCHEMA      ?= $(CURDIR)/config/schema
PREFIX      ?= /usr/local
BIN          = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

DESTDIR     ?=
BINDIR       = $(PREFIX)/bin
DATADIR      = $(PREFIX)/share/accountd
UNITDIR     ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR  ?= /etc

FUZZ_SECONDS ?= 60

.PHONY: deps build run test fuzz bench install clean

## deps: install the missing system packages (libsqlite3-dev, libsystemd-dev pinned, sqlite3)
deps:
	@bash scripts/install-deps.sh

## build: build both programs
build: deps
	$(SWIFT) build -c $(CONFIG)

## run: build, then run accountd in the foreground on ./run/data with the sample bundle
run: build
	@mkdir -p $(dir $(SOCKET))
	$(BIN)/accountd --data-root $(DATA_ROOT) --socket $(SOCKET) --schema $(SCHEMA) --config $(CURDIR)/config/accountd.yaml

## test: build, then run the whole suite
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

## fuzz: build the libFuzzer target over the protocol codec and run it for FUZZ_SECONDS
fuzz:
	@mkdir -p .build/fuzz .build/fuzz/corpus
	swiftc -sanitize=fuzzer,address -parse-as-library -O -g -module-name CodecFuzzer \
		Sources/AccountdProtocol/*.swift Fuzz/CodecFuzzer.swift -o .build/fuzz/codec 2>.build/fuzz/build.log || (cat .build/fuzz/build.log; exit 1)
	cp Fuzz/corpus/codec/* .build/fuzz/corpus/
	.build/fuzz/codec -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 .build/fuzz/corpus >.build/fuzz/run.log 2>&1 \
		|| (tail -60 .build/fuzz/run.log; exit 1)
	@grep -E "^Done|stat::number_of_executed_units" .build/fuzz/run.log

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
	install -m 0644 systemd/accountd.sysusers $(DESTDIR)$(SYSUSERSDIR)/accountd.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml || \
		sed 's|/usr/local/share/accountd/schema|$(DATADIR)/schema|' config/accountd.yaml > $(DESTDIR)$(SYSCONFDIR)/accountd/accountd.yaml
	install -m 0644 config/schema/migrations/*.sql $(DESTDIR)$(DATADIR)/schema/migrations/
	install -m 0644 config/schema/schema.sql $(DESTDIR)$(DATADIR)/schema/

clean:
	rm -rf .build run
