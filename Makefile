GO ?= go
export GO

.PHONY: test fmt demo bench chaos lint

## test: gofmt, then every module in go.work: vet, tests with the race detector,
## each benchmark once (needs MySQL/MariaDB; see README). One module: scripts/test ./integration
test:
	scripts/test

## fmt: fail if any Go file in the tree is not gofmt'd
fmt:
	@test -z "$$(gofmt -l .)" || (echo "gofmt -w these files:"; gofmt -l .; exit 1)

## demo: the article's two jobs on three pods, with and without the lock
## (SQLite in a temporary directory unless SHEDLOCK_MYSQL_DSN is set)
demo:
	$(GO) run ./examples/demo

## bench: benchmarks against the round-trip floor, and the contention table and chart
bench:
	cd bench && $(GO) test -run '^$$' -bench . -benchmem -count=5 ./...
	$(GO) run ./bench/cmd/shedlock-bench

## chaos: the long multi-process run with kills and faults; locks in MariaDB unless
## told otherwise: make chaos CHAOS_FLAGS='-store postgres' (or redis, sqlite)
chaos:
	$(GO) run ./chaos/cmd/shedlock-chaos $(CHAOS_FLAGS)

## lint: gofmt, and go vet in every module
lint: fmt
	@set -e; mods=$$(scripts/modules); for m in $$mods; do echo "go vet $$m/..."; (cd $$m && $(GO) vet ./...); done
