GO ?= go
export GO

.PHONY: test check servers fmt demo bench bench-herd chaos chaos-etcd kube kube-apiserver lint release-check oldest-go tidy

## test: what a contributor runs many times a day. The servers (or what to
## install), then, on a PostgreSQL cluster of the run's own: gofmt, and in every
## module of go.work, go vet and its tests (-race where it can find something),
## each benchmark once; not the slow tests that make check runs. A summary of
## passed, failed and skipped tests per module. A test skipped for want of a
## server fails the run unless SHEDLOCK_SKIP_STORES names its store (mysql,
## postgres, redis, pgbouncer, galera, etcd, kubernetes). One module: scripts/test ./integration
test:
	scripts/test

## check: the slow checks, which CI runs after make test, one after another:
## the release check (release-check), the oldest-Go check (oldest-go), the tests
## make test leaves out (the short chaos on every store, the soak tests:
## scripts/test lists them in SLOW), the long chaos run (chaos's second step),
## the etcd cluster's (chaos-etcd) and the Kubernetes tests (kube)
check:
	scripts/test check

## servers: install (as root, on Debian) and start MariaDB, PostgreSQL and Redis
servers:
	scripts/servers

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

## bench-herd: P pods (OS processes) x J jobs at one tick on MariaDB, PostgreSQL and
## Redis (private servers started for the run), library beside the floor; a table per
## store and docs/bench-herd.svg. Several minutes, both cores: HERD_FLAGS='-scales 4x100'
bench-herd:
	cd bench && $(GO) run ./cmd/shedlock-bench herd -chart ../docs/bench-herd.svg $(HERD_FLAGS)

## chaos: the short multi-process check on every store (make check runs it too),
## then the long run with kills and faults; locks in MariaDB unless told
## otherwise: make chaos CHAOS_FLAGS='-store postgres' (or redis, sqlite, etcd)
chaos:
	cd chaos && $(GO) test -race -count=1 -run '^TestChaosShort' -v .
	$(GO) run ./chaos/cmd/shedlock-chaos $(CHAOS_FLAGS)

## chaos-etcd: 4 worker processes contend for 3 names on a private three-member etcd
## cluster for 60 s while the leader member is SIGKILLed and restarted twice and one
## worker's connections are reset: 0 lost updates, 0 overlaps (make check runs it)
chaos-etcd:
	cd integration && $(GO) test -race -count=1 -run '^TestEtcdChaos$$' -v ./etcd -etcd.chaos=60s

## kube: shedlockk8s on a real kube-apiserver (integration/k8s): conformance, RBAC,
## chaos, client-go's elector beside shedlock.Leader. The first run builds
## kube-apiserver from the module proxy (about 12 minutes of CPU), then it is cached
kube:
	scripts/test kube

## kube-apiserver: build (unless cached) the kube-apiserver the Kubernetes tests run
kube-apiserver:
	cd internal/testkit && $(GO) run ./cmd/kube-apiserver-build

## release-check: a test release on a clone, installed from a file-based module proxy
release-check:
	scripts/check-release

## oldest-go: vet and test the published libraries with the oldest Go their go lines name
oldest-go:
	scripts/check-oldest-go

## tidy: go mod tidy in every module, each on its own (never go work sync)
tidy:
	scripts/tidy

## lint: gofmt, and go vet in every module
lint: fmt
	@set -e; mods=$$(scripts/modules); for m in $$mods; do echo "go vet $$m/..."; (cd $$m && $(GO) vet ./...); done
