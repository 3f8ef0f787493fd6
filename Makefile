# fedmem — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin
# fedmem-run must be pure Go: it applies no_new_privs, capability drops and
# Landlock to every thread with syscall.AllThreadsSyscall, which cgo disables.
export CGO_ENABLED := 0
# fedmem --version and fedmem-run --version print VERSION (git describe).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GOFLAGS_BUILD := -trimpath -ldflags "-X main.version=$(VERSION)"

.PHONY: help build build-demo test test-matrix test-root lint bench bench-compare corpus demo clean install check-install test-vm dist test-dist stress

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/fedmem, bin/fedmem-run and the container backends' helpers
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-run ./cmd/fedmem-run
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem ./cmd/fedmem
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-containerd ./cmd/fedmem-containerd
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-cred ./cmd/fedmem-cred
	@# libcontainer's nsexec is C: the runc backend's helper alone needs cgo.
	CGO_ENABLED=1 $(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-runc ./cmd/fedmem-runc

test: build lint ## run every test (root-only suites too when run as root; the container matrix where runc/containerd are set up; the package in a clean root under FEDMEM_REQUIRE_ROOT=1)
	FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 20m ./...
	@$(MAKE) --no-print-directory test-matrix
	@$(MAKE) --no-print-directory test-dist-required

# The Debian package in a clean root (issue 23) is part of `make test` when
# the root-only suites are required (FEDMEM_REQUIRE_ROOT=1, as .ci/run sets
# it): it debootstraps from the machine's apt mirror, about 3.5 minutes
# afresh. Elsewhere it is its own target (make test-dist).
test-dist-required:
	@if [ "$$FEDMEM_REQUIRE_ROOT" != 1 ]; then 		echo "test-dist: not run (FEDMEM_REQUIRE_ROOT is not 1; run make test-dist as root)"; exit 0; fi; 	command -v debootstrap >/dev/null || { echo "test-dist: debootstrap missing (.ci/run installs it)"; exit 1; }; 	t0=$$(date +%s); 	timeout -k 30 900 $(MAKE) --no-print-directory test-dist || exit 1; 	echo "test-dist: the package installed into a clean Debian 12 root, doctor and demo passed, in $$(( $$(date +%s) - t0 ))s"

# The container matrix (issue 11): the whole escape suite (the
# host-authority and persistence tests in it), the e2e suite and the real
# clients (Claude Code, Codex) under --backend runc and containerd, with the
# namespace backend's expectations. Those backends refuse an unprivileged
# caller before a session exists (sandbox.CheckCaller):
# TestContainerBackendRefusesUnprivilegedCaller asserts it for both, and the
# user layouts skip there by name (testutil.SkipUnprivilegedCaller); they run
# under the namespace backend in `go test ./...` above. MATRIX_SKIP: tests
# whose subject does not depend on FEDMEM_BACKEND (the controls run no
# fedmem-run; the refusal tests name their backends themselves; the proposal
# tests, TestPropose*, are the namespace backend's own; TestRT18CredHelperOnWorkdirPath
# runs a fedmem-run copied alone, without the backends' helpers), run once there.
# .ci/run builds
# runc and containerd and starts a private containerd
# (FEDMEM_CONTAINERD_ADDRESS); without runc on PATH the matrix is skipped
# here, and fails under FEDMEM_REQUIRE_ROOT=1.
MATRIX_PKGS := ./test/escape/ ./test/e2e/ ./test/clients/
MATRIX_SKIP := ^(TestControlUnsandboxed|TestControlNestedEscape|TestContainerBackendRefusesUnprivilegedCaller|TestPropose[A-Za-z]*|TestRT18CredHelperOnWorkdirPath)$$
test-matrix: ## the escape, e2e and clients suites under --backend runc and containerd
	@if [ -z "$$FEDMEM_CONTAINERD_ADDRESS" ] || ! command -v runc >/dev/null; then \
		echo "test-matrix: runc or FEDMEM_CONTAINERD_ADDRESS missing: container matrix not run (.ci/run sets both up)"; \
		if [ "$$FEDMEM_REQUIRE_ROOT" = 1 ]; then exit 1; fi; exit 0; fi
	@for backend in runc containerd; do \
		t0=$$(date +%s); \
		FEDMEM_BACKEND=$$backend FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -timeout 15m -skip '$(MATRIX_SKIP)' $(MATRIX_PKGS) || exit 1; \
		echo "test-matrix: escape, e2e and clients under $$backend in $$(( $$(date +%s) - t0 ))s"; \
	done

# cgroup v2 limits for real: a Debian 12 VM (debootstrap + qemu, software
# emulation without /dev/kvm) booted cgroup-v2-only. Slow; root; not in test.
test-vm: build ## boot a cgroup-v2-only Debian 12 VM and check the limits there (root; FEDMEM_VM_TIMEOUT, FEDMEM_VM_CACHE)
	FEDMEM_BIN=$(CURDIR)/$(BIN) ./test/vm/run.sh

# The gate's kill -9 tests, many runs at once (issue 24 item 6): a recovery
# race showed in 3 runs of 80 under load, never in one. Not part of `make
# test` nor of CI's critical path; each run gets its own FEDMEM_TEST_SEED,
# printed with its log when it fails (docs/gate.md, "Stress").
STRESS_N ?= 40
STRESS_P ?= 4
stress: ## the gate's kill -9 burst test STRESS_N times, STRESS_P at a time (STRESS_TESTS, STRESS_SEED, STRESS_NICE); not in test
	STRESS_N=$(STRESS_N) STRESS_P=$(STRESS_P) GO=$(GO) ./test/stress/run.sh

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

corpus: ## the trusted-profile corpus (gate/testdata/trusted): hostile drafts promoted (must be 0) and benign notes promoted (at least 80%)
	@$(GO) test -count=1 -run '^TestTrustedCorpus$$' -v ./gate/ | grep -E 'corpus:|benign held|open breach|promoted from a trusted|^(ok|FAIL|---)'

bench: build ## fedmem-run vs bubblewrap, start-up vs vault size, promotion vs git, gate throughput (BENCHFLAGS=-json, -only bwrap|backends|size|receipts|promote|throughput|latency|review|cred|propose)
	FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) run ./test/bench $(BENCHFLAGS)

# This build against revision BASE (default HEAD~1),
# side by side in one run: start-up and one promotion (issue 20: a refactor
# must not worsen them). BASE is built from `git archive` in .cache/bench.
BASE ?= HEAD~1
bench-compare: build ## this build against BASE=REV: start-up and promotion side by side, as ratios (BENCHFLAGS as for bench)
	@set -e; rev=$$(git rev-parse --short "$(BASE)"); dir=$(CURDIR)/.cache/bench/base-$$rev; \
	if [ ! -x $$dir/bin/fedmem ]; then rm -rf $$dir; mkdir -p $$dir; git archive "$$rev" | tar -x -C $$dir; \
		$(MAKE) --no-print-directory -C $$dir build VERSION=$$rev >/dev/null; fi; \
	FEDMEM_BIN=$(CURDIR)/$(BIN) $(GO) run ./test/bench -only compare -base $$dir/bin $(BENCHFLAGS)

# The demo needs fedmem and fedmem-run only (not the container backends'
# helpers, whose cgo build is most of `make build`'s cold time).
build-demo: ## build bin/fedmem and bin/fedmem-run only (what the demo needs)
	@echo "build-demo: fedmem-run (1/2)…"
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem-run ./cmd/fedmem-run
	@echo "build-demo: fedmem (2/2)…"
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/fedmem ./cmd/fedmem

demo: build-demo ## run the demo: a hostile agent against a fresh demo vault (DEMOFLAGS=--keep)
	$(BIN)/fedmem demo $(DEMOFLAGS)

# Release artefacts: static binaries (CGO_ENABLED=0) in a tarball, and a
# Debian package made by nfpm (packaging/nfpm.yaml) with the man pages
# generated from the commands, completions, the systemd unit with
# sysusers/tmpfiles, and the AppArmor profile. fedmem-runc (cgo, the runc
# backend's helper) is not in them: `make build` makes it.
DIST := dist
NFPM ?= github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
DEB_VERSION ?= $(shell v=$$(git describe --tags --abbrev=0 2>/dev/null) && echo "$${v#v}" || echo "0.0.0+git$$(git rev-parse --short HEAD 2>/dev/null || echo dev)")
GOARCH_DIST := $(shell $(GO) env GOARCH)
dist: ## static binaries (tarball) and a Debian package in dist/ (nfpm)
	rm -rf $(DIST)/root && install -d $(DIST)/root/usr/bin $(DIST)/root/usr/share/man/man1 \
		$(DIST)/root/usr/share/bash-completion/completions $(DIST)/root/usr/share/zsh/vendor-completions \
		$(DIST)/root/usr/share/fish/vendor_completions.d $(DIST)/root/usr/share/fedmem/profiles \
		$(DIST)/root/lib/systemd/system $(DIST)/root/usr/lib/sysusers.d $(DIST)/root/usr/lib/tmpfiles.d $(DIST)/root/etc/apparmor.d
	@echo "dist: static binaries…"
	$(GO) build $(GOFLAGS_BUILD) -o $(DIST)/root/usr/bin/fedmem-run ./cmd/fedmem-run
	$(GO) build $(GOFLAGS_BUILD) -o $(DIST)/root/usr/bin/fedmem ./cmd/fedmem
	$(GO) build $(GOFLAGS_BUILD) -o $(DIST)/root/usr/bin/fedmem-containerd ./cmd/fedmem-containerd
	$(GO) build $(GOFLAGS_BUILD) -o $(DIST)/root/usr/bin/fedmem-cred ./cmd/fedmem-cred
	@echo "dist: man pages (generated from the commands), completions, units, profiles…"
	$(DIST)/root/usr/bin/fedmem man $(DIST)/root/usr/share/man/man1 --launcher $(DIST)/root/usr/bin/fedmem-run
	gzip -9n $(DIST)/root/usr/share/man/man1/*.1
	$(DIST)/root/usr/bin/fedmem completion bash > $(DIST)/root/usr/share/bash-completion/completions/fedmem
	$(DIST)/root/usr/bin/fedmem completion zsh > $(DIST)/root/usr/share/zsh/vendor-completions/_fedmem
	$(DIST)/root/usr/bin/fedmem completion fish > $(DIST)/root/usr/share/fish/vendor_completions.d/fedmem.fish
	$(DIST)/root/usr/bin/fedmem-run --completion bash > $(DIST)/root/usr/share/bash-completion/completions/fedmem-run
	$(DIST)/root/usr/bin/fedmem-run --completion zsh > $(DIST)/root/usr/share/zsh/vendor-completions/_fedmem-run
	$(DIST)/root/usr/bin/fedmem-run --completion fish > $(DIST)/root/usr/share/fish/vendor_completions.d/fedmem-run.fish
	install -m 0644 profiles/builtin/*.yaml $(DIST)/root/usr/share/fedmem/profiles/
	sed 's|/usr/local/bin/fedmem|/usr/bin/fedmem|g' packaging/systemd/fedmem-gate@.service > $(DIST)/root/lib/systemd/system/fedmem-gate@.service
	install -m 0644 packaging/systemd/fedmem.sysusers $(DIST)/root/usr/lib/sysusers.d/fedmem.conf
	install -m 0644 packaging/systemd/fedmem.tmpfiles $(DIST)/root/usr/lib/tmpfiles.d/fedmem.conf
	sed 's|/usr/local/bin/fedmem-run|/usr/bin/fedmem-run|g' packaging/apparmor/usr.local.bin.fedmem-run > $(DIST)/root/etc/apparmor.d/usr.bin.fedmem-run
	tar -C $(DIST)/root -czf $(DIST)/fedmem_$(DEB_VERSION)_linux_$(GOARCH_DIST).tar.gz usr/bin
	@echo "dist: Debian package (nfpm)…"
	FEDMEM_VERSION=$(DEB_VERSION) FEDMEM_ARCH=$(GOARCH_DIST) $(GO) run $(NFPM) package --config packaging/nfpm.yaml --packager deb --target $(DIST)/
	@ls -l $(DIST)/*.deb $(DIST)/*.tar.gz

test-dist: dist ## install the .deb into a clean Debian 12 root (debootstrap) and run fedmem doctor and the demo there (root)
	FEDMEM_DEB=$$(ls -t $(DIST)/*.deb | head -1) ./test/dist/run.sh

PREFIX ?= /usr/local
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
LIBDIR ?= $(PREFIX)/lib
UNITDIR ?= $(LIBDIR)/systemd/system
# FEDMEM_LAUNCHER_GROUP=G installs fedmem-run setgid G: only it can write
# session records in a vault made with `fedmem init --launcher-group G`, so
# the gate can trust a session's origin (docs/gate.md, "Trust model"). G must
# be a dedicated group with no members.
install: build ## install bin/ (fedmem, fedmem-run and its helpers) into $(PREFIX)/bin (FEDMEM_LAUNCHER_GROUP=G: fedmem-run setgid G)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN)/fedmem $(DESTDIR)$(PREFIX)/bin/fedmem
	install -m 0755 $(BIN)/fedmem-run $(DESTDIR)$(PREFIX)/bin/fedmem-run
	@# fedmem-run finds its helpers beside itself: the credential helper and
	@# the runc and containerd backends' helpers (make build made them).
	install -m 0755 $(BIN)/fedmem-cred $(BIN)/fedmem-runc $(BIN)/fedmem-containerd $(DESTDIR)$(PREFIX)/bin/
	@if [ -n "$(FEDMEM_LAUNCHER_GROUP)" ]; then \
		getent group "$(FEDMEM_LAUNCHER_GROUP)" >/dev/null || { echo "group $(FEDMEM_LAUNCHER_GROUP) does not exist (groupadd --system $(FEDMEM_LAUNCHER_GROUP))"; exit 1; }; \
		chgrp "$(FEDMEM_LAUNCHER_GROUP)" $(DESTDIR)$(PREFIX)/bin/fedmem-run && \
		chmod 2755 $(DESTDIR)$(PREFIX)/bin/fedmem-run && \
		echo "fedmem-run installed setgid $(FEDMEM_LAUNCHER_GROUP); run: fedmem init --launcher-group $(FEDMEM_LAUNCHER_GROUP) VAULT"; \
	fi
	@# Man pages, completions, the built-in profiles (for reading; fedmem-run
	@# embeds them), the gate's systemd unit with sysusers/tmpfiles, and the
	@# AppArmor profile (docs/install.md says how to enable each).
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/fish/vendor_completions.d \
		$(DESTDIR)$(DATADIR)/fedmem/profiles $(DESTDIR)$(DATADIR)/fedmem/apparmor \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(LIBDIR)/sysusers.d $(DESTDIR)$(LIBDIR)/tmpfiles.d
	install -m 0644 packaging/man/fedmem.1 packaging/man/fedmem-run.1 $(DESTDIR)$(MANDIR)/man1/
	$(BIN)/fedmem-run --completion bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/fedmem-run
	$(BIN)/fedmem-run --completion zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_fedmem-run
	$(BIN)/fedmem-run --completion fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/fedmem-run.fish
	$(BIN)/fedmem completion bash > $(DESTDIR)$(DATADIR)/bash-completion/completions/fedmem
	$(BIN)/fedmem completion zsh > $(DESTDIR)$(DATADIR)/zsh/site-functions/_fedmem
	$(BIN)/fedmem completion fish > $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/fedmem.fish
	install -m 0644 profiles/builtin/*.yaml $(DESTDIR)$(DATADIR)/fedmem/profiles/
	sed 's|/usr/local/bin/fedmem-run|$(PREFIX)/bin/fedmem-run|g' packaging/apparmor/usr.local.bin.fedmem-run > $(DESTDIR)$(DATADIR)/fedmem/apparmor/fedmem-run
	sed 's|/usr/local/bin/fedmem|$(PREFIX)/bin/fedmem|g' packaging/systemd/fedmem-gate@.service > $(DESTDIR)$(UNITDIR)/fedmem-gate@.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/fedmem-gate@.service $(DESTDIR)$(DATADIR)/fedmem/apparmor/fedmem-run
	install -m 0644 packaging/systemd/fedmem.sysusers $(DESTDIR)$(LIBDIR)/sysusers.d/fedmem.conf
	install -m 0644 packaging/systemd/fedmem.tmpfiles $(DESTDIR)$(LIBDIR)/tmpfiles.d/fedmem.conf

APPARMOR_ABI ?= /etc/apparmor.d/abi/4.0
check-install: ## make install into a scratch DESTDIR and check it (systemd-analyze verify, man, completions, AppArmor profile)
	rm -rf $(CURDIR)/.install-check
	$(MAKE) install DESTDIR=$(CURDIR)/.install-check
	test -x $(CURDIR)/.install-check$(PREFIX)/bin/fedmem-run
	for h in fedmem-cred fedmem-runc fedmem-containerd; do test -x $(CURDIR)/.install-check$(PREFIX)/bin/$$h || { echo "check-install: $$h not installed beside fedmem-run"; exit 1; }; done
	$(CURDIR)/.install-check$(PREFIX)/bin/fedmem-run --version
	$(CURDIR)/.install-check$(PREFIX)/bin/fedmem --version
	bash -n $(CURDIR)/.install-check$(DATADIR)/bash-completion/completions/fedmem-run
	bash -n $(CURDIR)/.install-check$(DATADIR)/bash-completion/completions/fedmem
	@if command -v systemd-analyze >/dev/null; then \
		sed 's|$(PREFIX)/bin/fedmem|$(CURDIR)/.install-check$(PREFIX)/bin/fedmem|' $(CURDIR)/.install-check$(UNITDIR)/fedmem-gate@.service > $(CURDIR)/.install-check/fedmem-gate@.service && \
		systemd-analyze verify '$(CURDIR)/.install-check/fedmem-gate@srv-vault.service' && echo "systemd-analyze verify: ok"; \
	else echo "systemd-analyze not installed: unit not verified"; fi
	grep -q '^profile fedmem-run $(PREFIX)/bin/fedmem-run ' $(CURDIR)/.install-check$(DATADIR)/fedmem/apparmor/fedmem-run
	@# Compiled for AppArmor 4.0's feature set (-M): without one, a parser on a
	@# host without AppArmor drops the userns rule silently.
	@if command -v apparmor_parser >/dev/null && apparmor_parser --version | grep -q 'version [4-9]' && [ -r "$(APPARMOR_ABI)" ]; then \
		apparmor_parser -Q -K -T -M "$(APPARMOR_ABI)" -o /dev/null $(CURDIR)/.install-check$(DATADIR)/fedmem/apparmor/fedmem-run && echo "apparmor_parser: profile compiles for $(APPARMOR_ABI)"; \
	else echo "no AppArmor 4 apparmor_parser or $(APPARMOR_ABI): AppArmor profile not compiled"; fi
	CGO_ENABLED=0 GOOS=darwin $(GO) build -o /dev/null ./cmd/fedmem && echo "darwin build: ok" || echo "darwin build: FAILS (docs/install.md)"
	rm -rf $(CURDIR)/.install-check

clean: ## remove build output
	rm -rf $(BIN)
