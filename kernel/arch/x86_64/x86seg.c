/*
 * x86-specific state of user programs, with Linux x86_64 semantics:
 *
 *   modify_ldt(2)       a per-process LDT (shared by its threads, copied by
 *                       fork, gone at exec and exit), loaded with LLDT
 *                       through the GDT's entry 10 at a switch when the CPU
 *                       has another one loaded; a write replaces the table
 *                       and reloads it on every CPU that has the old one.
 *   set/get_thread_area the three GDT TLS entries 12-14, per thread.
 *   ioperm(2), iopl(2)  a per-thread I/O permission bitmap copied into the
 *                       CPU's TSS at a switch; iopl(3) is emulated as Linux
 *                       5.5+ does: every port through the bitmap, while cli
 *                       and sti still fault.
 *
 * A thread that uses a TLS entry or whose process has an LDT also has its
 * data selectors (ds, es, fs, gs) and its user GS base saved at switch-out
 * and loaded at switch-in; other threads keep the switch as it was: the
 * scheduler tests t->x86.flags, c->seg_state and the LDT pointers and calls
 * in here only when one is set.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "smp.h"
#include "syscall.h"
#include "thread.h"
#include "usercopy.h"
#include "x86.h"
#include "x86seg.h"

static struct simple_lock ldt_lock = SIMPLE_LOCK_INIT(LC_LDT);

#define LDT_ENTRIES 8192
#define SEL_RPL3 3

/* Segment loads that may fault (a stale LDT or TLS selector): x86segs.S.
 * Each returns 0, or -1 after loading the null selector instead. */
int seg_load_ds(uint16_t sel);
int seg_load_es(uint16_t sel);
int seg_load_fs(uint16_t sel);
int seg_load_gs_raw(uint16_t sel);   /* changes MSR_GS_BASE: see load_user_gs */

static inline uint16_t read_sel(int which)
{
	uint16_t s = 0;
	switch (which) {
	case 0: __asm__ __volatile__("movw %%ds, %0" : "=r"(s)); break;
	case 1: __asm__ __volatile__("movw %%es, %0" : "=r"(s)); break;
	case 2: __asm__ __volatile__("movw %%fs, %0" : "=r"(s)); break;
	case 3: __asm__ __volatile__("movw %%gs, %0" : "=r"(s)); break;
	}
	return s;
}

/*
 * Loads sel into %gs as user mode would see it: the user GS base (in
 * MSR_KERNEL_GS_BASE while in the kernel) becomes the descriptor's, the
 * kernel's GS base is put back.  Interrupts disabled; nothing between the
 * load and the restore uses %gs.
 */
static void load_user_gs(struct cpu *c, uint16_t sel)
{
	if (seg_load_gs_raw(sel) < 0)
		sel = 0;
	uint64_t ubase = (sel & ~3) ? rdmsr(MSR_GS_BASE) : 0;
	wrmsr(MSR_GS_BASE, (uint64_t)c);
	wrmsr(MSR_KERNEL_GS_BASE, ubase);
}

/* ---- descriptors from struct user_desc ---- */

struct user_desc {
	uint32_t entry_number;
	uint32_t base_addr;
	uint32_t limit;
	uint32_t seg_32bit : 1;
	uint32_t contents : 2;
	uint32_t read_exec_only : 1;
	uint32_t limit_in_pages : 1;
	uint32_t seg_not_present : 1;
	uint32_t useable : 1;
	uint32_t lm : 1;
};
_Static_assert(sizeof(struct user_desc) == 16, "user_desc");

/* Linux's LDT_empty: the "not present, read-only, all zero" pattern. */
static bool ud_empty(const struct user_desc *u)
{
	return u->base_addr == 0 && u->limit == 0 && u->contents == 0 &&
	       u->read_exec_only == 1 && u->seg_32bit == 0 && u->limit_in_pages == 0 &&
	       u->seg_not_present == 1 && u->useable == 0;
}

/* Linux's LDT_zero: every field zero. */
static bool ud_zero(const struct user_desc *u)
{
	return u->base_addr == 0 && u->limit == 0 && u->contents == 0 &&
	       u->read_exec_only == 0 && u->seg_32bit == 0 && u->limit_in_pages == 0 &&
	       u->seg_not_present == 0 && u->useable == 0;
}

/* The DPL-3 code or data descriptor u describes (never a 64-bit one:
 * the L bit stays clear, as on Linux). */
static uint64_t ud_to_desc(const struct user_desc *u)
{
	uint64_t type = 1 | ((uint64_t)(u->read_exec_only ^ 1) << 1) | ((uint64_t)u->contents << 2);
	uint64_t d = (u->limit & 0xffffUL) | ((uint64_t)(u->base_addr & 0xffffff) << 16);
	d |= type << 40;
	d |= 1UL << 44;                                   /* code or data */
	d |= 3UL << 45;                                   /* DPL 3 */
	d |= (uint64_t)(u->seg_not_present ^ 1) << 47;
	d |= (uint64_t)((u->limit >> 16) & 0xf) << 48;
	d |= (uint64_t)u->useable << 52;
	d |= (uint64_t)u->seg_32bit << 54;
	d |= (uint64_t)u->limit_in_pages << 55;
	d |= (uint64_t)(u->base_addr >> 24) << 56;
	return d;
}

static void desc_to_ud(uint64_t d, uint32_t idx, struct user_desc *u)
{
	memset(u, 0, sizeof(*u));
	u->entry_number = idx;
	u->base_addr = ((d >> 16) & 0xffffff) | ((d >> 56) << 24);
	u->limit = (d & 0xffff) | (((d >> 48) & 0xf) << 16);
	u->seg_32bit = (d >> 54) & 1;
	u->contents = (d >> 42) & 3;
	u->read_exec_only = !((d >> 41) & 1);
	u->limit_in_pages = (d >> 55) & 1;
	u->seg_not_present = !((d >> 47) & 1);
	u->useable = (d >> 52) & 1;
	u->lm = (d >> 53) & 1;
}

/* ---- loading on a CPU (interrupts disabled) ---- */

/* Points LDTR at ldt (NULL: none) through the GDT's system entry. */
static void ldt_load(struct cpu *c, struct ldt *ldt)
{
	if (!ldt) {
		__asm__ __volatile__("lldt %w0" :: "r"(0));
	} else {
		uint64_t base = (uint64_t)ldt->ent, limit = ldt->nr * 8 - 1;
		c->gdt[GDT_ENTRY_LDT] = (limit & 0xffff) | ((base & 0xffffff) << 16) |
					(0x82UL << 40) | ((limit >> 16 & 0xf) << 48) |
					((base >> 24 & 0xff) << 56);   /* present, LDT */
		c->gdt[GDT_ENTRY_LDT + 1] = base >> 32;
		__asm__ __volatile__("lldt %w0" :: "r"((uint16_t)SEL_LDT));
	}
	c->ldt = ldt;
}

static void tls_load(struct cpu *c, struct thread *t)
{
	if (t->x86.flags & TX_TLS) {
		for (int i = 0; i < GDT_TLS_ENTRIES; i++)
			c->gdt[GDT_ENTRY_TLS_MIN + i] = t->x86.tls[i];
		c->seg_state |= CPU_SEG_TLS;
	} else if (c->seg_state & CPU_SEG_TLS) {
		for (int i = 0; i < GDT_TLS_ENTRIES; i++)
			c->gdt[GDT_ENTRY_TLS_MIN + i] = 0;
		c->seg_state &= ~CPU_SEG_TLS;
	}
}

/* Copies t's bitmap (or iopl 3's all-allowed one) into the TSS, or
 * invalidates the TSS's bitmap offset. */
static void iobm_load(struct cpu *c, struct thread *t)
{
	struct thread_x86 *x = &t->x86;
	if (!(x->flags & TX_IO)) {
		if (c->seg_state & CPU_SEG_IOBM) {
			c->tss.iomap_base = IOBM_OFFSET_INVALID;
			c->seg_state &= ~CPU_SEG_IOBM;
		}
		return;
	}
	uint32_t n;
	if (x->iopl == 3) {
		n = IOBM_BYTES;
		memset(c->iobm, 0, n);
	} else {
		n = x->iobm_len;
		memcpy(c->iobm, x->iobm, n);
	}
	if (c->iobm_len > n)
		memset(c->iobm + n, 0xff, c->iobm_len - n);
	c->iobm_len = n;
	c->tss.iomap_base = IOBM_OFFSET_VALID;
	c->seg_state |= CPU_SEG_IOBM;
}

static void sels_load(struct cpu *c, struct thread *t)
{
	struct thread_x86 *x = &t->x86;
	if (x->flags & TX_SELS) {
		seg_load_ds(x->sel[0]);
		seg_load_es(x->sel[1]);
		seg_load_fs(x->sel[2]);                 /* the FS base is loaded after */
		load_user_gs(c, x->sel[3]);
		wrmsr(MSR_KERNEL_GS_BASE, x->gs_base);
		c->seg_state |= CPU_SEG_SELS;
	} else if (c->seg_state & CPU_SEG_SELS) {
		seg_load_ds(0);
		seg_load_es(0);
		seg_load_fs(0);
		load_user_gs(c, 0);
		c->seg_state &= ~CPU_SEG_SELS;
	}
}

void x86_switch_in(struct cpu *c, struct thread *t)
{
	struct ldt *ldt = READ_ONCE(t->proc->ldt);
	if (ldt != c->ldt)
		ldt_load(c, ldt);
	tls_load(c, t);
	iobm_load(c, t);
	sels_load(c, t);
}

/* Saves the selectors and the user GS base of a thread that may have
 * loaded its own (a TLS entry, an LDT, or saved ones from before); all
 * null and no GS base: nothing to load at its next switch-in. */
void x86_switch_out(struct cpu *c, struct thread *t)
{
	struct thread_x86 *x = &t->x86;
	if (!(x->flags & (TX_TLS | TX_SELS)) && !c->ldt)
		return;                                 /* TX_IO alone: nothing to save */
	uint16_t any = 0;
	for (int i = 0; i < 4; i++)
		any |= x->sel[i] = read_sel(i);
	x->gs_base = rdmsr(MSR_KERNEL_GS_BASE);
	if ((any & ~3) || x->gs_base) {
		x->flags |= TX_SELS;
		c->seg_state |= CPU_SEG_SELS;   /* the next thread's are loaded */
	} else {
		x->flags &= ~TX_SELS;
	}
}

/* ---- the LDT ---- */

/*
 * Cross-CPU call: a CPU that has the table arg (replaced or freed) in
 * LDTR loads its running thread's current one instead.  Interrupts are
 * disabled: no switch is half done here.
 */
static void ldt_reload_here(void *arg)
{
	struct cpu *c = mycpu();
	if (c->ldt != arg)
		return;
	struct thread *t = c->curthread;
	struct ldt *cur = t && t->proc ? READ_ONCE(t->proc->ldt) : NULL;
	if (cur != c->ldt)
		ldt_load(c, cur);
}

/* p's LDT was old and has changed: every CPU with old loaded (or, when
 * old is NULL, running a thread of p) reloads; then old may be freed. */
static void ldt_replaced(struct ldt *old)
{
	smp_call_all(ldt_reload_here, old);
	kfree(old);
}

static struct ldt *ldt_alloc(uint32_t nr)
{
	struct ldt *l = kmalloc(sizeof(*l) + nr * 8UL, KM_ZERO);
	if (l)
		l->nr = nr;
	return l;
}

int x86_fork(struct proc *p, struct proc *parent)
{
	if (!READ_ONCE(parent->ldt))
		return 0;                               /* p->ldt is NULL (zeroed) */
	simple_lock(&ldt_lock);
	struct ldt *src = parent->ldt, *l = NULL;
	if (src && (l = ldt_alloc(src->nr)))
		memcpy(l->ent, src->ent, src->nr * 8UL);
	p->ldt = l;
	simple_unlock(&ldt_lock);
	return src && !l ? -ENOMEM : 0;
}

/* The process's LDT goes (exec, exit): p has one thread left, the caller. */
static void ldt_drop(struct proc *p)
{
	if (!READ_ONCE(p->ldt))
		return;
	simple_lock(&ldt_lock);
	struct ldt *old = p->ldt;
	p->ldt = NULL;
	simple_unlock(&ldt_lock);
	ldt_replaced(old);
}

void x86_proc_exit(struct proc *p)
{
	ldt_drop(p);
}

static int64_t ldt_read(void *uptr, uint64_t count)
{
	struct proc *p = curproc();
	if (count > LDT_ENTRIES * 8)
		count = LDT_ENTRIES * 8;
	if (!READ_ONCE(p->ldt))
		return 0;
	uint8_t *buf = kmalloc(count ? count : 1, KM_ZERO);
	if (!buf)
		return -ENOMEM;
	simple_lock(&ldt_lock);
	struct ldt *l = p->ldt;
	if (l) {
		uint64_t n = l->nr * 8UL;
		memcpy(buf, l->ent, n < count ? n : count);
	}
	simple_unlock(&ldt_lock);
	int64_t r = l ? (int64_t)count : 0;
	if (l && copyout(uptr, buf, count) < 0)
		r = -EFAULT;
	kfree(buf);
	return r;
}

static int64_t ldt_write(void *uptr, uint64_t count, bool oldmode)
{
	struct user_desc u;
	if (count != sizeof(u))
		return -EINVAL;
	if (copyin(&u, uptr, sizeof(u)) < 0)
		return -EFAULT;
	if (u.entry_number >= LDT_ENTRIES)
		return -EINVAL;
	if (u.contents == 3 && (oldmode || u.seg_not_present == 0))
		return -EINVAL;
	uint64_t d = 0;
	if (!((oldmode && !u.base_addr && !u.limit) || ud_empty(&u))) {
		if (oldmode)
			u.useable = 0;
		d = ud_to_desc(&u);
	}
	struct proc *p = curproc();
	simple_lock(&ldt_lock);
	struct ldt *old = p->ldt;
	uint32_t nr = old && old->nr > u.entry_number ? old->nr : u.entry_number + 1;
	struct ldt *l = ldt_alloc(nr);
	if (!l) {
		simple_unlock(&ldt_lock);
		return -ENOMEM;
	}
	if (old)
		memcpy(l->ent, old->ent, old->nr * 8UL);
	l->ent[u.entry_number] = d;
	WRITE_ONCE(p->ldt, l);
	simple_unlock(&ldt_lock);
	ldt_replaced(old);
	return 0;
}

/* Linux returns modify_ldt's int result zero-extended (not sign-extended)
 * in %rax: its errors read as large positive numbers to a libc that does
 * not know, and callers undo that. */
SYSCALL(154, modify_ldt)
{
	int64_t r;
	switch ((int)a0) {
	case 0:
		r = ldt_read((void *)a1, a2);
		break;
	case 1:
		r = ldt_write((void *)a1, a2, true);
		break;
	case 2: {
		uint64_t n = a2 > 128 ? 128 : a2;      /* the x86_64 default: zeros */
		r = clear_user((void *)a1, n) == 0 ? (int64_t)n : -EFAULT;
		break;
	}
	case 0x11:
		r = ldt_write((void *)a1, a2, false);
		break;
	default:
		r = -ENOSYS;
	}
	return (int64_t)(uint32_t)(int32_t)r;
}

/* ---- TLS entries ---- */

/* Linux's tls_desc_okay: only present 32-bit data segments (or empty ones). */
static bool tls_desc_ok(const struct user_desc *u)
{
	if (ud_empty(u) || ud_zero(u))
		return true;
	return u->seg_32bit && u->contents <= 1 && !u->seg_not_present;
}

/* Reloads a live selector of the caller that names the changed entry. */
static void tls_refresh_current(struct cpu *c, struct thread *t, uint16_t sel)
{
	if (read_sel(0) == sel)
		seg_load_ds(sel);
	if (read_sel(1) == sel)
		seg_load_es(sel);
	if (read_sel(2) == sel) {
		seg_load_fs(sel);
		t->fs_base = rdmsr(MSR_FS_BASE);
	}
	if (read_sel(3) == sel)
		load_user_gs(c, sel);
}

SYSCALL(205, set_thread_area)
{
	struct user_desc u;
	if (copyin(&u, (void *)a0, sizeof(u)) < 0)
		return -EFAULT;
	if (!tls_desc_ok(&u))
		return -EINVAL;
	struct thread *t = curthread();
	int idx = (int)u.entry_number;
	if (idx == -1) {
		for (int i = 0; i < GDT_TLS_ENTRIES && idx == -1; i++)
			if (t->x86.tls[i] == 0)
				idx = GDT_ENTRY_TLS_MIN + i;
		if (idx == -1)
			return -ESRCH;
		uint32_t e = idx;
		if (copyout((char *)a0, &e, sizeof(e)) < 0)
			return -EFAULT;
	}
	if (idx < GDT_ENTRY_TLS_MIN || idx > GDT_ENTRY_TLS_MAX)
		return -EINVAL;
	t->x86.tls[idx - GDT_ENTRY_TLS_MIN] = (ud_empty(&u) || ud_zero(&u)) ? 0 : ud_to_desc(&u);
	bool any = t->x86.tls[0] | t->x86.tls[1] | t->x86.tls[2];
	uint64_t f = intr_disable();
	struct cpu *c = mycpu();
	if (any)
		t->x86.flags |= TX_TLS;
	else
		t->x86.flags &= ~TX_TLS;
	c->seg_state |= CPU_SEG_TLS;              /* written now: cleared at the next switch */
	for (int i = 0; i < GDT_TLS_ENTRIES; i++)
		c->gdt[GDT_ENTRY_TLS_MIN + i] = t->x86.tls[i];
	tls_refresh_current(c, t, (uint16_t)(idx << 3 | SEL_RPL3));
	/* Selectors it loads from now on are saved at its switches. */
	c->seg_state |= CPU_SEG_SELS;
	intr_restore(f);
	return 0;
}

SYSCALL(211, get_thread_area)
{
	uint32_t idx;
	if (copyin(&idx, (void *)a0, sizeof(idx)) < 0)
		return -EFAULT;
	if (idx < GDT_ENTRY_TLS_MIN || idx > GDT_ENTRY_TLS_MAX)
		return -EINVAL;
	struct user_desc u;
	desc_to_ud(curthread()->x86.tls[idx - GDT_ENTRY_TLS_MIN], idx, &u);
	return copyout((void *)a0, &u, sizeof(u)) < 0 ? -EFAULT : 0;
}

/* ---- arch_prctl's GS base ---- */

/*
 * ARCH_SET_GS: %gs becomes null and the user GS base is base (Linux); the
 * thread then has its selectors and GS base kept at its switches.
 */
void x86_set_gs_base(uint64_t base)
{
	struct thread *t = curthread();
	uint64_t f = intr_disable();
	struct cpu *c = mycpu();
	load_user_gs(c, 0);
	wrmsr(MSR_KERNEL_GS_BASE, base);
	t->x86.gs_base = base;
	t->x86.sel[3] = 0;
	t->x86.flags |= TX_SELS;
	c->seg_state |= CPU_SEG_SELS;
	intr_restore(f);
}

/* ARCH_GET_GS: the live user GS base (in MSR_KERNEL_GS_BASE while in the
 * kernel; a selector loaded in user mode sets it too). */
uint64_t x86_get_gs_base(void)
{
	return rdmsr(MSR_KERNEL_GS_BASE);
}

/* ---- I/O ports ---- */

/* Loads the caller's new I/O permissions on its CPU. */
static void io_changed(struct thread *t)
{
	struct thread_x86 *x = &t->x86;
	if (x->iobm || x->iopl == 3)
		x->flags |= TX_IO;
	else
		x->flags &= ~TX_IO;
	uint64_t f = intr_disable();
	iobm_load(mycpu(), t);
	intr_restore(f);
}

SYSCALL(173, ioperm)
{
	uint64_t from = a0, num = a1;
	bool on = a2 != 0;
	if (from + num <= from || from + num > IOBM_BYTES * 8)
		return -EINVAL;
	if (on && !cap_capable(CAP_SYS_RAWIO))
		return -EPERM;
	struct thread *t = curthread();
	struct thread_x86 *x = &t->x86;
	if (!x->iobm) {
		if (!on)
			return 0;
		uint8_t *bm = kmalloc(IOBM_BYTES, 0);
		if (!bm)
			return -ENOMEM;
		memset(bm, 0xff, IOBM_BYTES);
		x->iobm = bm;
		x->iobm_len = 0;
	}
	for (uint64_t port = from; port < from + num; port++) {
		if (on)
			x->iobm[port / 8] &= ~(1 << (port % 8));
		else
			x->iobm[port / 8] |= 1 << (port % 8);
	}
	uint32_t len = IOBM_BYTES;
	while (len > 0 && x->iobm[len - 1] == 0xff)
		len--;
	x->iobm_len = len;
	uint8_t *gone = NULL;
	if (len == 0) {
		gone = x->iobm;
		x->iobm = NULL;
	}
	io_changed(t);
	kfree(gone);
	return 0;
}

SYSCALL(172, iopl)
{
	if (a0 > 3)
		return -EINVAL;
	struct thread *t = curthread();
	if (a0 == t->x86.iopl)
		return 0;
	if (a0 > t->x86.iopl && !cap_capable(CAP_SYS_RAWIO))
		return -EPERM;
	t->x86.iopl = a0;
	io_changed(t);
	return 0;
}

/* ---- threads and processes ---- */

/*
 * A new thread's x86 state, a copy of the caller's (running): its TLS
 * entries, selectors and user GS base (of a thread that has set or loaded
 * any: others have none), iopl and I/O bitmap (Linux shares
 * the bitmap; we copy it: if that fails the child has none).  CLONE_SETTLS
 * sets the FS base: the FS selector is then null.
 */
void x86_clone(struct thread *t, struct thread *pt, bool settls)
{
	struct thread_x86 *x = &t->x86, *px = &pt->x86;
	memset(x, 0, sizeof(*x));
	memcpy(x->tls, px->tls, sizeof(x->tls));
	x->iopl = px->iopl;
	if (px->iobm && (x->iobm = kmalloc(IOBM_BYTES, 0))) {
		memcpy(x->iobm, px->iobm, IOBM_BYTES);
		x->iobm_len = px->iobm_len;
	}
	x->flags = px->flags & TX_TLS;
	if (x->iobm || x->iopl == 3)
		x->flags |= TX_IO;
	if ((px->flags & (TX_TLS | TX_SELS)) || READ_ONCE(pt->proc->ldt)) {
		uint64_t f = intr_disable();           /* one CPU's registers */
		uint16_t any = 0;
		for (int i = 0; i < 4; i++)
			any |= x->sel[i] = read_sel(i);
		x->gs_base = rdmsr(MSR_KERNEL_GS_BASE);
		intr_restore(f);
		if (settls) {
			any = x->sel[0] | x->sel[1] | x->sel[3];
			x->sel[2] = 0;
		}
		if ((any & ~3) || x->gs_base)
			x->flags |= TX_SELS;
	}
}

/* exec: no TLS entries, null selectors, no LDT; the I/O permissions stay
 * (Linux keeps them across execve). */
void x86_exec(struct thread *t, struct proc *p)
{
	struct thread_x86 *x = &t->x86;
	memset(x->tls, 0, sizeof(x->tls));
	memset(x->sel, 0, sizeof(x->sel));
	x->gs_base = 0;
	x->flags &= TX_IO;
	ldt_drop(p);
	uint64_t f = intr_disable();
	struct cpu *c = mycpu();
	uint16_t live = read_sel(0) | read_sel(1) | read_sel(2) | read_sel(3);
	if ((live & ~3) || (c->seg_state & (CPU_SEG_TLS | CPU_SEG_SELS))) {
		tls_load(c, t);
		c->seg_state |= CPU_SEG_SELS;
		sels_load(c, t);                        /* nulls them */
	}
	intr_restore(f);
}

void x86_thread_release(struct thread *t)
{
	kfree(t->x86.iobm);
	t->x86.iobm = NULL;
}
