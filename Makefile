# Concerto — one Makefile, explicit object lists.
#
#   make            build build/concerto (Multiboot ELF for qemu -kernel)
#   make run        boot it on $(SMP) CPUs with $(MEM) of memory (serial on stdio)
#   make test       build everything and run every test (ends with "N passed, M failed")
#   make qemu-gdb   like run, but QEMU waits for gdb on localhost:1234
#
# Knobs: SMP=4 MEM=512M CMDLINE='lockmode=2 quiet' (QEMU_EXTRA=... for more)

SMP      ?= 4
MEM      ?= 512M
CMDLINE  ?=
QEMU     ?= qemu-system-x86_64
QEMU_EXTRA ?=

BUILD    := build
CC       := gcc
LD       := ld
OBJCOPY  := objcopy
PYTHON   := python3

CFLAGS := -std=gnu11 -O2 -g -Wall -Wextra -Wmissing-prototypes -Werror \
	-ffreestanding -fno-pic -fno-pie -mcmodel=kernel -mno-red-zone \
	-mgeneral-regs-only -mno-sse -mno-mmx -mno-avx \
	-fno-stack-protector -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-asynchronous-unwind-tables -fno-strict-aliasing -fno-common \
	-nostdinc -isystem $(shell $(CC) -print-file-name=include) \
	-Ikernel/include -MMD -MP
ASFLAGS := -Ikernel/include -MMD -MP -D__ASSEMBLY__
LDFLAGS := -nostdlib -z max-page-size=0x1000 -z noexecstack --no-warn-rwx-segments \
	-T kernel/arch/x86_64/kernel.ld
ifdef DEBUG
CFLAGS += -DCONFIG_DEBUG
endif
# NOTRACE=1: no trace hooks at all (the baseline of docs/tracing.md's cost figures)
ifdef NOTRACE
CFLAGS += -DCONFIG_NOTRACE
endif

ARCH_OBJS := \
	arch/x86_64/boot.o \
	arch/x86_64/entry.o \
	arch/x86_64/trampoline.o \
	arch/x86_64/multiboot.o \
	arch/x86_64/cpu.o \
	arch/x86_64/trap.o \
	arch/x86_64/mmu.o \
	arch/x86_64/mmu_test.o \
	arch/x86_64/kstack.o \
	arch/x86_64/acpi.o \
	arch/x86_64/lapic.o \
	arch/x86_64/ioapic.o \
	arch/x86_64/smp.o \
	arch/x86_64/power.o \
	arch/x86_64/lockprim.o \
	arch/x86_64/swtch.o \
	arch/x86_64/syscall.o \
	arch/x86_64/sigframe.o \
	arch/x86_64/pmap.o \
	arch/x86_64/usercopy.o \
	arch/x86_64/x86seg.o \
	arch/x86_64/x86segs.o

KERN_OBJS := \
	kern/main.o \
	kern/printf.o \
	kern/klog.o \
	kern/string.o \
	kern/sbuf.o \
	kern/panic.o \
	kern/watchdog.o \
	kern/failinject.o \
	kern/watchdog_test.o \
	kern/ksyms.o \
	kern/lock.o \
	kern/lockdebug.o \
	kern/lockstat.o \
	kern/trace.o \
	kern/trace_test.o \
	kern/lock_test.o \
	kern/lock_bench.o \
	kern/sched.o \
	kern/waitq.o \
	kern/callout.o \
	kern/clockev.o \
	kern/callout_test.o \
	kern/timer.o \
	kern/perf.o \
	kern/timer_test.o \
	kern/sched_test.o \
	kern/sched_bench.o \
	kern/proc.o \
	kern/exec.o \
	kern/syscall.o \
	kern/sys_proc.o \
	kern/sys_misc.o \
	kern/sys_swap.o \
	kern/random.o \
	kern/membarrier.o \
	kern/signal.o \
	kern/time.o \
	kern/sys_sched.o \
	kern/futex.o \
	kern/pidfd.o \
	kern/ns.o \
	kern/keys.o \
	kern/ptrace.o \
	kern/rseq.o \
	kern/acct.o \
	kern/seccomp.o \
	kern/futex_test.o \
	kern/cmdline.o \
	kern/ktest.o \
	kern/kern_test.o \
	kern/elf.o \
	kern/elf_test.o \
	kern/vdso.o \
	kern/vdso_test.o \
	vdso/vdso_image.o

VM_OBJS := \
	vm/page.o \
	vm/kmem.o \
	vm/leaktrace.o \
	vm/process_vm.o \
	vm/numa.o \
	vm/leaktrace_test.o \
	vm/page_test.o \
	vm/kmem_test.o \
	vm/vm_map.o \
	vm/vm_fault.o \
	vm/usercopy.o \
	vm/sys_mm.o \
	vm/vm_file.o \
	vm/userfaultfd.o \
	vm/vm_test.o

DEV_OBJS := \
	dev/uart.o \
	dev/rtc.o \
	dev/console.o \
	dev/tty.o

FS_OBJS := \
	fs/vfs.o \
	fs/tmpfs.o \
	fs/file.o \
	fs/flock.o \
	fs/xattr.o \
	fs/fown.o \
	fs/inotify.o \
	fs/fanotify.o \
	fs/procsys.o \
	fs/pipe.o \
	fs/memfd.o \
	fs/poll.o \
	fs/poll_test.o \
	fs/file_test.o \
	fs/signalfd.o \
	fs/splice.o \
	fs/eventfd.o \
	fs/aio.o \
	fs/io_uring.o \
	fs/timerfd.o \
	fs/epoll.o \
	fs/initramfs.o \
	fs/sys_file.o \
	fs/fhandle.o \
	fs/procgen.o \
	fs/procfs.o \
	fs/procfs_test.o \
	fs/synthfs.o \
	fs/sysfs.o \
	fs/initramfs_test.o \
	fs/vfs_test.o

IPC_OBJS := \
	ipc/ipc_util.o \
	ipc/shm.o \
	ipc/sem.o \
	ipc/msg.o \
	ipc/mqueue.o \
	ipc/ipc_test.o

NET_OBJS := \
	net/socket.o \
	net/unix.o \
	net/inet.o \
	net/netlink.o \
	net/raw.o \
	net/netns.o

OBJS := $(addprefix $(BUILD)/kernel/,$(ARCH_OBJS) $(KERN_OBJS) $(VM_OBJS) $(DEV_OBJS) $(FS_OBJS) $(IPC_OBJS) \
	$(NET_OBJS))
# NOKTEST=1: an image without the in-kernel tests and benchmarks (*_test.c,
# *_bench.c); ktest= then finds none.  make run and make test keep them.
ifdef NOKTEST
OBJS := $(filter-out %_test.o %_bench.o,$(OBJS))
endif

.PHONY: all run test bench qemu-gdb clean deps run-deps docs trace stress debug

all: $(BUILD)/concerto

# The DEBUG=1 kernel (DASSERTs on) in $(BUILD)/debug, booted by make test.
debug:
	$(MAKE) BUILD=$(BUILD)/debug DEBUG=1 all

# User-space programs and tests (musl): make user, make user-test.
include user/user.mk

# V=1 shows the full commands.
Q := $(if $(V),,@)

$(BUILD)/kernel/%.o: kernel/%.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/kernel/%.o: kernel/%.S
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(ASFLAGS) -c $< -o $@

# The vDSO (kernel/vdso/, docs/time.md): a user-space shared object built
# with the host compiler, checked to have no relocations and no DT_NEEDED,
# stripped, and embedded in the kernel by vdso_image.S (.incbin).
VDSO_CFLAGS := -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -ffreestanding -fno-builtin \
	-fno-stack-protector -fvisibility=hidden -fno-plt -Ikernel/include
VDSO_LDFLAGS := -nostdlib -shared -Wl,--hash-style=both -Wl,-soname=linux-vdso.so.1 \
	-Wl,-T,kernel/vdso/vdso.lds -Wl,--eh-frame-hdr -Wl,--build-id=none \
	-Wl,-z,max-page-size=4096 -Wl,--no-undefined

$(BUILD)/vdso/vdso.so: kernel/vdso/vdso.c kernel/vdso/vdso.lds kernel/include/vdso_data.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  VDSO    $@")
	$(Q)$(CC) $(VDSO_CFLAGS) $(VDSO_LDFLAGS) -o $@.dbg kernel/vdso/vdso.c
	$(Q)if readelf -r $@.dbg | grep -q "^Relocation section"; then \
		echo "$@: the vDSO has relocations" >&2; exit 1; fi
	$(Q)if readelf -d $@.dbg | grep -q NEEDED; then \
		echo "$@: the vDSO needs a library" >&2; exit 1; fi
	$(Q)$(OBJCOPY) --strip-all $@.dbg $@

$(BUILD)/kernel/vdso/vdso_image.o: kernel/vdso/vdso_image.S $(BUILD)/vdso/vdso.so
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) $(ASFLAGS) -DVDSO_SO='"$(BUILD)/vdso/vdso.so"' -c $< -o $@

# Two link passes: the first has an empty symbol table; the table generated
# from it is linked into the second.  .ksyms sits after .data, so no text or
# data address moves between the passes (tools/gensyms.py checks that).
$(BUILD)/concerto: $(OBJS) kernel/arch/x86_64/kernel.ld tools/gensyms.py
	@echo "  LD      $@"
	$(Q)$(LD) $(LDFLAGS) -o $(BUILD)/concerto.pass1 $(OBJS)
	$(Q)$(PYTHON) tools/gensyms.py $(BUILD)/concerto.pass1 > $(BUILD)/ksyms.S
	$(Q)$(CC) $(ASFLAGS) -c $(BUILD)/ksyms.S -o $(BUILD)/ksyms.o
	$(Q)$(LD) $(LDFLAGS) -o $@ $(OBJS) $(BUILD)/ksyms.o
	$(Q)$(PYTHON) tools/gensyms.py --check $(BUILD)/concerto.pass1 $@

# The default initramfs: busybox, its applet links, the tools (/bin), the
# test programs (/tests), /init starting a shell.
$(BUILD)/initramfs.cpio: tools/mkrootfs.sh tools/mkinitramfs.py user/rootfs/init user/rootfs/etc/profile user/rootfs/etc/hosts user/rootfs/etc/passwd user/rootfs/etc/group $(USER_TOOLS) $(USER_BIN) $(USER_OUT)/tests/LIST
	@mkdir -p $(BUILD)
	@echo "  CPIO    $@"
	$(Q)TESTS_DIR=$(USER_OUT)/tests TINIT=$(USER_OUT)/tinit tools/mkrootfs.sh $(USER_TOOLS) > $(BUILD)/initramfs.spec
	$(Q)$(PYTHON) tools/mkinitramfs.py -o $@ $(BUILD)/initramfs.spec

# ADD='/usr/bin/python3.11 /usr/lib/python3.11': host files and directories
# (with a dynamic program's ld.so and libraries) put into a copy of the
# default image at the same paths (tools/addspec.py).
ADD ?=
ifneq ($(strip $(ADD)),)
INITRD ?= $(BUILD)/initramfs-add.cpio
endif
INITRD ?= $(BUILD)/initramfs.cpio

$(BUILD)/initramfs-add.cpio: $(BUILD)/initramfs.cpio tools/addspec.py FORCE
	@echo "  CPIO    $@ (+ $(ADD))"
	$(Q)$(PYTHON) tools/addspec.py $(BUILD)/initramfs.spec $(ADD) > $(BUILD)/initramfs-add.spec
	$(Q)$(PYTHON) tools/mkinitramfs.py -o $@ $(BUILD)/initramfs-add.spec

QEMU_ARGS = -machine pc -cpu max -smp $(SMP) -m $(MEM) \
	-kernel $(BUILD)/concerto -initrd $(INITRD) -append "$(CMDLINE)" \
	-nographic -no-reboot -nic none \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 $(QEMU_EXTRA)

run-deps:
	@tools/deps.sh run

deps:
	@tools/deps.sh all

# QEMU exits with (status << 1) | 1 through isa-debug-exit: 1 means status 0.
run: deps all $(BUILD)/initramfs.cpio $(if $(strip $(ADD)),$(BUILD)/initramfs-add.cpio)
	@echo "Concerto: $(SMP) CPUs, $(MEM). Leave QEMU with Ctrl-A then X (or type poweroff)."
	$(QEMU) $(QEMU_ARGS); s=$$?; [ $$s -eq 0 ] || [ $$s -eq 1 ] || exit $$s

qemu-gdb: deps all $(BUILD)/initramfs.cpio
	@echo "QEMU waits for gdb: gdb $(BUILD)/concerto -ex 'target remote localhost:1234'"
	$(QEMU) $(QEMU_ARGS) -S -s

# The user-space tests run on this host first (proving the tests right);
# the kernel runs them once it has user space.
test: deps all debug user $(BUILD)/initramfs.cpio
	$(PYTHON) tools/genlockdoc.py --check
	$(PYTHON) tools/hosttest.py
	$(PYTHON) tools/runtest.py

# Random system-call stress (user/bin/grind.c; docs/testing.md): grind for
# SECONDS at SMP CPUs (1-8) in lock mode 4, judged like a user-suite boot (no
# panic, lock fault, watchdog report or hang; free memory back where it
# started).  make stress SECONDS=600 SMP=8 [PROCS=8] [SEED=0x...] [FAIL=1]
# (FAIL=P: failslab=P failpage=P).
SECONDS ?= 300
PROCS   ?= 8
SEED    ?=
FAIL    ?= 0
stress: deps all user
	$(PYTHON) tools/runtest.py --stress $(SECONDS) --smp $(SMP) --procs $(PROCS) \
		$(if $(SEED),--seed $(SEED)) --fail $(FAIL)

# Benchmarks (not timed tests): lock modes side by side, then user-space
# benchmarks beside Linux booted in the same QEMU configuration, with tables
# and plots in build/bench/ (docs/performance.md).  make bench BENCH_ARGS=--quick
# for a short run; BENCH_ARGS="-k signal --smp 1,2" for a subset.
BENCH_ARGS ?=
bench: deps all user-bench
	@tools/deps.sh bench
	$(PYTHON) tools/bench.py
	$(PYTHON) tools/benchuser.py $(BENCH_ARGS)
	$(PYTHON) tools/tracebench.py

# Trace one command (docs/tracing.md): boots with /bin/trace as init, which
# runs CMD under `sh -c` with TRACE_CLASSES on and prints the dump on the
# console; build/trace/ gets console.log, trace.json (ui.perfetto.dev) and
# the summary (summary.txt, *.png).  TRACE_KERNEL adds kernel options.
CMD ?= ls /
TRACE_CLASSES ?= all
TRACE_KERNEL ?=
trace: CMDLINE = quiet $(TRACE_KERNEL) rdinit=/bin/trace -- --init -x -e $(TRACE_CLASSES) $(CMD)
trace: deps all $(BUILD)/initramfs.cpio
	@tools/deps.sh bench
	@mkdir -p $(BUILD)/trace
	@echo "  TRACE   $(CMD) ($(SMP) CPUs)"
	$(Q)timeout 1200 $(QEMU) $(QEMU_ARGS) < /dev/null > $(BUILD)/trace/console.log 2>&1; \
		s=$$?; [ $$s -eq 0 ] || [ $$s -eq 1 ] || { tail -20 $(BUILD)/trace/console.log; exit 1; }
	$(PYTHON) tools/trace2json.py $(BUILD)/trace/console.log -o $(BUILD)/trace/trace.json
	$(PYTHON) tools/trace2png.py $(BUILD)/trace/trace.json -o $(BUILD)/trace/timeline.png
	$(PYTHON) tools/tracesum.py $(BUILD)/trace/console.log --png $(BUILD)/trace | tee $(BUILD)/trace/summary.txt

# Regenerate the lock-order table in docs/locking.md from lockclass.h.
docs:
	$(PYTHON) tools/genlockdoc.py

clean:
	rm -rf $(BUILD)

-include $(OBJS:.o=.d)

FORCE:
