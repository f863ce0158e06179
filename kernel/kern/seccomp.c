/*
 * seccomp(2) (Linux x86_64, syscall 317) and prctl PR_GET/SET_SECCOMP.
 *
 * Operations: SET_MODE_STRICT, SET_MODE_FILTER (flags TSYNC, LOG,
 * SPEC_ALLOW, TSYNC_ESRCH), GET_ACTION_AVAIL, GET_NOTIF_SIZES.  Filters
 * are Linux's classic BPF subset over struct seccomp_data, checked when
 * attached (bpf_check) and interpreted at every system-call entry of the
 * thread (bpf_run), newest filter first; the most restrictive action wins
 * (the lowest action value as a signed number), with the data of the
 * first (newest) filter that gave it.
 *
 * Left out: user notification (SECCOMP_FILTER_FLAG_NEW_LISTENER is EINVAL,
 * as on a kernel without it; SECCOMP_RET_USER_NOTIF therefore always gives
 * ENOSYS, and GET_ACTION_AVAIL says EOPNOTSUPP for it); the audit log is a
 * kernel-log line (dmesg) for kill actions, RET_LOG, and every non-ALLOW
 * action of a filter attached with FLAG_LOG.
 *
 * Locking (seccomp.h): a thread's t->seccomp is written under its
 * process's p->sig.lock; only TSYNC writes another thread's.  No new lock.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "kmem.h"
#include "proc.h"
#include "ptrace.h"
#include "seccomp.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "trap.h"
#include "usercopy.h"

/* seccomp(2) operations and SET_MODE_FILTER flags (Linux values). */
#define SECCOMP_SET_MODE_STRICT   0
#define SECCOMP_SET_MODE_FILTER   1
#define SECCOMP_GET_ACTION_AVAIL  2
#define SECCOMP_GET_NOTIF_SIZES   3

#define FLAG_TSYNC        (1UL << 0)
#define FLAG_LOG          (1UL << 1)
#define FLAG_SPEC_ALLOW   (1UL << 2)
#define FLAG_NEW_LISTENER (1UL << 3)   /* not supported: EINVAL */
#define FLAG_TSYNC_ESRCH  (1UL << 4)
#define FLAGS_SUPPORTED   (FLAG_TSYNC | FLAG_LOG | FLAG_SPEC_ALLOW | FLAG_TSYNC_ESRCH)

/* Filter return values: action in the high 16 bits, data in the low. */
#define RET_KILL_PROCESS 0x80000000U
#define RET_KILL_THREAD  0x00000000U
#define RET_TRAP         0x00030000U
#define RET_ERRNO        0x00050000U
#define RET_USER_NOTIF   0x7fc00000U
#define RET_TRACE        0x7ff00000U
#define RET_LOG          0x7ffc0000U
#define RET_ALLOW        0x7fff0000U
#define RET_ACTION       0xffff0000U
#define RET_DATA         0x0000ffffU

#define AUDIT_ARCH_X86_64 0xc000003eU
#define SYS_SECCOMP       1            /* si_code of a RET_TRAP SIGSYS */
#define MAX_ERRNO         4095
#define BPF_MAXINSNS      4096
#define BPF_MEMWORDS      16
#define MAX_INSNS_PER_PATH 32768        /* a chain's instructions, +4 per filter */

/* System calls strict mode allows. */
#define NR_READ 0
#define NR_WRITE 1
#define NR_RT_SIGRETURN 15
#define NR_EXIT 60

/* ---- classic BPF ---- */

struct sock_filter {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

struct seccomp_data {
	int32_t nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};
_Static_assert(sizeof(struct seccomp_data) == 64, "seccomp_data is Linux's 64 bytes");

#define BPF_CLASS(c) ((c) & 0x07)
#define BPF_LD   0x00
#define BPF_LDX  0x01
#define BPF_ST   0x02
#define BPF_STX  0x03
#define BPF_ALU  0x04
#define BPF_JMP  0x05
#define BPF_RET  0x06
#define BPF_MISC 0x07
#define BPF_W    0x00
#define BPF_IMM  0x00
#define BPF_ABS  0x20
#define BPF_MEM  0x60
#define BPF_LEN  0x80
#define BPF_OP(c) ((c) & 0xf0)
#define BPF_ADD  0x00
#define BPF_SUB  0x10
#define BPF_MUL  0x20
#define BPF_DIV  0x30
#define BPF_OR   0x40
#define BPF_AND  0x50
#define BPF_LSH  0x60
#define BPF_RSH  0x70
#define BPF_NEG  0x80
#define BPF_XOR  0xa0
#define BPF_JA   0x00
#define BPF_JEQ  0x10
#define BPF_JGT  0x20
#define BPF_JGE  0x30
#define BPF_JSET 0x40
#define BPF_K    0x00
#define BPF_X    0x08
#define BPF_A    0x10             /* RET A */
#define BPF_TAX  0x00
#define BPF_TXA  0x80

#define OP_LD_W_ABS  (BPF_LD | BPF_W | BPF_ABS)
#define OP_LD_W_LEN  (BPF_LD | BPF_W | BPF_LEN)
#define OP_LDX_W_LEN (BPF_LDX | BPF_W | BPF_LEN)
#define OP_LD_IMM    (BPF_LD | BPF_IMM)
#define OP_LDX_IMM   (BPF_LDX | BPF_W | BPF_IMM)
#define OP_LD_MEM    (BPF_LD | BPF_MEM)
#define OP_LDX_MEM   (BPF_LDX | BPF_MEM)
#define OP_ST        BPF_ST
#define OP_STX       BPF_STX
#define OP_ALU_NEG   (BPF_ALU | BPF_NEG)
#define OP_JA        (BPF_JMP | BPF_JA)
#define OP_RET_K     (BPF_RET | BPF_K)
#define OP_RET_A     (BPF_RET | BPF_A)
#define OP_TAX       (BPF_MISC | BPF_TAX)
#define OP_TXA       (BPF_MISC | BPF_TXA)

/* A filter: one program, and the older filters of the chain via prev. */
struct seccomp_filter {
	volatile uint64_t refcnt;        /* [a] threads with it as newest + newer filters */
	struct seccomp_filter *prev;     /* [I] the older filter (a reference), or NULL */
	int depth;                       /* [I] filters in the chain from here */
	uint32_t path_insns;             /* [I] instructions of that chain, +4 each */
	bool log;                        /* [I] SECCOMP_FILTER_FLAG_LOG */
	uint16_t len;                    /* [I] instructions */
	struct sock_filter insns[];      /* [I] checked; LEN loads made immediates */
};

/* ALU operation op (not NEG) with a register or constant v != 0 for DIV. */
static bool alu_op_ok(uint16_t code)
{
	switch (BPF_OP(code)) {
	case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_DIV: case BPF_OR:
	case BPF_AND: case BPF_LSH: case BPF_RSH: case BPF_XOR:
		return (code & ~(uint16_t)(0xf0 | BPF_X | 0x07)) == 0;
	}
	return code == OP_ALU_NEG;
}

static bool jmp_op_ok(uint16_t code)
{
	if (code == OP_JA)
		return true;
	switch (BPF_OP(code)) {
	case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET:
		return (code & ~(uint16_t)(0xf0 | BPF_X | 0x07)) == 0;
	}
	return false;
}

/* Is code an instruction seccomp accepts (Linux's list: absolute 32-bit
 * loads of seccomp_data, no packet loads, no MOD, no RET X)? */
static bool insn_known(uint16_t code)
{
	switch (BPF_CLASS(code)) {
	case BPF_ALU:
		return alu_op_ok(code);
	case BPF_JMP:
		return jmp_op_ok(code);
	}
	switch (code) {
	case OP_LD_W_ABS: case OP_LD_W_LEN: case OP_LDX_W_LEN: case OP_LD_IMM:
	case OP_LDX_IMM: case OP_LD_MEM: case OP_LDX_MEM: case OP_ST: case OP_STX:
	case OP_RET_K: case OP_RET_A: case OP_TAX: case OP_TXA:
		return true;
	}
	return false;
}

/* The operand checks of instruction pc of a len-instruction program:
 * loads inside seccomp_data and aligned, memory words in range, no
 * constant division by 0 or shift by 32 or more, jumps inside. */
static bool insn_operands_ok(const struct sock_filter *in, uint32_t pc, uint32_t len)
{
	uint32_t k = in->k, left = len - pc - 1;    /* instructions after pc */
	switch (in->code) {
	case OP_LD_W_ABS:
		return k < sizeof(struct seccomp_data) && (k & 3) == 0;
	case OP_LD_MEM: case OP_LDX_MEM: case OP_ST: case OP_STX:
		return k < BPF_MEMWORDS;
	case BPF_ALU | BPF_DIV | BPF_K:
		return k != 0;
	case BPF_ALU | BPF_LSH | BPF_K: case BPF_ALU | BPF_RSH | BPF_K:
		return k < 32;
	case OP_JA:
		return k < left;
	}
	if (BPF_CLASS(in->code) == BPF_JMP)
		return in->jt < left && in->jf < left;
	return true;
}

/*
 * Every memory word loaded is stored first on every path to the load.
 * Jumps go forward only, so one pass does it: valid[] holds, for each
 * instruction, the words stored on every jump reaching it so far.
 */
static bool mem_use_ok(const struct sock_filter *prog, uint32_t len)
{
	uint16_t *valid = kmalloc(len * sizeof(uint16_t), 0);
	if (!valid)
		return false;
	memset(valid, 0xff, len * sizeof(uint16_t));
	uint16_t now = 0;
	bool ok = true;
	for (uint32_t pc = 0; pc < len && ok; pc++) {
		const struct sock_filter *in = &prog[pc];
		now &= valid[pc];
		switch (in->code) {
		case OP_ST: case OP_STX:
			now |= (uint16_t)(1U << in->k);
			break;
		case OP_LD_MEM: case OP_LDX_MEM:
			ok = (now >> in->k) & 1;
			break;
		default:
			if (BPF_CLASS(in->code) != BPF_JMP)
				break;
			if (in->code == OP_JA) {
				valid[pc + 1 + in->k] &= now;
			} else {
				valid[pc + 1 + in->jt] &= now;
				valid[pc + 1 + in->jf] &= now;
			}
			now = 0xffff;      /* reached only by the jumps recorded */
			break;
		}
	}
	kfree(valid);
	return ok;
}

/* Checks a program of len (1..BPF_MAXINSNS) instructions and turns its
 * LEN loads into immediates; 0 or -EINVAL (-ENOMEM). */
static int bpf_check(struct sock_filter *prog, uint32_t len)
{
	for (uint32_t pc = 0; pc < len; pc++) {
		struct sock_filter *in = &prog[pc];
		if (!insn_known(in->code) || !insn_operands_ok(in, pc, len))
			return -EINVAL;
		if (in->code == OP_LD_W_LEN || in->code == OP_LDX_W_LEN) {
			in->code = in->code == OP_LD_W_LEN ? OP_LD_IMM : OP_LDX_IMM;
			in->k = sizeof(struct seccomp_data);
		}
	}
	uint16_t last = prog[len - 1].code;
	if (last != OP_RET_K && last != OP_RET_A)
		return -EINVAL;
	return mem_use_ok(prog, len) ? 0 : -EINVAL;
}

static uint32_t alu(uint16_t op, uint32_t a, uint32_t v)
{
	switch (op) {
	case BPF_ADD: return a + v;
	case BPF_SUB: return a - v;
	case BPF_MUL: return a * v;
	case BPF_DIV: return a / v;        /* v != 0: the caller checked */
	case BPF_OR:  return a | v;
	case BPF_AND: return a & v;
	case BPF_LSH: return a << (v & 31);
	case BPF_RSH: return a >> (v & 31);
	case BPF_XOR: return a ^ v;
	case BPF_NEG: return -a;
	}
	return a;
}

/* The offset a checked jump instruction moves by, beyond the next one. */
static uint32_t jump(const struct sock_filter *in, uint32_t a, uint32_t x)
{
	if (in->code == OP_JA)
		return in->k;
	uint32_t v = (in->code & BPF_X) ? x : in->k;
	bool taken;
	switch (BPF_OP(in->code)) {
	case BPF_JEQ: taken = a == v; break;
	case BPF_JGT: taken = a > v; break;
	case BPF_JGE: taken = a >= v; break;
	default:      taken = (a & v) != 0; break;   /* JSET */
	}
	return taken ? in->jt : in->jf;
}

/* Runs a checked program on d: its return value.  Division by a zero X
 * ends it with 0 (classic BPF; a kill). */
static uint32_t bpf_run(const struct sock_filter *prog, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	for (const struct sock_filter *in = prog;; in++) {
		uint32_t k = in->k;
		uint16_t cls = BPF_CLASS(in->code);
		if (cls == BPF_ALU) {
			uint32_t v = (in->code & BPF_X) ? x : k;
			if (BPF_OP(in->code) == BPF_DIV && v == 0)
				return 0;
			a = alu(BPF_OP(in->code), a, v);
			continue;
		}
		if (cls == BPF_JMP) {
			in += jump(in, a, x);
			continue;
		}
		switch (in->code) {
		case OP_LD_W_ABS: memcpy(&a, (const uint8_t *)d + k, 4); break;
		case OP_LD_IMM:   a = k; break;
		case OP_LDX_IMM:  x = k; break;
		case OP_LD_MEM:   a = mem[k]; break;
		case OP_LDX_MEM:  x = mem[k]; break;
		case OP_ST:       mem[k] = a; break;
		case OP_STX:      mem[k] = x; break;
		case OP_TAX:      x = a; break;
		case OP_TXA:      a = x; break;
		case OP_RET_K:    return k;
		case OP_RET_A:    return a;
		default:          return RET_KILL_PROCESS;   /* not reached: checked */
		}
	}
}

/* ---- filters and chains ---- */

static void filter_unref(struct seccomp_filter *f)
{
	while (f && fetch_and_add(&f->refcnt, -1UL) == 1) {
		struct seccomp_filter *prev = f->prev;
		kfree(f);
		f = prev;
	}
}

/* Drops a thread's reference to a filter that newer ones still hold (TSYNC
 * replacing an ancestor of the new chain): never the last. */
static void filter_unref_held(struct seccomp_filter *f)
{
	if (f) {
		uint64_t old = fetch_and_add(&f->refcnt, -1UL);
		KASSERT(old > 1);
	}
}

/* Is anc (NULL: none) f or an older filter of f's chain? */
static bool filter_is_ancestor(const struct seccomp_filter *anc, const struct seccomp_filter *f)
{
	if (!anc)
		return true;
	for (; f; f = f->prev)
		if (f == anc)
			return true;
	return false;
}

/* The user's struct sock_fprog at ufprog as a new checked filter (not yet
 * in a chain) in *out: 0, -EFAULT, -EINVAL, -EACCES (neither no_new_privs
 * nor CAP_SYS_ADMIN: Linux's order of checks), -ENOMEM. */
static int filter_prepare(uint64_t ufprog, bool log, struct seccomp_filter **out)
{
	struct { uint16_t len; uint16_t pad[3]; uint64_t filter; } fp;
	if (copyin(&fp, (const void *)ufprog, sizeof(fp)) < 0)
		return -EFAULT;
	if (fp.len == 0 || fp.len > BPF_MAXINSNS)
		return -EINVAL;
	if (!READ_ONCE(curproc()->cred.no_new_privs) && !cap_capable(CAP_SYS_ADMIN))
		return -EACCES;
	size_t bytes = (size_t)fp.len * sizeof(struct sock_filter);
	struct seccomp_filter *f = kmalloc(sizeof(*f) + bytes, 0);
	if (!f)
		return -ENOMEM;
	memset(f, 0, sizeof(*f));
	f->len = fp.len;
	f->log = log;
	int r = copyin(f->insns, (const void *)fp.filter, bytes) < 0 ? -EFAULT
									: bpf_check(f->insns, f->len);
	if (r < 0) {
		kfree(f);
		return r;
	}
	*out = f;
	return 0;
}

/* TSYNC's test under p->sig.lock: 0 if every other live thread of p can
 * take t's chain (no strict mode, its chain a tail of t's), else the id
 * of one that cannot (-ESRCH with FLAG_TSYNC_ESRCH). */
static int tsync_check_locked(struct proc *p, struct thread *t, uint64_t flags)
{
	KASSERT(simple_lock_held(&p->sig.lock));
	for (struct thread *x = p->threads; x; x = x->tg_next) {
		if (x == t)
			continue;
		if (x->seccomp.mode == SECCOMP_MODE_STRICT ||
		    !filter_is_ancestor(x->seccomp.filter, t->seccomp.filter))
			return (flags & FLAG_TSYNC_ESRCH) ? -ESRCH : x->tid;
	}
	return 0;
}

/* Installs chain f (its reference: the caller's) as thread x's.  x may be
 * running its old chain: f's fields are stored before f is (release). */
static void thread_set_chain_locked(struct thread *x, struct seccomp_filter *f)
{
	__atomic_store_n(&x->seccomp.filter, f, __ATOMIC_RELEASE);
	x->seccomp.nfilters = f->depth;
	WRITE_ONCE(x->seccomp.mode, SECCOMP_MODE_FILTER);   /* after the filter */
}

/* TSYNC: every other live thread of p gets t's new chain f (checked). */
static void tsync_apply_locked(struct proc *p, struct thread *t, struct seccomp_filter *f)
{
	for (struct thread *x = p->threads; x; x = x->tg_next) {
		if (x == t)
			continue;
		struct seccomp_filter *old = x->seccomp.filter;
		fetch_and_add(&f->refcnt, 1);
		thread_set_chain_locked(x, f);
		filter_unref_held(old);              /* f's chain still holds it */
	}
}

/* Puts the prepared filter f on the caller's chain (and with TSYNC on its
 * threads'): 0, -EINVAL (strict mode), -ENOMEM (chain too long), or
 * TSYNC's failure (f is then not used: the caller frees it). */
static int filter_attach(struct seccomp_filter *f, uint64_t flags)
{
	struct thread *t = curthread();
	struct proc *p = t->proc;
	uint64_t s = disable_lock(&p->sig.lock);
	struct seccomp_filter *old = t->seccomp.filter;
	int r = 0;
	if (t->seccomp.mode == SECCOMP_MODE_STRICT)
		r = -EINVAL;
	else if ((old ? old->path_insns : 0) + f->len > MAX_INSNS_PER_PATH)
		r = -ENOMEM;
	else if (flags & FLAG_TSYNC)
		r = tsync_check_locked(p, t, flags);
	if (r == 0) {
		f->prev = old;                        /* the thread's reference moves to f */
		f->depth = old ? old->depth + 1 : 1;
		f->path_insns = (old ? old->path_insns : 0) + f->len + 4;
		f->refcnt = 1;
		thread_set_chain_locked(t, f);
		if (flags & FLAG_TSYNC)
			tsync_apply_locked(p, t, f);
	}
	unlock_enable(&p->sig.lock, s);
	return r;
}

static int set_mode_filter(uint64_t flags, uint64_t ufprog)
{
	if (flags & ~FLAGS_SUPPORTED)
		return -EINVAL;
	struct seccomp_filter *f;
	int r = filter_prepare(ufprog, (flags & FLAG_LOG) != 0, &f);
	if (r < 0)
		return r;
	r = filter_attach(f, flags);
	if (r != 0)
		kfree(f);
	return r;
}

static int set_mode_strict(uint64_t flags, uint64_t uargs)
{
	if (flags || uargs)
		return -EINVAL;
	struct thread *t = curthread();
	struct proc *p = t->proc;
	int r = 0;
	uint64_t s = disable_lock(&p->sig.lock);
	if (t->seccomp.mode == SECCOMP_MODE_FILTER)
		r = -EINVAL;
	else
		WRITE_ONCE(t->seccomp.mode, SECCOMP_MODE_STRICT);
	unlock_enable(&p->sig.lock, s);
	return r;
}

void seccomp_fork_locked(struct thread *child, struct thread *parent)
{
	KASSERT(simple_lock_held(&parent->proc->sig.lock));
	child->seccomp = parent->seccomp;
	if (child->seccomp.filter)
		fetch_and_add(&child->seccomp.filter->refcnt, 1);
}

void seccomp_thread_release(struct thread *t)
{
	filter_unref(t->seccomp.filter);
	t->seccomp.filter = NULL;
}

/* ---- system-call entry ---- */

/* The audit line of Linux's seccomp_log, in the kernel log only. */
static void log_action(struct trapframe *tf, int sig, uint32_t ret)
{
	struct proc *p = curproc();
	char name[PROC_NAME];
	simple_lock(&p->lock);
	memcpy(name, p->name, sizeof(name));
	simple_unlock(&p->lock);
	name[PROC_NAME - 1] = '\0';
	klogf("audit: type=1326 seccomp pid=%d comm=\"%s\" sig=%d arch=%x syscall=%d ip=0x%lx "
	      "code=0x%x\n", curthread()->tid, name, sig, AUDIT_ARCH_X86_64, (int)tf->error,
	      tf->rip, ret);
}

/* KILL_PROCESS (and unknown actions), or KILL_THREAD of the last thread:
 * the process dies of SIGSYS, whatever its SIGSYS action (Linux forces
 * the default, a core-dump signal). */
static __noreturn void kill_process(void)
{
	struct proc *p = curproc();
	proc_exit(SIGSYS | signal_core_flag(p));
}

/* RET_TRAP: SIGSYS to the caller with si_code SYS_SECCOMP, si_errno the
 * data, si_call_addr, si_syscall, si_arch; the handler sees the call
 * number in rax (Linux rolls the registers back). */
static void send_trap(struct trapframe *tf, uint32_t data)
{
	struct ksiginfo info;
	memset(&info, 0, sizeof(info));
	info.signo = SIGSYS;
	info.err = (int32_t)data;
	info.code = SYS_SECCOMP;
	info.u.raw[0] = tf->rip;
	info.u.raw[1] = (uint32_t)tf->error | ((uint64_t)AUDIT_ARCH_X86_64 << 32);
	tf->rax = tf->error;
	signal_force_info(curthread(), &info);
}

static int run_chain(struct trapframe *tf, bool recheck);

/* RET_TRACE: a tracer with PTRACE_O_TRACESECCOMP gets a PTRACE_EVENT_SECCOMP
 * stop (event message: the data) and may change or skip (-1) the call,
 * which the filters then see again; without one the call fails ENOSYS. */
static int trace(struct trapframe *tf, uint32_t data)
{
	struct thread *t = curthread();
	tf->rax = (uint64_t)-ENOSYS;
	if (!READ_ONCE(t->pt_tracer) || !(READ_ONCE(t->pt_opts) & PTRACE_O_TRACESECCOMP))
		return -1;
	ptrace_seccomp_stop(data);
	if (signal_fatal_pending() || (int64_t)tf->error < 0)
		return -1;
	return run_chain(tf, true);
}

/* The action of filter result ret: 0 run the call, -1 skip it. */
static int take_action(struct trapframe *tf, uint32_t ret, bool log, bool recheck)
{
	uint32_t data = ret & RET_DATA;
	switch (ret & RET_ACTION) {
	case RET_ALLOW:
		return 0;
	case RET_LOG:
		log_action(tf, 0, ret);
		return 0;
	}
	if (log)
		log_action(tf, 0, ret);
	switch (ret & RET_ACTION) {
	case RET_ERRNO:
		tf->rax = (uint64_t)-(int64_t)(data > MAX_ERRNO ? MAX_ERRNO : data);
		return -1;
	case RET_TRAP:
		send_trap(tf, data);
		return -1;
	case RET_USER_NOTIF:                 /* no listener can exist */
		tf->rax = (uint64_t)-ENOSYS;
		return -1;
	case RET_TRACE:
		return recheck ? 0 : trace(tf, data);
	}
	if (!log)
		log_action(tf, SIGSYS, ret);
	if ((ret & RET_ACTION) == RET_KILL_THREAD && READ_ONCE(curproc()->nthreads) > 1)
		proc_thread_exit(SIGSYS);
	kill_process();
}

/* Runs the caller's chain on the call in tf and takes the action. */
static int run_chain(struct trapframe *tf, bool recheck)
{
	struct seccomp_data d = {
		.nr = (int32_t)tf->error,
		.arch = AUDIT_ARCH_X86_64,
		.instruction_pointer = tf->rip,
		.args = { tf->rdi, tf->rsi, tf->rdx, tf->r10, tf->r8, tf->r9 },
	};
	uint32_t ret = RET_ALLOW;
	bool log = false;
	for (const struct seccomp_filter *f = READ_ONCE(curthread()->seccomp.filter); f;
	     f = f->prev) {
		uint32_t r = bpf_run(f->insns, &d);
		if ((int32_t)(r & RET_ACTION) < (int32_t)(ret & RET_ACTION)) {
			ret = r;
			log = f->log;
		}
	}
	return take_action(tf, ret, log, recheck);
}

int seccomp_syscall_enter(struct trapframe *tf)
{
	if (READ_ONCE(curthread()->seccomp.mode) == SECCOMP_MODE_FILTER)
		return run_chain(tf, false);
	switch (tf->error) {
	case NR_READ: case NR_WRITE: case NR_EXIT: case NR_RT_SIGRETURN:
		return 0;
	}
	log_action(tf, SIGKILL, 0);
	proc_thread_exit(SIGKILL);           /* strict mode: this thread (Linux do_exit) */
}

/* ---- system calls ---- */

/* GET_ACTION_AVAIL: 0 for an action this kernel takes, else EOPNOTSUPP. */
static int action_avail(uint64_t flags, uint64_t uaction)
{
	if (flags)
		return -EINVAL;
	uint32_t a;
	if (fetch_u32((const void *)uaction, &a) < 0)
		return -EFAULT;
	switch (a) {
	case RET_KILL_PROCESS: case RET_KILL_THREAD: case RET_TRAP: case RET_ERRNO:
	case RET_TRACE: case RET_LOG: case RET_ALLOW:
		return 0;
	}
	return -EOPNOTSUPP;                  /* RET_USER_NOTIF too: no listeners */
}

/* GET_NOTIF_SIZES: struct seccomp_notif_sizes (Linux's sizes). */
static int notif_sizes(uint64_t flags, uint64_t usizes)
{
	if (flags)
		return -EINVAL;
	uint16_t sz[3] = { 80, 24, sizeof(struct seccomp_data) };
	return copyout((void *)usizes, sz, sizeof(sz)) < 0 ? -EFAULT : 0;
}

static int do_seccomp(uint64_t op, uint64_t flags, uint64_t uargs)
{
	switch (op) {
	case SECCOMP_SET_MODE_STRICT:
		return set_mode_strict(flags, uargs);
	case SECCOMP_SET_MODE_FILTER:
		return set_mode_filter(flags, uargs);
	case SECCOMP_GET_ACTION_AVAIL:
		return action_avail(flags, uargs);
	case SECCOMP_GET_NOTIF_SIZES:
		return notif_sizes(flags, uargs);
	}
	return -EINVAL;
}

SYSCALL(317, seccomp)
{
	return do_seccomp(a0, a1, a2);
}

int seccomp_prctl_get(void)
{
	return READ_ONCE(curthread()->seccomp.mode);
}

int seccomp_prctl_set(uint64_t mode, uint64_t ufprog)
{
	switch (mode) {
	case SECCOMP_MODE_STRICT:
		return do_seccomp(SECCOMP_SET_MODE_STRICT, 0, 0);
	case SECCOMP_MODE_FILTER:
		return do_seccomp(SECCOMP_SET_MODE_FILTER, 0, ufprog);
	}
	return -EINVAL;
}
