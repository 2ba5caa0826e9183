GO ?= go

.PHONY: test demo bench chaos lint

## test: vet, then every test with the race detector (needs MySQL/MariaDB; see README)
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -run '^$$' -bench . -benchtime=1x ./...

## demo: the article's two jobs on three pods, with and without the lock
demo:
	$(GO) run ./cmd/shedlock-demo

## bench: benchmarks against the round-trip floor, and the contention table and chart
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=5 ./...
	$(GO) run ./cmd/shedlock-bench

## chaos: the long multi-process run with kills and faults
chaos:
	$(GO) run ./cmd/shedlock-chaos

## lint: formatting and vet
lint:
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	$(GO) vet ./...
