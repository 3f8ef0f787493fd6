# fedmem — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
# fedmem-run must be pure Go: it applies no_new_privs, capability drops and
# Landlock to every thread with syscall.AllThreadsSyscall, which cgo disables.
export CGO_ENABLED := 0
GOFLAGS_BUILD := -trimpath

.PHONY: help build test test-root lint bench demo clean install

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/fedmem, bin/fedmem-run and the container backends' helpers
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-run ./cmd/fedmem-run
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem ./cmd/fedmem
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-containerd ./cmd/fedmem-containerd
	@# libcontainer's nsexec is C: the runc backend's helper alone needs cgo.
	CGO_ENABLED=1 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-runc ./cmd/fedmem-runc

test: build ## run every test (root-only suites too when run as root)
	$(GO) vet ./...
	FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 15m ./...

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: build ## fedmem-run vs bubblewrap, start-up vs vault size, promotion vs git, gate throughput (BENCHFLAGS=-json, -only bwrap|size|promote|throughput)
	FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) run ./test/bench $(BENCHFLAGS)

demo: build ## run the demo: a hostile agent against a fresh demo vault (DEMOFLAGS=--keep)
	$(BIN)/fedmem demo $(DEMOFLAGS)

PREFIX ?= /usr/local
# FEDMEM_LAUNCHER_GROUP=G installs fedmem-run setgid G: only it can write
# session records in a vault made with `fedmem init --launcher-group G`, so
# the gate can trust a session's origin (docs/gate.md, "Trust model"). G must
# be a dedicated group with no members.
install: build ## install bin/ into $(PREFIX)/bin (FEDMEM_LAUNCHER_GROUP=G: fedmem-run setgid G)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN)/fedmem $(DESTDIR)$(PREFIX)/bin/fedmem
	install -m 0755 $(BIN)/fedmem-run $(DESTDIR)$(PREFIX)/bin/fedmem-run
	@if [ -n "$(FEDMEM_LAUNCHER_GROUP)" ]; then \
		getent group "$(FEDMEM_LAUNCHER_GROUP)" >/dev/null || { echo "group $(FEDMEM_LAUNCHER_GROUP) does not exist (groupadd --system $(FEDMEM_LAUNCHER_GROUP))"; exit 1; }; \
		chgrp "$(FEDMEM_LAUNCHER_GROUP)" $(DESTDIR)$(PREFIX)/bin/fedmem-run && \
		chmod 2755 $(DESTDIR)$(PREFIX)/bin/fedmem-run && \
		echo "fedmem-run installed setgid $(FEDMEM_LAUNCHER_GROUP); run: fedmem init --launcher-group $(FEDMEM_LAUNCHER_GROUP) VAULT"; \
	fi

clean: ## remove build output
	rm -rf $(BIN)
