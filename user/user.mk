# User-space programs and tests (musl, static).  Included by the top Makefile:
#
#   make user        build tinit, every test in user/tests/, build/initramfs-test.cpio
#   make user-test   run them on this host (tools/hosttest.py)
#
# Self-contained: every variable here starts with USER_ (USER_BIN is the list
# of built binaries); everything is written under build/user/.

USER_CC      ?= musl-gcc
USER_PYTHON  ?= python3
USER_OUT     := build/user
USER_CFLAGS  := -static -std=gnu11 -O2 -g -Wall -Wextra -Werror -Iuser/lib -MMD -MP
USER_LDFLAGS := -static
USER_BUSYBOX ?= $(wildcard /bin/busybox)

USER_LIB_SRCS  := $(wildcard user/lib/*.c)
USER_LIB_OBJS  := $(patsubst user/lib/%.c,$(USER_OUT)/lib/%.o,$(USER_LIB_SRCS))
USER_TEST_SRCS := $(sort $(wildcard user/tests/*.c))
USER_TESTS     := $(patsubst user/tests/%.c,%,$(USER_TEST_SRCS))
USER_TEST_BIN  := $(addprefix $(USER_OUT)/tests/,$(USER_TESTS))
# Go programs (user/go/NAME/: main.go, go.mod; no dependencies): tests too,
# built static with the Go toolchain (CGO_ENABLED=0), offline.
USER_GO        ?= go
USER_GO_TESTS  := $(sort $(notdir $(patsubst %/,%,$(dir $(wildcard user/go/*/go.mod)))))
USER_GO_BIN    := $(addprefix $(USER_OUT)/tests/,$(USER_GO_TESTS))
USER_GO_ENV    := CGO_ENABLED=0 GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod \
		  GOCACHE=$(abspath $(USER_OUT)/go/cache) GOPATH=$(abspath $(USER_OUT)/go/path)
USER_BIN       := $(USER_OUT)/tinit $(USER_TEST_BIN) $(USER_GO_BIN)
USER_INITRAMFS := build/initramfs-test.cpio

# Tools that run in the guest (user/bin/*.c -> /bin of the default initramfs).
USER_TOOL_SRCS := $(sort $(wildcard user/bin/*.c))
USER_TOOLS     := $(patsubst user/bin/%.c,$(USER_OUT)/bin/%,$(USER_TOOL_SRCS))

# Benchmarks (make bench): user/bench/*.c; exit0 and bhelper are helpers, not in the list.
USER_BENCH_SRCS := $(sort $(wildcard user/bench/*.c))
USER_BENCH_BIN  := $(patsubst user/bench/%.c,$(USER_OUT)/bench/%,$(USER_BENCH_SRCS))
USER_BENCH_LIST := $(filter-out exit0 bhelper,$(patsubst user/bench/%.c,%,$(USER_BENCH_SRCS)))
USER_BENCH_INITRAMFS := build/initramfs-bench.cpio
USER_UQ        := $(if $(V),,@)

.PHONY: user user-test user-clean user-bench

user: $(USER_BIN) $(USER_OUT)/tests/LIST $(USER_INITRAMFS)

user-bench: $(USER_BENCH_INITRAMFS)

user-test: user
	$(USER_PYTHON) tools/hosttest.py

user-clean:
	rm -rf $(USER_OUT) $(USER_INITRAMFS)

$(USER_OUT)/lib/%.o: user/lib/%.c
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  MUSLCC  $<")
	$(USER_UQ)$(USER_CC) $(USER_CFLAGS) -c $< -o $@

$(USER_OUT)/tests/%.o: user/tests/%.c
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  MUSLCC  $<")
	$(USER_UQ)$(USER_CC) $(USER_CFLAGS) -c $< -o $@

$(USER_OUT)/tests/%: $(USER_OUT)/tests/%.o $(USER_LIB_OBJS)
	@$(if $(USER_UQ),echo "  MUSLLD  $@")
	$(USER_UQ)$(USER_CC) $(USER_LDFLAGS) -o $@ $^

$(USER_GO_BIN): $(USER_OUT)/tests/%: user/go/%/go.mod $(wildcard user/go/*/*.go)
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  GO      $@")
	$(USER_UQ)cd user/go/$* && $(USER_GO_ENV) $(USER_GO) build -trimpath -o $(abspath $@) .

# The list of tests, in order: the file /tests/LIST in the initramfs and the
# list compiled into tinit (used when /tests/LIST cannot be read).
$(USER_OUT)/tests/LIST: $(USER_TEST_SRCS) $(wildcard user/go/*/go.mod) user/user.mk
	@mkdir -p $(dir $@)
	$(USER_UQ)printf '%s\n' $(USER_TESTS) $(USER_GO_TESTS) > $@.tmp && \
		(cmp -s $@.tmp $@ || mv $@.tmp $@); rm -f $@.tmp

$(USER_OUT)/tinit_list.h: $(USER_OUT)/tests/LIST
	$(USER_UQ)sed 's/.*/"&",/' $< > $@

$(USER_OUT)/tinit.o: user/tinit.c $(USER_OUT)/tinit_list.h
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  MUSLCC  $<")
	$(USER_UQ)$(USER_CC) $(USER_CFLAGS) -I$(USER_OUT) -c $< -o $@

$(USER_OUT)/tinit: $(USER_OUT)/tinit.o
	@$(if $(USER_UQ),echo "  MUSLLD  $@")
	$(USER_UQ)$(USER_CC) $(USER_LDFLAGS) -o $@ $^

# Prebuilt data for tests that need files when /tmp is not writable (the
# guest before tmpfs): bad ELF files, non-executable files, #! scripts whose
# interpreter is /tests/exec_script.
# exec_dynamic's dynamically linked helper (its interpreter path is a long
# placeholder the test rewrites) and musl's loader.
USER_MUSL_LOADER := $(firstword $(wildcard /lib/ld-musl-x86_64.so.1 /usr/lib/x86_64-linux-musl/libc.so))
USER_DYN_INTERP := /$(shell printf 'x%.0s' $$(seq 1 200))
$(USER_OUT)/tests/data/STAMP: $(USER_OUT)/tests/exec_errors $(USER_OUT)/tests/exec_script user/tests/data_src/dyn_hello.c
	@rm -rf $(dir $@) && mkdir -p $(dir $@)
	$(USER_UQ)$(USER_OUT)/tests/exec_errors --gen $(dir $@)
	$(USER_UQ)$(USER_OUT)/tests/exec_script --gen $(dir $@) /tests/exec_script
	$(USER_UQ)$(USER_CC) -O2 -Wall -Werror -o $(dir $@)dyn_hello user/tests/data_src/dyn_hello.c \
		-Wl,--dynamic-linker=$(USER_DYN_INTERP)
	$(USER_UQ)cp -L $(USER_MUSL_LOADER) $(dir $@)ld-musl.so
	@touch $@

# grind (user/bin/grind.c, random system-call stress) also goes into the
# test initramfs as /tests/grind, outside LIST: only the rows that name it
# (the grind rows of tools/runtest.py, make stress) run it.
$(USER_OUT)/tests/grind: $(USER_OUT)/bin/grind
	@mkdir -p $(dir $@)
	$(USER_UQ)cp $< $@

# Test initramfs: /init = tinit, /tests/*, busybox with its applet links.
$(USER_OUT)/initramfs-test.spec: $(USER_BIN) $(USER_OUT)/tests/grind $(USER_OUT)/tests/LIST $(USER_OUT)/tests/data/STAMP tools/mkinitramfs.py user/user.mk $(wildcard user/rootfs/etc/*)
	$(USER_UQ)$(USER_PYTHON) tools/mkinitramfs.py --test-spec \
		--tinit $(USER_OUT)/tinit --tests $(USER_OUT)/tests \
		$(if $(USER_BUSYBOX),--busybox $(USER_BUSYBOX)) > $@

$(USER_INITRAMFS): $(USER_OUT)/initramfs-test.spec tools/mkinitramfs.py
	@echo "  CPIO    $@"
	$(USER_UQ)$(USER_PYTHON) tools/mkinitramfs.py -o $@ $<

$(USER_OUT)/bin/%: user/bin/%.c
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  MUSLCC  $<")
	$(USER_UQ)$(USER_CC) $(USER_CFLAGS) $(USER_LDFLAGS) -o $@ $<

$(USER_OUT)/bench/%: user/bench/%.c user/bench/benchlib.h
	@mkdir -p $(dir $@)
	@$(if $(USER_UQ),echo "  MUSLCC  $<")
	$(USER_UQ)$(USER_CC) $(USER_CFLAGS) $(USER_LDFLAGS) -o $@ $<

$(USER_OUT)/bench/LIST: $(USER_BENCH_SRCS) user/user.mk
	@mkdir -p $(dir $@)
	$(USER_UQ)printf '%s\n' $(USER_BENCH_LIST) > $@

# Bench initramfs: /init = tinit, /tests = the benchmarks (no busybox), so
# the same archive boots Concerto and Linux.
$(USER_BENCH_INITRAMFS): $(USER_OUT)/tinit $(USER_BENCH_BIN) $(USER_OUT)/bench/LIST tools/mkinitramfs.py $(wildcard user/rootfs/etc/*)
	@echo "  CPIO    $@"
	$(USER_UQ)$(USER_PYTHON) tools/mkinitramfs.py --test-spec \
		--tinit $(USER_OUT)/tinit --tests $(USER_OUT)/bench > $(USER_OUT)/initramfs-bench.spec
	$(USER_UQ)$(USER_PYTHON) tools/mkinitramfs.py -o $@ $(USER_OUT)/initramfs-bench.spec

.SECONDARY: $(USER_LIB_OBJS) $(USER_TEST_BIN:=.o) $(USER_OUT)/tinit.o

-include $(USER_LIB_OBJS:.o=.d) $(USER_TEST_BIN:=.d) $(USER_OUT)/tinit.d
