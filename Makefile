# SPDX-License-Identifier: Apache-2.0
# One build: BPF objects -> skeletons -> userspace -> tests.
#   make            build build/egressctl
#   sudo make check install missing packages, build, run every test
#   sudo make demo  install missing packages, build, show a confined command
#   make unit       unit tests;  make asan: the same under ASan+UBSan
#   make fuzz       libFuzzer targets for FUZZ_SECONDS each (make -j: side by side)
#   make vmlinux    regenerate vmlinux/$(ARCH)/vmlinux.h from the running kernel
#   make dist       the release tarball: build/dist/ (below, "The release artifact")
#   make format     clang-format bpf/ include/ userspace/ tests/
#   make spdx-check every source file's SPDX line (tools/spdx-check.sh)
#   sudo make bench the benchmark (tools/bench/run.sh, < 10 min; bench-quick < 2 min)
#   sudo make stress  floods, slow clients and faults (tests/stress/, a few minutes)
#   sudo make soak    mixed traffic for SOAK_SECONDS (600): flat RSS and descriptors

OUT ?= build
ARCH ?= x86
CC ?= gcc
CLANG ?= clang
BPFTOOL ?= bpftool
LLVM_STRIP ?= llvm-strip
FUZZ_SECONDS ?= 20
# make check's share of fuzzing per target: the committed corpus replayed,
# then 2 s of new inputs; 17 targets, two at a time (each second here is
# nine of the check's, which must stay under 20 minutes on a slow CI
# machine). make fuzz fuzzes for longer.
CHECK_FUZZ_SECONDS ?= 2
FUZZ_JOBS ?= $(shell nproc)
# make check builds with -j$(BUILD_JOBS); the e2e suites run E2E_JOBS at a time
BUILD_JOBS ?= $(shell nproc)
SOAK_SECONDS ?= 600
SANITIZE ?=

PKGS := libbpf libelf zlib libevent libevent_openssl libssl libcrypto libcares jansson
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
# Project flags live apart from CFLAGS so `make CFLAGS=...` cannot drop them.
# Debug info names files relative to the tree (the same binary wherever it
# is built: make dist).
ALL_CFLAGS = $(CFLAGS) -std=gnu11 -D_GNU_SOURCE $(WARN) -fdebug-prefix-map=$(CURDIR)=. \
	-Iinclude -Iuserspace -I$(OUT) $(PKG_CFLAGS)
ifneq ($(SANITIZE),)
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
LDLIBS += $(PKG_LIBS) -pthread -lm

# Header dependencies: every compiler run writes what it read to a .d file
# beside its output (-MMD; -MP: a header that is gone breaks no build), and
# the .d files are included at the end, so a header change rebuilds what
# includes it and nothing else. The headers so become prerequisites of
# the binaries too: the rules that compile and link take only the .c and .o
# files of $^.
DEPFLAGS = -MMD -MP -MF $@.d -MT $@

# The BPF side: bpf/egress.bpf.c, one compilation unit that includes one
# file per hook family (bpf/*.c) over bpf/lib/*.h; one object, one skeleton.
BPF_SRCS := $(wildcard bpf/*.bpf.c)
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
MAIN_SRC := userspace/cli/egressctl.c
# userspace/<role>/*.c: cli, daemon, confine, inspect, proxy, dns, kernel, audit, policy, parse, lib
LIB_SRCS := $(filter-out $(MAIN_SRC),$(wildcard userspace/*/*.c))
LIB_OBJS := $(patsubst userspace/%.c,$(OUT)/obj/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
HELPER_SRCS := $(wildcard tests/helpers/*.c)
HELPER_BINS := $(patsubst tests/helpers/%.c,$(OUT)/helpers/%,$(HELPER_SRCS))
BPF_TEST_SRCS := $(wildcard tests/bpf/test_*.c)
BPF_TEST_BINS := $(patsubst tests/bpf/%.c,$(OUT)/tests/bpf/%,$(BPF_TEST_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
FMT_SRCS = $(wildcard bpf/*.c bpf/lib/*.h include/*.h userspace/*/*.c userspace/*/*.h \
		tests/unit/*.c tests/unit/*.h tests/bpf/*.c tests/bpf/*.h tests/fuzz/*.c tests/helpers/*.c \
		tools/dist/*.c)

.PHONY: all deps check-deps bench-deps check demo unit bpf-test asan fuzz e2e vmlinux format format-check spdx-check k8s-check clean helpers \
	bench bench-quick stress stress-check soak e2e-stress
.DELETE_ON_ERROR:
.SECONDARY:

all: $(OUT)/egressctl helpers

helpers: $(HELPER_BINS) $(OUT)/helpers/egressctl-test

$(OUT) $(OUT)/tests $(OUT)/tests/bpf $(OUT)/helpers $(OUT)/fuzz:
	mkdir -p $@

# BPF: compile, strip DWARF (BTF stays), generate the skeleton. BTF's line
# info names the source files: relative to the tree, not where it was built.
$(OUT)/%.bpf.o: bpf/%.bpf.c | $(OUT)
	$(CLANG) -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
		-fdebug-prefix-map=$(CURDIR)=. -Ivmlinux/$(ARCH) -Iinclude -Ibpf $(DEPFLAGS) \
		-c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@
	rm -f $@.tmp

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# The skeletons are order-only: they must exist before the first compile;
# after it, the .d files say which object reads which.
$(OUT)/obj/%.o: userspace/%.c | $(SKELS) $(OUT)/paths.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OUT)/egressctl: $(MAIN_SRC) $(LIB_OBJS) | $(OUT) $(SKELS)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS)

# The same binary with test-only options (--test-skip-prog), for e2e tests of
# the layers behind each program. Never installed.
$(OUT)/helpers/egressctl-test: $(MAIN_SRC) $(LIB_OBJS) | $(OUT)/helpers $(SKELS)
	$(CC) $(ALL_CFLAGS) -DEGR_TESTING $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS)

$(OUT)/tests/%: tests/unit/%.c $(LIB_OBJS) | $(OUT)/tests $(SKELS)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS) -lcmocka

# test_proto: the proxy's protocols over a fake connection core
# (tests/unit/conn_fake.h stands in for proxy.c, conn.c and relay.c), so it
# links the protocols, the parsers, the rule engine and lib/ alone.
PROTO_TEST_OBJS := $(addprefix $(OUT)/obj/,$(addsuffix .o,proxy/http_proxy proxy/http_ex \
	proxy/http_fwd proxy/socks_proxy proxy/tproxy proxy/judge proxy/proto policy/policy \
	policy/htab policy/rule policy/addr policy/match policy/route policy/words policy/secret \
	policy/hook proxy/http_hook)) \
	$(filter $(OUT)/obj/parse/% $(OUT)/obj/lib/%,$(LIB_OBJS))
$(OUT)/tests/test_proto: tests/unit/test_proto.c $(PROTO_TEST_OBJS) | $(OUT)/tests $(SKELS)
	$(CC) $(ALL_CFLAGS) -Itests/unit $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS) -lcmocka

# BPF objects of the tests alone (tests/bpf/*.bpf.c: a parser in a program
# of its own), built as bpf/'s are.
BPF_TEST_SKELS := $(patsubst tests/bpf/%.bpf.c,$(OUT)/tests/bpf/%.skel.h,$(wildcard tests/bpf/*.bpf.c))
$(OUT)/tests/bpf/%.bpf.o: tests/bpf/%.bpf.c | $(OUT)/tests/bpf
	$(CLANG) -g -O2 -Wall -Werror -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) \
		-Ivmlinux/$(ARCH) -Iinclude -Ibpf $(DEPFLAGS) -c $< -o $@.tmp
	$(LLVM_STRIP) -g $@.tmp -o $@
	rm -f $@.tmp
$(OUT)/tests/bpf/%.skel.h: $(OUT)/tests/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

# BPF_PROG_TEST_RUN of the programs in the skeleton (tests/bpf/, root).
$(OUT)/tests/bpf/%: tests/bpf/%.c $(LIB_OBJS) | $(OUT)/tests/bpf $(SKELS) $(BPF_TEST_SKELS)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS) -lcmocka

$(OUT)/helpers/%: tests/helpers/%.c $(LIB_OBJS) | $(OUT)/helpers $(SKELS)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@ $(LDLIBS)

# libFuzzer: the library compiled again with clang and coverage.
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE $(WARN) -Iinclude -Iuserspace -I$(OUT) $(PKG_CFLAGS) \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_OBJS := $(patsubst userspace/%.c,$(OUT)/fuzz/obj/%.o,$(LIB_SRCS))
$(OUT)/fuzz/obj/%.o: userspace/%.c | $(SKELS) $(OUT)/paths.h
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) $(DEPFLAGS) -c $< -o $@
$(OUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_OBJS) | $(OUT)/fuzz $(SKELS)
	$(CLANG) $(FUZZ_CFLAGS) $(DEPFLAGS) -fsanitize=fuzzer $(filter %.c %.o,$^) -o $@ $(LDLIBS)

# Each test is its own job (make -j runs them side by side), its output
# printed whole when it ends.
unit: $(patsubst %,%.run,$(UNIT_BINS))
$(OUT)/tests/%.run: $(OUT)/tests/% FORCE
	@rc=0; $< >$@.log 2>&1 || rc=$$?; echo "== $<"; cat $@.log; \
		[ $$rc = 0 ] || { echo "$<: exit $$rc"; exit 1; }

# Root (BPF_PROG_TEST_RUN, a network namespace, cgroups); exit 77 = skipped.
bpf-test: $(BPF_TEST_BINS)
	@set -e; for t in $(BPF_TEST_BINS); do echo "== $$t"; rc=0; $$t || rc=$$?; \
		if [ $$rc = 77 ]; then echo "$$t: skipped (not root)"; \
		elif [ $$rc != 0 ]; then exit $$rc; fi; done

# The ASan+UBSan build, in $(OUT)/asan
ASAN_MAKE = $(MAKE) OUT=$(OUT)/asan SANITIZE=address,undefined CFLAGS="-O1 -g"

# (+: ASAN_MAKE hides $(MAKE) from make, which then would not hand the
# sub-make its jobserver, and the ASan build would run one job at a time)
asan:
	+$(ASAN_MAKE) unit

# Each target is its own job, so make -j runs them side by side.
fuzz: $(patsubst %,%.run,$(FUZZ_BINS))
$(OUT)/fuzz/%.run: $(OUT)/fuzz/% FORCE
	@n=$*; mkdir -p $(OUT)/fuzz/corpus-$$n; \
	echo "== $$n ($(FUZZ_SECONDS)s)"; \
	$< -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 \
		$$( [ -f tests/fuzz/$$n.dict ] && echo -dict=tests/fuzz/$$n.dict ) \
		$(OUT)/fuzz/corpus-$$n $$( [ -d tests/fuzz/corpus/$$n ] && echo tests/fuzz/corpus/$$n ) \
		2>$(OUT)/fuzz/$$n.log || { tail -40 $(OUT)/fuzz/$$n.log; exit 1; }

# The end-to-end suites, by concern (docs/testing.md), E2E_JOBS at a time
# (tests/e2e/all.sh): all run, then the target fails if any did. Listed
# longest first, so the last to start are short.
E2E_JOBS ?= 2
E2E_SUITES := package daemon proxy docker limits run dns kverify ci containers direct cisudo ipv6 \
	service sudo ask nosudo loopback dist inspect audit unix upstream existing
e2e: all dist
	@tests/e2e/all.sh $(E2E_JOBS) $(OUT)/egressctl $(E2E_SUITES)

# make check: the suites and stress-check's two runs in one pool (all.sh's
# "stress" and "stress-asan"), placed by length among the suites
CHECK_SUITES := package stress daemon proxy stress-asan $(filter-out package daemon proxy,$(E2E_SUITES))
e2e-stress: all dist
	+$(ASAN_MAKE) all
	@E2E_ASAN_EGRESSCTL=$(OUT)/asan/egressctl tests/e2e/all.sh $(E2E_JOBS) $(OUT)/egressctl $(CHECK_SUITES)

# The stress suite (root): every case at full size.
stress: deps
	$(MAKE) all
	tests/stress/stress.sh $(OUT)/egressctl

# What `make check` runs beside the e2e suites: every case shortened, then
# the fault cases again against an ASan+UBSan egressctl (a report fails
# them); all.sh's "stress" and "stress-asan", one after the other.
stress-check: all
	+$(ASAN_MAKE) all
	@E2E_ASAN_EGRESSCTL=$(OUT)/asan/egressctl tests/e2e/all.sh 1 $(OUT)/egressctl stress stress-asan

# Mixed traffic for SOAK_SECONDS; RSS and descriptors must stay flat. Not in CI.
soak: deps
	$(MAKE) all
	STRESS_SOAK_SECONDS=$(SOAK_SECONDS) E2E_TESTS=soak tests/stress/stress.sh $(OUT)/egressctl

deps:
	@tools/install-deps.sh

# make check also runs tests/e2e/containers.sh and docker.sh: container runtimes too
check-deps:
	@tools/install-deps.sh --containers

# The unit tests run once, under ASan+UBSan (make asan); the package's
# build runs them unsanitized (dh_auto_test, tests/e2e/package.sh).
check: check-deps
	$(MAKE) format-check
	$(MAKE) spdx-check
	$(MAKE) k8s-check
	$(MAKE) -j$(BUILD_JOBS) all
	$(MAKE) -j$(BUILD_JOBS) bpf-test
	$(MAKE) -j$(BUILD_JOBS) asan
	$(MAKE) -j$(FUZZ_JOBS) fuzz FUZZ_SECONDS=$(CHECK_FUZZ_SECONDS)
	$(MAKE) -j$(BUILD_JOBS) e2e-stress

demo: deps
	$(MAKE) all
	tools/demo.sh $(OUT)/egressctl

# Benchmark (root; installs what it needs: tools/install-deps.sh --bench):
# one table on stdout, bench-results.json in the repo root.
bench-deps:
	@tools/install-deps.sh --bench

bench: bench-deps
	$(MAKE) all
	tools/bench/run.sh $(OUT)/egressctl

bench-quick: bench-deps
	$(MAKE) all
	tools/bench/run.sh --quick $(OUT)/egressctl

vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

format:
	clang-format -i $(FMT_SRCS)

format-check:
	clang-format --dry-run --Werror $(FMT_SRCS)

# Every source file names its licence (debian/copyright's) in an SPDX line.
# contrib/kubernetes/ against the Kubernetes API's models, offline (Debian's
# python3-kubernetes), and its Helm chart rendered and compared (~1 s)
k8s-check:
	/usr/bin/python3 tools/k8s-check.py

spdx-check:
	tools/spdx-check.sh

clean:
	rm -rf $(OUT)

# ---- Installing: VERSION, man pages, make install/uninstall, ----------------
# ---- make deb, make package-check --------------------------------------------
#   make install      PREFIX (/usr/local), DESTDIR; BINDIR, MANDIR, ... below
#   make uninstall    removes exactly the files install put there
#   make man          build/man/egressctl.1, egressctl-policy.5 (scdoc)
#   make deb          build/deb/egressctl_VERSION_amd64.deb (dpkg-buildpackage)
#   sudo make package-check  tests/e2e/package.sh: install, deb, lintian, apt

# The version compiled in (-DEGR_VERSION) and shown by the man pages: git
# describe in a git checkout (a tag v0.1.0 gives 0.1.0; no tag yet, the
# commit), else the version of debian/changelog; the Debian build passes
# its own (make VERSION=...).
ifneq ($(origin VERSION),command line)
VERSION := $(patsubst v%,%,$(shell [ -e .git ] && git describe --tags --always --dirty 2>/dev/null))
ifeq ($(VERSION),)
VERSION := $(shell sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog 2>/dev/null)
endif
endif
ALL_CFLAGS += $(CPPFLAGS) $(if $(VERSION),-DEGR_VERSION=\"$(VERSION)\")

# $(OUT)/version changes only when VERSION does; what may show the version
# (the binaries, the cli objects, the man pages) is rebuilt then.
# .EXTRA_PREREQS: a prerequisite that stays out of $^ (explicit targets
# only: make 4.3 ignores it on pattern rules).
$(OUT)/version: FORCE | $(OUT)
	@[ "$$(cat $@ 2>/dev/null)" = '$(VERSION)' ] || echo '$(VERSION)' > $@
FORCE:

MAN_PAGES := $(patsubst man/%.scd,$(OUT)/man/%,$(wildcard man/*.scd))
$(OUT)/egressctl $(OUT)/helpers/egressctl-test $(filter $(OUT)/obj/cli/%,$(LIB_OBJS)) \
	$(MAN_PAGES): .EXTRA_PREREQS = $(OUT)/version

# The paths egressctl reads and writes, as configured (PREFIX, SYSCONFDIR,
# RUNSTATEDIR below), baked into $(OUT)/paths.h's EGR_SYSCONFDIR and
# EGR_RUNDIR: the binary, --help, the man pages and the unit all say the
# paths make install writes. $(OUT)/paths.h changes only when they do;
# every object waits for it (order-only) and the .d files say which read it.
$(OUT)/paths.h: FORCE | $(OUT)
	@printf '#define EGR_SYSCONFDIR "%s/egressctl"\n#define EGR_RUNDIR "%s/egressctl"\n' \
		'$(SYSCONFDIR)' '$(RUNSTATEDIR)' > $@.tmp && \
		{ cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }
$(MAN_PAGES): .EXTRA_PREREQS += $(OUT)/paths.h

man: $(MAN_PAGES)
$(OUT)/man/%: man/%.scd
	@mkdir -p $(dir $@)
	sed 's/@VERSION@/$(VERSION)/g; s|@SYSCONFDIR@|$(SYSCONFDIR)/egressctl|g; s|@RUNDIR@|$(RUNSTATEDIR)/egressctl|g' $< | scdoc > $@

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/egressctl
CIDIR ?= $(DATADIR)/egressctl/ci
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
# Run-time state (sockets, the pid file) lives under /run whatever the
# PREFIX: systemd and the FHS put it there, and /usr/local/var/run is nobody's.
RUNSTATEDIR ?= /run
UNITDIR ?= $(PREFIX)/lib/systemd/system
LOGROTATEDIR ?= $(SYSCONFDIR)/logrotate.d

# The daemon's unit and configuration name the installed paths.
$(OUT)/contrib/%: contrib/%.in FORCE
	@mkdir -p $(dir $@)
	@sed 's|@BINDIR@|$(BINDIR)|g; s|@SYSCONFDIR@|$(SYSCONFDIR)|g; s|@RUNSTATEDIR@|$(RUNSTATEDIR)|g' $< >$@.tmp && \
		{ cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@; }

# The documentation (docs/*.md) and the CI integration (contrib/ci/: the
# GitHub Action's scripts, GitLab's, Buildkite's hooks, their library), each
# file as it is in the tree, executable or not.
DOC_FILES := $(sort $(wildcard docs/*.md))
CI_FILES := $(sort $(shell find contrib/ci -type f))
CI_EXEC := $(shell find contrib/ci -type f -perm -u+x)
CI_DIRS := $(patsubst contrib/ci%,$(CIDIR)%,$(shell find contrib/ci -type d))

# Every installed file, one line each: SOURCE:DESTINATION:MODE. A file under
# $(SYSCONFDIR) is configuration: install keeps one that exists, uninstall
# removes it only when unchanged. (The Debian package adds
# /etc/init.d/egressctl, debian/egressctl.init, with dh_installinit.)
INSTALL_FILES = \
	$(OUT)/contrib/systemd/egressctl.service:$(UNITDIR)/egressctl.service:644 \
	$(OUT)/contrib/systemd/egressctl-users.service:$(UNITDIR)/egressctl-users.service:644 \
	contrib/users.json:$(SYSCONFDIR)/egressctl/users.json:644 \
	$(OUT)/contrib/daemon.json:$(SYSCONFDIR)/egressctl/daemon.json:644 \
	contrib/default-policy.json:$(SYSCONFDIR)/egressctl/policy.json:644 \
	$(OUT)/contrib/logrotate:$(LOGROTATEDIR)/egressctl:644 \
	$(OUT)/egressctl:$(BINDIR)/egressctl:755 \
	$(OUT)/man/egressctl.1:$(MANDIR)/man1/egressctl.1:644 \
	$(OUT)/man/egressctl-policy.5:$(MANDIR)/man5/egressctl-policy.5:644 \
	contrib/completion/egressctl.bash:$(BASHCOMPDIR)/egressctl:644 \
	contrib/completion/_egressctl:$(ZSHCOMPDIR)/_egressctl:644 \
	contrib/policy.json:$(DOCDIR)/examples/policy.json:644 \
	$(foreach f,$(DOC_FILES),$f:$(DOCDIR)/$(notdir $f):644) \
	$(foreach f,$(CI_FILES),$f:$(CIDIR)/$(f:contrib/ci/%=%):$(if $(filter $f,$(CI_EXEC)),755,644))
# Directories that are egressctl's alone, removed by uninstall once empty
# (the deepest first).
INSTALL_DIRS = $(DOCDIR)/examples $(DOCDIR) $(SYSCONFDIR)/egressctl $(CI_DIRS) \
	$(DATADIR)/egressctl

install: $(foreach f,$(INSTALL_FILES),$(firstword $(subst :, ,$f)))
	@set -e; for f in $(INSTALL_FILES); do \
		src=$${f%%:*}; dst=$${f#*:}; mode=$${dst##*:}; dst=$(DESTDIR)$${dst%:*}; \
		case $$dst in $(DESTDIR)$(SYSCONFDIR)/*) if [ -e "$$dst" ]; then \
			echo "  kept $$dst (exists)"; continue; fi;; esac; \
		echo "  install $$src $$dst"; \
		install -D -m "$$mode" "$$src" "$$dst"; \
	done

uninstall:
	@for f in $(INSTALL_FILES); do \
		src=$${f%%:*}; dst=$${f#*:}; dst=$(DESTDIR)$${dst%:*}; \
		[ -e "$$dst" ] || [ -L "$$dst" ] || continue; \
		case $$dst in $(DESTDIR)$(SYSCONFDIR)/*) if ! cmp -s "$$src" "$$dst"; then \
			echo "  kept $$dst (changed)"; continue; fi;; esac; \
		echo "  rm $$dst"; rm -f "$$dst"; \
	done; \
	for d in $$(printf '%s\n' $(INSTALL_DIRS) | awk '{ print length($$0), $$0 }' | sort -rn | cut -d' ' -f2-); do \
		[ -d "$(DESTDIR)$$d" ] && rmdir "$(DESTDIR)$$d" 2>/dev/null || true; \
	done

# The package is built by dpkg-buildpackage in a copy of the tree (so that
# build/ and the parent directory stay as they are); the .deb files land in
# $(OUT)/deb/. dpkg-buildpackage -us -uc -b in the tree works too (output
# in ..).
DEB_OUT := $(OUT)/deb
deb:
	rm -rf $(DEB_OUT) && mkdir -p $(DEB_OUT)/src
	tar -c --exclude-vcs --exclude=./build --exclude=./build-* --exclude=./$(OUT) \
		--exclude=./debian/build --exclude=./debian/egressctl . | tar -x -C $(DEB_OUT)/src
	cd $(DEB_OUT)/src && dpkg-buildpackage -us -uc -b -jauto
	rm -rf $(DEB_OUT)/src
	@ls $(DEB_OUT)/*.deb

# tests/e2e/package.sh: install, uninstall, the package and its lintian, apt
# install and purge, the man pages, README and completion against --help
# (root for the apt part). One of the e2e suites, so make check runs it.
package-check: all
	tests/e2e/package.sh $(OUT)/egressctl

.PHONY: man install uninstall deb package-check FORCE

# ---- The release artifact: make dist, make dist-sums -------------------------
#   make dist       $(OUT)/dist/egressctl-VERSION-linux-amd64.tar.gz and
#                   $(OUT)/dist/SHA256SUMS: one binary with every library but
#                   glibc linked in, for glibc 2.31 and later (the BPF objects
#                   are in it already, as skeletons), the man pages, the
#                   completion, the CI integration and the licences
#   make dist-sums  the same, and its checksum into contrib/ci/SHA256SUMS,
#                   which the GitHub Action checks its download against
#                   (docs/ci.md, "Releases")
# Reproducible where it costs nothing: names sorted, owner 0, every mtime
# SOURCE_DATE_EPOCH (the commit's time), gzip without a name or time, the
# binary stripped of its debug sections, debug info and BTF naming files
# relative to the tree (ALL_CFLAGS, the BPF rule).

DIST_DIR := $(OUT)/dist
DIST_NAME = egressctl-$(VERSION)-linux-amd64
DIST_GLIBC := 2.31
STRIP ?= strip
# the time of the last commit but one that only writes contrib/ci/SHA256SUMS
# (make dist-sums): the tarball built before that commit and the one built
# again at the release's tag are the same file
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct -- . ':(exclude)contrib/ci/SHA256SUMS' 2>/dev/null || \
	stat -c %Y debian/changelog)
# every library but glibc from its static archive; libpthread.so.0 and
# libdl.so.2 named, since glibc 2.31 has pthread_create and dlopen there
# (tools/dist/glibc-compat.c)
DIST_LIBS = -Wl,-Bstatic $(shell pkg-config --static --libs $(PKGS)) -Wl,-Bdynamic \
	-Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state -lm
# the Debian packages whose static archives are linked in: their copyright
# files go into the tarball beside egressctl's licences
DIST_LIB_PKGS := libbpf1 libelf1 zlib1g libevent-2.1-7 libc-ares2 libjansson4 libssl3

$(OUT)/obj/dist/glibc-compat.o: tools/dist/glibc-compat.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) -c $< -o $@

# tools/dist/check-binary.sh fails the build on a shared library that is
# not glibc's or a symbol version above DIST_GLIBC.
$(DIST_DIR)/egressctl: $(MAIN_SRC) $(LIB_OBJS) $(OUT)/obj/dist/glibc-compat.o | $(SKELS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(DEPFLAGS) $(LDFLAGS) $(filter %.c %.o,$^) -o $@.tmp $(DIST_LIBS)
	$(STRIP) --strip-debug $@.tmp
	tools/dist/check-binary.sh $@.tmp $(DIST_GLIBC)
	mv $@.tmp $@
$(DIST_DIR)/egressctl: .EXTRA_PREREQS = $(OUT)/version

# The tree a user unpacks into a prefix (tar -C /usr/local
# --strip-components=1): bin/, share/man, the completion, share/egressctl/ci
# (contrib/ci/ but its SHA256SUMS, which names this tarball), the licences.
dist: $(DIST_DIR)/egressctl $(MAN_PAGES)
	@set -e; d=$(DIST_DIR)/$(DIST_NAME); rm -rf "$$d" $(DIST_DIR)/*.tar.gz $(DIST_DIR)/SHA256SUMS; \
	umask 022; \
	install -D -m 755 $(DIST_DIR)/egressctl "$$d/bin/egressctl"; \
	install -D -m 644 $(OUT)/man/egressctl.1 "$$d/share/man/man1/egressctl.1"; \
	install -D -m 644 $(OUT)/man/egressctl-policy.5 "$$d/share/man/man5/egressctl-policy.5"; \
	install -D -m 644 contrib/completion/egressctl.bash "$$d/share/bash-completion/completions/egressctl"; \
	install -D -m 644 contrib/completion/_egressctl "$$d/share/zsh/site-functions/_egressctl"; \
	for f in $(filter-out contrib/ci/SHA256SUMS,$(CI_FILES)); do \
		if [ -x "$$f" ]; then m=755; else m=644; fi; \
		install -D -m $$m "$$f" "$$d/share/egressctl/ci/$${f#contrib/ci/}"; \
	done; \
	install -D -m 644 LICENSE "$$d/share/doc/egressctl/LICENSE"; \
	for f in bpf/LICENSE.*; do install -D -m 644 "$$f" "$$d/share/doc/egressctl/bpf/$${f#bpf/}"; done; \
	for p in $(DIST_LIB_PKGS); do \
		install -D -m 644 "/usr/share/doc/$$p/copyright" "$$d/share/doc/egressctl/linked/$$p.copyright"; \
	done; \
	tar --format=gnu --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner \
		--mode=go-w -C $(DIST_DIR) -cf - $(DIST_NAME) | gzip -9n >"$$d.tar.gz"; \
	rm -rf "$$d"; \
	cd $(DIST_DIR) && sha256sum $(DIST_NAME).tar.gz >SHA256SUMS
	@cat $(DIST_DIR)/SHA256SUMS

dist-sums: dist
	@{ echo "# The GitHub Action's release tarball at this commit and its SHA-256: the"; \
	   echo "# Action downloads that file and refuses any other. Written by make dist-sums"; \
	   echo "# (docs/ci.md, \"Releases\"); no line: no release, the Action needs build: true."; \
	   cat $(DIST_DIR)/SHA256SUMS; } >contrib/ci/SHA256SUMS
	@echo "contrib/ci/SHA256SUMS: $$(tail -1 contrib/ci/SHA256SUMS)"

# tests/e2e/dist.sh: the tarball's binary (glibc's libraries only) confines
# a command in a root of busybox and glibc alone; the Action downloads it,
# refuses a tampered one, and builds only when asked.

.PHONY: dist dist-sums

# What each compiler run read (DEPFLAGS); missing before the first build.
DEP_FILES := $(addsuffix .d,$(OUT)/egressctl $(OUT)/helpers/egressctl-test $(LIB_OBJS) $(UNIT_BINS) \
	$(HELPER_BINS) $(BPF_TEST_BINS) $(FUZZ_OBJS) $(FUZZ_BINS) $(SKELS:.skel.h=.bpf.o) \
	$(BPF_TEST_SKELS:.skel.h=.bpf.o) $(DIST_DIR)/egressctl $(OUT)/obj/dist/glibc-compat.o)
-include $(wildcard $(DEP_FILES))
