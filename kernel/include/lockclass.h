/*
 * THE lock order (L5).  Every lock in the kernel belongs to one class below.
 * Locks must be acquired in increasing rank: a CPU (or thread) holding a lock
 * of rank r may take only locks of rank > r.  Classes that share a rank are
 * not ordered by this table; lock mode 4 learns the order they are actually
 * taken in and reports any cycle.  min_ipl is the lowest interrupt level at
 * which the class may be taken (ipl.h).
 *
 * docs/locking.md is generated from this table by tools/genlockdoc.py
 * (`make docs`; `make test` fails if it is stale).
 *
 *   X(id, name, rank, min_ipl, kind, what it protects)
 */
#ifndef CONCERTO_LOCKCLASS_H
#define CONCERTO_LOCKCLASS_H

#define LOCK_CLASSES(X) \
	X(LC_TEST_COMPLEX_A, "test_complex_a", 10, IPL_NONE, COMPLEX, "lock-package tests only") \
	X(LC_TEST_COMPLEX_B, "test_complex_b", 11, IPL_NONE, COMPLEX, "lock-package tests only") \
	X(LC_FILE_POS,     "file_pos",      12, IPL_NONE, COMPLEX, "an open file's offset (read, write, lseek, getdents on one file description)") \
	X(LC_VFS_NS,       "vfs_ns",        13, IPL_NONE, COMPLEX, "the shape of the name space: renames (write), mounts (write), getcwd and rename-loop checks (read)") \
	X(LC_VNODE,        "vnode",         14, IPL_NONE, COMPLEX, "an inode: a directory's entries (write: create, unlink; read: getdents), a file's data and size (write: write, truncate; read: read); rename takes a second one by try-lock") \
	X(LC_PIPE,         "pipe",          15, IPL_NONE, COMPLEX, "a pipe's ring buffer, held across the user copy; splice and tee between two pipes take the second by try-lock") \
	X(LC_TTY,          "tty",           16, IPL_NONE, COMPLEX, "a terminal's writers: one write(2)'s output stays whole (its state is under its wait queue's lock)") \
	X(LC_UNIX_IO,      "unix_io",       17, IPL_NONE, COMPLEX, "an AF_UNIX socket's readers: one at a time removes from its receive queue, held across the copy out (kernel/net/unix.c)") \
	X(LC_AIO_RING,     "aio_ring",      18, IPL_NONE, COMPLEX, "an AIO context's readers (aio.c): one io_getevents at a time takes completions from its ring and moves its head, held across the copy out") \
	X(LC_TEST_A,       "test_a",        20, IPL_NONE, SIMPLE, "lock-package tests only") \
	X(LC_TEST_B,       "test_b",        21, IPL_NONE, SIMPLE, "lock-package tests only") \
	X(LC_TEST_C,       "test_c",        22, IPL_NONE, SIMPLE, "lock-package tests only (shares rank with test_d)") \
	X(LC_TEST_D,       "test_d",        22, IPL_NONE, SIMPLE, "lock-package tests only (shares rank with test_c)") \
	X(LC_TEST_IRQ,     "test_irq",      23, IPL_HIGH, SIMPLE, "lock-package tests only (interrupt-safe)") \
	X(LC_PROCTREE,     "proctree",      24, IPL_NONE, SIMPLE, "the process-relation lock (OSF/1 signals proc_relation_lock): parent/child/sibling links, process state, exit status, stop/continue reports, vfork handshake, group membership changes (with pgrp), the list of all processes, ptrace links and options (each thread's tracer, the tracer's list of tracee threads)") \
	X(LC_PGRP,         "pgrp",          26, IPL_NONE, SIMPLE, "a process group's member list (changed with proctree also held; kill(-pgid) walks it under this lock alone); never two at once") \
	X(LC_UIDHASH,      "uidhash",       27, IPL_NONE, SIMPLE, "the per-uid table: uidinfo chains and reference counts (process counts for RLIMIT_NPROC are atomic)") \
	X(LC_PTYTAB,       "ptytab",        29, IPL_NONE, SIMPLE, "the table of pseudo-terminals (numbers in use)") \
	X(LC_PROC,         "proc",          30, IPL_NONE, SIMPLE, "a process: its name, limits, credentials, descriptor-table pointer") \
	X(LC_PIDTAB,       "pidtab",        32, IPL_NONE, SIMPLE, "one bucket of the PID table (pid -> process, process group, session)") \
	X(LC_SESSION,      "session",       33, IPL_NONE, SIMPLE, "a session: its leader (its controlling terminal is the tty's: tty->sid)") \
	X(LC_PROC_SIG,     "proc_sig",      34, IPL_HIGH, SIMPLE, "a process's signal state: actions, pending sets and queues (process and its threads), blocked masks, stop state, group exit; its list of live threads and their exited threads' CPU ticks; its threads' ptrace stops; its threads' seccomp modes and filter chains (written by the thread itself or a TSYNC)") \
	X(LC_SIGHAND,      "sighand",       35, IPL_HIGH, SIMPLE, "a table of signal actions, shared by the processes made with CLONE_SIGHAND; taken inside their signal locks, or alone by a sigaction that discards nothing") \
	X(LC_AIO,          "aio",           36, IPL_NONE, SIMPLE, "an address space's list of AIO contexts (aio.c: io_setup, io_destroy, lookups that take a context reference); a leaf: only reference counts under it") \
	X(LC_UNIX_NAMES,   "unix_names",    37, IPL_NONE, SIMPLE, "the AF_UNIX name table (bound paths and abstract names), the internet port table and every internet socket's end points (inet.c), every socket's address and file, the list of all unix sockets, the in-flight descriptor counts (with the queue's socket lock) and the collector's marks") \
	X(LC_UNIX_SOCK,    "unix_sock",     38, IPL_NONE, SIMPLE, "an AF_UNIX socket: state, peer, shutdown, options, receive queue and a listener's queue of connections; never two at once") \
	X(LC_MQUEUE,       "mqueue",        37, IPL_NONE, SIMPLE, "POSIX message queues (ipc/mqueue.c): the name table and every queue's messages, sleepers, notification; takes a sleeper's waitq lock to wake it; dropped before user copies, poll wakeups and signals") \
	X(LC_SYSV_MSG,     "sysv_msg",      38, IPL_NONE, SIMPLE, "System V message queues (ipc/msg.c): the id table, every queue's messages and sleeping senders and receivers; takes a sleeper's waitq lock to wake it") \
	X(LC_SYSV_SEM,     "sysv_sem",      39, IPL_NONE, SIMPLE, "System V semaphores (ipc/sem.c): the id table, every set's values, waiters and SEM_UNDO records (and each process's list of them); takes a waiter's waitq lock to wake it") \
	X(LC_VM_MAP,       "vm_map",        40, IPL_NONE, COMPLEX, "an address space: its region list and break (read: faults; write: changes)") \
	X(LC_NCACHE,       "ncache",        41, IPL_NONE, SIMPLE, "one bucket of the name cache (directory, name) -> inode: parallel lookups") \
	X(LC_VNODE_META,   "vnode_meta",    42, IPL_NONE, SIMPLE, "an inode's attributes, link count, size, reference-count release, a directory's parent") \
	X(LC_FDTABLE,      "fdtable",       43, IPL_NONE, SIMPLE, "a process's descriptor table") \
	X(LC_FS_INFO,      "fs_info",       43, IPL_NONE, SIMPLE, "a process's cwd, root and umask (shared by its threads and CLONE_FS); never nested with fdtable") \
	X(LC_TMPFS_PAGES,  "tmpfs_pages",   44, IPL_NONE, SIMPLE, "a tmpfs file's page index (taken by page faults on mapped files)") \
	X(LC_VM_OBJ,       "vm_obj",        45, IPL_NONE, SIMPLE, "a shared memory object's page index") \
	X(LC_FUTEX,        "futex",         46, IPL_NONE, SIMPLE, "one futex hash bucket: its list of waiters and their keys and states; a second bucket is taken only by try-lock in bucket-index order (requeue, wake_op)") \
	X(LC_EPOLL,        "epoll",         47, IPL_NONE, SIMPLE, "every epoll instance's list of registrations, each open file's list of the registrations watching it, the nesting checks (one global lock: ctl and final releases, never epoll_wait; a registration's ready state is under its instance's waitq lock); adds and removes poll entries under it; no file's poll is called under it") \
	X(LC_TIMERFD_RT,   "timerfd_rt",    47, IPL_NONE, SIMPLE, "the list of armed absolute realtime timerfds (re-armed or cancelled when the clock is set); taken before a timerfd's waitq lock and its poll head (never nested with epoll)") \
	X(LC_INOTIFY,      "inotify",       48, IPL_NONE, SIMPLE, "every inotify watch list (an inode's, an instance's), the instances and per-uid counts (inotify.c); taken by VFS hooks after the operation dropped its locks and by vnode_free (so above vnode_meta, fdtable, epoll); under it only kmalloc, an instance's waitq lock and poll head") \
	X(LC_FANOTIFY,     "fanotify",      48, IPL_NONE, SIMPLE, "every fanotify mark list (an inode's, a superblock's, a group's), the groups and per-uid counts (fanotify.c); taken by VFS hooks after the operation dropped its locks and by vnode_free, never with inotify's; under it only kmalloc, a group's waitq lock and poll head; permission waits sleep after it is dropped") \
	X(LC_SYSV_SHM,     "sysv_shm",      49, IPL_NONE, SIMPLE, "System V shared memory (ipc/shm.c): the id table and every segment's fields; taken by the segment object's release hook inside the map lock, so above vm_map; no VM call under it") \
	X(LC_KEYS,         "keys",          49, IPL_NONE, SIMPLE, "the key retention service (keys.c): every key, keyring link list and per-uid quota record, and the keyring pointers of processes and threads; held across a whole add_key/keyctl operation but never a user copy; a leaf but for kmalloc/kfree") \
	X(LC_FILE_LOCKS,   "file_locks",    49, IPL_NONE, SIMPLE, "an inode's advisory locks (flock.c): its POSIX/OFD and flock lock lists and blocked waiters; wakes a waiter under its wait queue's lock") \
	X(LC_URING,        "uring",         49, IPL_NONE, SIMPLE, "an io_uring instance (kernel/fs/io_uring.c): its SQ head and CQ tail in the ring pages, CQ overflow list, pending requests, drain queue, registered files, buffers and eventfd; a leaf but for kmalloc/kfree: never held across a user copy, a file operation or a wakeup") \
	X(LC_PMAP,         "pmap",          50, IPL_NONE, SIMPLE, "an address space's page tables; taken with interrupts enabled only (TLB shootdown)") \
	X(LC_FLOCK_GRAPH,  "flock_graph",   50, IPL_NONE, SIMPLE, "the wait graph of blocked POSIX lock requests (deadlock detection) and the list of lock contexts (/proc/locks takes a context's lock only by try-lock)") \
	X(LC_PTIMERS,      "ptimers",       51, IPL_HIGH, SIMPLE, "a process's timers: its table of POSIX and interval timers, their expiry state and overruns, its list of armed CPU-time timers (timer.c); taken by callout handlers and the clock tick, so above every lock a thread may hold with interrupts enabled (pmap)") \
	X(LC_PERF,         "perf",          51, IPL_HIGH, SIMPLE, "every perf event (kern/perf.c): the list of events and of sampling events, groups, inherited children, enable state and counts, ring-buffer heads; taken by the clock tick (sampling), so above every lock held with interrupts enabled; under it only poll wakeups (pollhead, so an event stays alive while woken) and sigpost's queue (overflow signals); frees and user copies come after it") \
	X(LC_POLLHEAD,     "pollhead",      52, IPL_HIGH, SIMPLE, "a poll head's list of poll/select/epoll entries (poll.h); entry functions run under it and take an epoll's or a poll table's waitq lock; taken by timerfd's callout handler, so above every lock held with interrupts enabled (pmap); never two at once (nested epolls are woken after it is dropped)") \
	X(LC_SLEEPQ,       "sleepq",        52, IPL_HIGH, SIMPLE, "a hashed sleep queue of threads blocked on complex locks") \
	X(LC_WAITQ,        "waitq",         53, IPL_HIGH, SIMPLE, "a wait queue's list of sleepers (and the condition its users guard with it)") \
	X(LC_SIGPOST,      "sigpost",       54, IPL_HIGH, SIMPLE, "a CPU's queue of signal requests posted from interrupt context for the sigpost thread (timer.c)") \
	X(LC_THREAD,       "thread",        55, IPL_HIGH, SIMPLE, "a thread's state, priority, boost records, affinity, wait state; never held across a context switch (released before it; the next CPU waits for t->on_cpu: sched.c); a wakeup only claims the thread under it (TS_WAKING) and queues it after releasing it, and holders that change its scheduling fields wait for TS_WAKING to end") \
	X(LC_CALLOUT,      "callout",       56, IPL_HIGH, SIMPLE, "a CPU's callout queue, its running callout and the queued callouts' state (callout.c); handlers run without it") \
	X(LC_RUNQ,         "runq",          57, IPL_HIGH, SIMPLE, "a CPU's local run queue (other CPUs' only by trylock); a queued thread's TS_WAKING -> RUNNABLE store is made under it (sched.c)") \
	X(LC_GRUNQ,        "global_runq",   58, IPL_HIGH, SIMPLE, "the global run queue of unbound fixed-priority threads (and, as runq, the TS_WAKING -> RUNNABLE store of a thread queued on it)") \
	X(LC_FIFO,         "fifo",          59, IPL_HIGH, SIMPLE, "every FIFO inode's pipe pointer and its pipe's open count and reader/writer open generations (pipe.c); taken at open and at the last release of a FIFO end, from any context a file is dropped in, so high; wakes after dropping it") \
	X(LC_KMEM_POOL,    "kmem_pool",     60, IPL_HIGH, SIMPLE, "one kmalloc size class: its slab lists and counts") \
	X(LC_USERNS,       "userns",        49, IPL_NONE, SIMPLE, "a user namespace's uid and gid maps and setgroups flag while they are written (ns.c: /proc/PID/uid_map, gid_map, setgroups; readers go without it); a leaf") \
	X(LC_ACCT,         "acct",          49, IPL_NONE, SIMPLE, "the process-accounting file (acct.c: the inode acct(2) switched to); a leaf: only a reference taken under it") \
	X(LC_UTS,          "uts",           61, IPL_HIGH, SIMPLE, "every UTS namespace's host and domain names (ns.c: sethostname, uname, /proc/sys/kernel/hostname; taken inside p->lock); a leaf: only a copy under it") \
	X(LC_FASYNC,       "fasync",        62, IPL_HIGH, SIMPLE, "every source's list of O_ASYNC files (fown.c: pipes, FIFOs); a leaf: owners are copied out and signalled after it is dropped") \
	X(LC_NTP,          "ntp",           63, IPL_HIGH, SIMPLE, "adjtimex's clock state (time.c): status, offset, frequency, errors, tick; takes nothing; held with interrupts off (above callout)") \
	X(LC_VVAR,         "vvar",          64, IPL_HIGH, SIMPLE, "the vDSO's data page (time.c): its sequence count and fields, and the realtime offset; written by CPU 0's tick and by setting the clock; takes nothing; held with interrupts off") \
	X(LC_LEAKTRACE,    "leaktrace",     71, IPL_HIGH, SIMPLE, "the leak-tracing table of live allocations (leaktrace.c, boot option leaktrace): taken by page_alloc and kmalloc under any lock up to kmem_pool, after page; a leaf") \
	X(LC_PAGE,         "page",          70, IPL_HIGH, SIMPLE, "buddy free lists, struct page order/flags of free blocks, free count") \
	X(LC_SMP_CALL,     "smp_call",      80, IPL_HIGH, SIMPLE, "a CPU's queue of cross-CPU call requests") \
	X(LC_IOAPIC,       "ioapic",        85, IPL_HIGH, SIMPLE, "the I/O APIC register select/window pair") \
	X(LC_CONSOLE,      "console",       90, IPL_HIGH, SIMPLE, "serial console output (whole lines)") \
	X(LC_KLOG,         "klog",          91, IPL_HIGH, SIMPLE, "the kernel log ring (klog.c): appended inside the console lock, read by syslog(2)") \
	X(LC_LDT,          "ldt",           49, IPL_NONE, SIMPLE, "every process's LDT pointer (x86seg.c: modify_ldt, fork's copy, exec and exit); a leaf but for kmalloc/kfree: the cross-CPU reload and the free of a replaced table come after it is dropped")

enum lock_class_id {
	LC_NONE = 0,   /* an uninitialised lock has class 0 */
#define LC_ENUM(id, name, rank, ipl, kind, what) id,
	LOCK_CLASSES(LC_ENUM)
#undef LC_ENUM
	LC_COUNT
};

enum lock_kind { SIMPLE, COMPLEX };

struct lock_class {
	const char *name;
	int rank;
	int min_ipl;
	enum lock_kind kind;
	const char *protects;
};

extern const struct lock_class lock_classes[LC_COUNT];

#endif
