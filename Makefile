# accountd: `make run` and `make test` do all the set-up on a fresh machine.

SWIFT       ?= swift
CONFIG      ?= debug
DATA_ROOT   ?= $(CURDIR)/run/data
SOCKET      ?= $(CURDIR)/run/accountd.sock
SCHEMA      ?= $(CURDIR)/config/schema
PREFIX      ?= /usr/local
BIN          = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path)

.PHONY: deps build run test bench clean

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

## bench: run the benchmarks and print their figures (see docs/PERFORMANCE.md)
bench: deps
	$(SWIFT) build -c release
	bash bench/migrate.sh

clean:
	rm -rf .build run
