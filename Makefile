# sbx — build, check, install, run, bench, fuzz. `make help` lists targets.
ifeq ($(origin CC),default)
CC       := gcc
endif
PREFIX   ?= /usr/local
DESTDIR  ?=
VERSION  := 0.1.0

CFLAGS   ?= -O2
CFLAGS   += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 \
            -fstack-protector-strong -g -MMD -MP -DSBX_VERSION='"$(VERSION)"'
# --as-needed: a program loads only the libraries it calls (libcrypto alone
# costs a launch about a millisecond).
LDFLAGS  += -Wl,--as-needed
LDLIBS   := -ljansson -lseccomp -lssl -lcrypto -lcap-ng -lmicrohttpd -lsqlite3 -lcurl -lpthread
# runnerVersion: the commit's 8 hex digits, "-dirty" with local changes.
BUILD_ID := $(or $(shell git rev-parse --short=8 HEAD 2>/dev/null),unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
# try-syscall probes raw syscalls: sanitizer interceptors would change what it
# calls, so it is always built from the plain flags.
PLAIN_CFLAGS := $(filter-out -MMD -MP,$(CFLAGS))
ifeq ($(SAN),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

LIB_SRC  := $(wildcard src/lib/*.c)
LIB_OBJ  := $(LIB_SRC:src/%.c=build/%.o)
PROGRAMS := $(patsubst src/%/main.c,bin/%,$(wildcard src/sbx-*/main.c))
# Programs that run inside sandboxes are built from the plain flags even
# under SAN=1: LeakSanitizer needs ptrace, which the seccomp filter refuses.
IN_SANDBOX := bin/sbx-report bin/sbx-egress-bridge bin/sbx-seccomp-notify
REPORT_SRC := src/sbx-report/main.c $(addprefix src/lib/,channel.c channel_schema.c json.c cli.c \
              diag.c error.c exitcodes.c io.c path.c)
UNIT_SRC := $(wildcard test/unit/test_*.c)
UNITS    := $(UNIT_SRC:test/unit/%.c=bin/test/%) bin/test/try-syscall bin/test/libdcmi.so bin/test/uds-flood
MANPAGES := $(patsubst man/%.scd,build/man/%,$(wildcard man/*.scd))

.PHONY: all deps deps-image deps-slurm check lint valgrind run install uninstall image clean bench fuzz help FORCE
all: $(PROGRAMS) $(MANPAGES)

help:
	@echo "make [all]      build every program into bin/ (SAN=1: ASan+UBSan, CC=clang)"
	@echo "make deps       install build and test dependencies (apt-get)"
	@echo "make check      deps + build + unit tests + bats suites (root and sbxtest)"
	@echo "make run        build and run sbx-httpd in the foreground (data dir and token in .sciencediscovery-data)"
	@echo "make install    PREFIX=$(PREFIX) DESTDIR=$(DESTDIR)"
	@echo "make image      the container image localhost/sbx:$(VERSION) (mmdebstrap + podman; root)"
	@echo "make deps-image install podman, buildah, mmdebstrap, runc (apt-get)"
	@echo "make deps-slurm install slurmctld, slurmd, munge for test/bats/slurm.bats (apt-get)"
	@echo "make bench      benchmarks, printed as ratios against an anchor"
	@echo "make fuzz       each libFuzzer target for FUZZ_SECONDS (default 30)"
	@echo "make lint       cppcheck and clang-tidy (.clang-tidy) over src/; any finding fails"
	@echo "make valgrind   every unit test under valgrind memcheck (plain build)"

deps:
	@sh mk/deps.sh

deps-image:
	@sh mk/deps-image.sh

deps-slurm:
	@sh mk/deps-slurm.sh

# Every object depends on the exact compiler and flags: switching SAN or CC
# rebuilds everything instead of linking mixed objects.
build/flags: FORCE
	@mkdir -p build
	@echo '$(CC) $(CFLAGS) $(LDFLAGS)' | cmp -s - $@ || echo '$(CC) $(CFLAGS) $(LDFLAGS)' > $@

build/%.o: src/%.c build/flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

build/build-id: FORCE
	@mkdir -p build
	@echo '$(BUILD_ID)' | cmp -s - $@ || echo '$(BUILD_ID)' > $@

build/sbx-httpd/main.o: build/build-id
build/sbx-httpd/main.o: CFLAGS += -DSBX_BUILD_ID='"$(BUILD_ID)"'

# The archive's member list: a file that leaves src/lib (moved into its
# program's folder) leaves the archive too, not only new objects re-enter.
build/lib-objs: FORCE
	@mkdir -p build
	@echo '$(LIB_OBJ)' | cmp -s - $@ || echo '$(LIB_OBJ)' > $@

build/libsbx.a: $(LIB_OBJ) build/lib-objs
	@rm -f $@
	$(AR) rcs $@ $(LIB_OBJ)

# One link rule per program: the objects of src/<program>/ plus libsbx.
define program_rule
bin/$(1): $(patsubst src/%.c,build/%.o,$(wildcard src/$(1)/*.c)) build/libsbx.a
	@mkdir -p bin
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach p,$(filter-out $(IN_SANDBOX),$(PROGRAMS)),$(eval $(call program_rule,$(p:bin/%=%))))

# sbx-launch and sbx-run start once per execution, on its path, where the
# dynamic loader cost more than their own work: sbx-launch is a static PIE
# (it reads passwd with fgetpwent, never through NSS); sbx-run keeps libc
# dynamic (NSS, dlopen of an NPU library) and links jansson, libcrypto and
# libcap-ng in (libcrypto's relocations alone were ~0.6 ms of CPU a start).
# A security update of those libraries takes a rebuild of these two. The
# sanitizers need a dynamic link.
ifneq ($(SAN),1)
bin/sbx-launch: LDFLAGS += -static-pie
bin/sbx-launch: LDLIBS := -ljansson -lseccomp
bin/sbx-run: LDLIBS := -Wl,-Bstatic -ljansson -lcrypto -lcap-ng -lseccomp -Wl,-Bdynamic -lpthread -ldl
# sbx-ws starts once per remote-workspace request: the same static
# jansson and libcrypto (libcrypto's relocations dominate its start).
bin/sbx-ws: LDLIBS := -Wl,-Bstatic -ljansson -lcrypto -Wl,-Bdynamic -lpthread -ldl
# sbx-secrets too: sbx-httpd runs it for every /secrets request and every
# execution that names secrets.
bin/sbx-secrets: LDLIBS := -Wl,-Bstatic -ljansson -lcrypto -Wl,-Bdynamic -lpthread -ldl
endif

# sbx-report, the egress bridge and sbx-seccomp-notify are bound into
# sandboxes that may hold no libraries at all: all three are static.
bin/sbx-report: $(REPORT_SRC) build/flags
	@mkdir -p bin
	$(CC) $(PLAIN_CFLAGS) -static -o $@ $(REPORT_SRC) -ljansson

NOTIFY_SRC := src/sbx-seccomp-notify/main.c src/lib/fd_pass.c
bin/sbx-seccomp-notify: $(NOTIFY_SRC) build/flags
	@mkdir -p bin
	$(CC) $(PLAIN_CFLAGS) -static -o $@ $(NOTIFY_SRC)

BRIDGE_SRC := src/sbx-egress-bridge/main.c
bin/sbx-egress-bridge: $(BRIDGE_SRC) build/flags
	@mkdir -p bin
	$(CC) $(PLAIN_CFLAGS) -static -o $@ $(BRIDGE_SRC)

# Each program's own objects (main.o aside) as an archive: a unit test of
# a file in a program's room links that program's archive before libsbx.
define program_archive_rule
build/$(1).a: $(filter-out build/$(1)/main.o,$(patsubst src/%.c,build/%.o,$(wildcard src/$(1)/*.c)))
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach p,sbx-run sbx-launch sbx-httpd sbx-egress sbx-npu sbx-snap sbx-ws,$(eval $(call program_archive_rule,$(p))))
bin/test/test_output bin/test/test_run_document bin/test/test_spawn bin/test/test_seccomp_listen bin/test/test_audit_follow: TEST_ARCHIVES := build/sbx-run.a
bin/test/test_output bin/test/test_run_document bin/test/test_spawn bin/test/test_seccomp_listen bin/test/test_audit_follow: build/sbx-run.a
bin/test/test_launch_parts: TEST_ARCHIVES := build/sbx-launch.a
bin/test/test_launch_parts: build/sbx-launch.a
bin/test/test_json bin/test/test_metrics: TEST_ARCHIVES := build/sbx-httpd.a
bin/test/test_json bin/test/test_metrics: build/sbx-httpd.a
bin/test/test_http_head bin/test/test_gw_secrets: TEST_ARCHIVES := build/sbx-egress.a
bin/test/test_files: TEST_ARCHIVES := build/sbx-ws.a
bin/test/test_files: build/sbx-ws.a
bin/test/test_http_head bin/test/test_gw_secrets: build/sbx-egress.a
bin/test/test_npu_smi bin/test/test_gpu_nvidia: TEST_ARCHIVES := build/sbx-npu.a
bin/test/test_npu_smi bin/test/test_gpu_nvidia: build/sbx-npu.a

bin/test/%: test/unit/%.c test/unit/tmpdir.h build/libsbx.a build/flags
	@mkdir -p bin/test
	$(CC) $(CFLAGS) -Isrc/lib $(LDFLAGS) -o $@ $< $(TEST_ARCHIVES) build/libsbx.a $(LDLIBS) -lcmocka

# Test helpers that run inside sandboxes.
bin/test/try-syscall: test/fixtures/try-syscall.c build/flags
	@mkdir -p bin/test
	$(CC) $(PLAIN_CFLAGS) -o $@ $<

# Many short connections to a gateway's socket (the egress limits suite).
bin/test/uds-flood: test/fixtures/uds-flood.c build/flags
	@mkdir -p bin/test
	$(CC) $(PLAIN_CFLAGS) -pthread -o $@ $<

# A DCMI library for hosts without Ascend chips (sbx-npu dlopens it).
bin/test/libdcmi.so: test/fixtures/fake-dcmi.c build/flags
	@mkdir -p bin/test
	$(CC) $(PLAIN_CFLAGS) -shared -fPIC -o $@ $<

build/man/%: man/%.scd
	@mkdir -p build/man
	scdoc < $< > $@.tmp && mv $@.tmp $@

check: deps
	@$(MAKE) --no-print-directory all $(UNITS)
	@sh test/run.sh

lint:
	@sh mk/lint.sh

valgrind: $(UNITS)
	@sh mk/valgrind.sh

run: $(PROGRAMS)
	@sh mk/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -d $(DESTDIR)$(PREFIX)/share/sbx/workloads
	install -m 0644 share/sbx/workloads/* $(DESTDIR)$(PREFIX)/share/sbx/workloads/
	install -d $(DESTDIR)$(PREFIX)/share/sbx/python
	install -m 0644 share/sbx/python/sbx_report.py $(DESTDIR)$(PREFIX)/share/sbx/python/
	for m in $(MANPAGES); do \
		sec=$${m##*.}; install -m 0644 $$m $(DESTDIR)$(PREFIX)/share/man/man$$sec/; done
	@# The unprivileged user root-started launches run workloads as.
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" -eq 0 ] && ! getent passwd sbx >/dev/null; then \
		useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin sbx; \
		echo "created system user sbx"; fi

# localhost/sbx:$(VERSION) and :latest: a cached mmdebstrap base plus
# `make install` (mk/image.sh, Containerfile). Never of a SAN=1 build.
image:
	@SAN='$(SAN)' sh mk/image.sh $(VERSION) $(BUILD_ID)

uninstall:
	rm -f $(PROGRAMS:bin/%=$(DESTDIR)$(PREFIX)/bin/%)
	rm -rf $(DESTDIR)$(PREFIX)/share/sbx
	for m in $(MANPAGES); do sec=$${m##*.}; rm -f $(DESTDIR)$(PREFIX)/share/man/man$$sec/$${m##*/}; done

bench: all
	@bash bench/run.sh

fuzz:
	@sh fuzz/run.sh

clean:
	rm -rf bin build

-include $(LIB_OBJ:.o=.d) $(patsubst src/%.c,build/%.d,$(wildcard src/sbx-*/*.c))
