# lockctl — make help lists the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

MODULE   := github.com/lockctl/lockctl
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS  := -s -w -X $(MODULE)/cmd.version=$(VERSION) -X $(MODULE)/cmd.commit=$(COMMIT) -X $(MODULE)/cmd.date=$(DATE)
BIN      := bin/lockctl
# Integration tests must run, not skip, wherever make test runs: with this
# set, testenv fails an integration test that -short would skip.
export LOCKCTL_REQUIRE_INTEGRATION := 1

# The packages whose unit tests run under -race: not e2e, reliability and
# bench, which drive a lockctl binary built without it.
RACE_PKGS = $(shell go list ./... | grep -v -e /e2e -e /reliability -e /bench)

.PHONY: fuzz help build image localcluster tools chromium test unit integration soak demo up down bench scale lint golden docs clean check-integrations integration-tools krew-manifest pin-image helm-plugin

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/lockctl
	CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) .

# The shell variant gets busybox for the architectures apt can fetch here.
BUSYBOX_ARCHES ?= $(shell dpkg --print-architecture 2>/dev/null || echo amd64)

image: ## build the OCI images offline: _output/image/lockctl.tar (linux/amd64, linux/arm64) and lockctl-shell.tar (with busybox, for CI job images)
	go run ./hack/image -o _output/image/lockctl.tar -version $(VERSION) -ldflags "$(LDFLAGS)" -busybox "$$(hack/busybox.sh $(BUSYBOX_ARCHES))"

tools: ## build the control-plane binaries for tests (cached in _output/tools)
	hack/controlplane-tools.sh

chromium: ## install Debian's chromium for the dashboard's browser test (apt-get; nothing when present)
	hack/chromium.sh

test: tools chromium integration-tools ## run the whole suite: unit tests under -race, then everything (a real API server, Debian's chromium, the CI ecosystems' tools)
	LOCKCTL_REQUIRE_INTEGRATION= go test -race -short -count=1 -timeout 20m $(RACE_PKGS)
	go test -count=1 -timeout 40m ./...

integration-tools: ## build the integrations' tools (actionlint, krew, kubectl, gitlab-ci-local, tekton-lint, tekton-validate, Prometheus with promtool, Helm 3 and 4, Flux's apply; in parallel, cached in _output/tools)
	hack/integration-tools.sh actionlint krew kubectl gitlab-ci-local tekton-lint tekton-validate prometheus helm3 helm4 flux-apply

check-integrations: tools integration-tools ## check integrations/ with each CI ecosystem's tools and run them against a real API server (docs/integrations.md)
	go test -count=1 -timeout 20m ./integrations

pin-image: ## pin deploy/'s image to release VERSION pushed to LOCKCTL_IMAGE (OWNER/IMAGE), by tag and the digest of _output/image/lockctl.tar
	go run ./hack/pin-image -image "$(LOCKCTL_IMAGE)" -version $(VERSION) -oci _output/image/lockctl.tar

krew-manifest: ## write dist/lockctl.yaml, the krew manifest of release VERSION from dist/checksums.txt
	go run ./hack/krew-manifest -version $(VERSION) -checksums dist/checksums.txt -o dist/lockctl.yaml

helm-plugin: ## write dist/lockctl-stamp-VERSION.tgz, the Helm 4 post-renderer plugin's archive of release VERSION (docs/helm.md)
	go run ./hack/helm-plugin -version $(VERSION) -o dist/lockctl-stamp-$(patsubst v%,%,$(VERSION)).tgz

unit: ## run the unit tests only (no control plane), under the race detector
	LOCKCTL_REQUIRE_INTEGRATION= go test -race -short ./...

integration: tools chromium ## run the integration tests only
	go test -count=1 -timeout 40m -run 'TestIntegration' ./...

SOAK ?= 10m
soak: tools ## soak lockctl for SOAK (10m): reconcilers, runs, jobs, pipelines, API server restarts, partitions (docs/reliability.md)
	LOCKCTL_SOAK=$(SOAK) go test -count=1 -timeout 60m -v -run '^TestIntegrationSoak$$' ./reliability

demo: build localcluster tools ## start a local control plane and show builds taking turns on a lock, then lockctl run
	hack/demo.sh

up: build localcluster tools ## start the local control plane in the background (kubeconfig in _output/local)
	bin/localcluster up

down: localcluster ## stop the local control plane
	bin/localcluster down

localcluster:
	CGO_ENABLED=0 go build -o bin/localcluster ./hack/localcluster

# The curves of cost against size, which take long: make scale runs them.
SCALE_BENCHES = BenchmarkLongQueue|BenchmarkManyLocks|BenchmarkStatusAllNamespaces|BenchmarkDashboard|BenchmarkReconcileScale

bench: tools ## run the benchmarks against the local control plane, printing figures (the scale curves: make scale)
	go test -v -run '^$$' -bench . -skip '$(SCALE_BENCHES)' -benchtime 1x -timeout 120m ./...

scale: tools ## run the scale benchmarks (long queue, thousands of locks, status -A, the dashboard at 5,000 locks, reconcile at 50k jobs, start-up floor), drawing docs/images/*.svg
	LOCKCTL_BENCH_PLOTS=$(CURDIR)/docs/images LOCKCTL_BENCH_PENDING_TIMEOUT=$${LOCKCTL_BENCH_PENDING_TIMEOUT:--1s} go test -v -run '^$$' -bench '$(SCALE_BENCHES)|BenchmarkStartFloor' -benchtime 1x -timeout 120m ./bench

FUZZTIME ?= 30s
fuzz: ## fuzz the lock-record decoder and the job-file parser, FUZZTIME each
	go test ./lock -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	go test ./job -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

lint: ## golangci-lint (.golangci.yml: gofmt, vet, staticcheck, revive, ...), built into _output/tools on first use
	hack/golangci-lint.sh run ./...

golden: ## rewrite golden files after an intended output change
	go test ./cmd -run 'Golden|TestRun' -update

docs: ## regenerate the command reference in docs/commands from the commands' help
	go test ./cmd -run '^TestCommandReferenceGolden$$' -count=1 -update

clean: ## remove build output (keeps the cached control-plane binaries)
	rm -rf bin dist _output/local
