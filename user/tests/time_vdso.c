/* time_vdso: the vDSO named by AT_SYSINFO_EHDR — a valid ELF whose
 * __vdso_clock_gettime, __vdso_gettimeofday, __vdso_time and __vdso_getcpu
 * are found with version LINUX_2.6 through DT_HASH and DT_GNU_HASH (as
 * musl, glibc and Go look them up); its readings and the system call's are
 * ordered (vdso <= syscall <= vdso) for every clock it reads itself, also
 * after fork, in an exec'd image and across threads; gettimeofday and time
 * agree with CLOCK_REALTIME; ids it does not read (CPU-time clocks, bad
 * ids) give the system call's answers (EINVAL, EFAULT); [vvar] and [vdso]
 * are in /proc/self/maps, the data page is readable and stays unwritable
 * (mprotect: EACCES; a store: SIGSEGV); on Concerto, clock_settime moves
 * the vDSO's CLOCK_REALTIME at once.  (On Linux the vDSO itself faults on a
 * bad pointer for the clocks it reads: not tested.) */
#define _GNU_SOURCE
#include "utest.h"
#include <elf.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>

typedef long (*cgt_fn)(long, struct timespec *);
typedef long (*gtod_fn)(struct timeval *, void *);
typedef long (*time_fn)(long *);
typedef long (*getcpu_fn)(unsigned *, unsigned *, void *);

/* ---- a small vDSO parser (the ELF spec's hash tables and versions) ---- */

struct vdso {
	uintptr_t base, load;           /* AT_SYSINFO_EHDR; load bias */
	const Elf64_Sym *sym;
	const char *str;
	const uint32_t *hash, *gnu;
	const uint16_t *versym;
	const Elf64_Verdef *verdef;
};

static unsigned long elf_hash(const char *s)
{
	unsigned long h = 0;
	while (*s) {
		h = (h << 4) + (unsigned char)*s++;
		unsigned long g = h & 0xf0000000;
		if (g)
			h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* 0 and *v filled, or a code saying what is wrong. */
static int vdso_parse(struct vdso *v)
{
	memset(v, 0, sizeof(*v));
	v->base = getauxval(AT_SYSINFO_EHDR);
	if (!v->base)
		return 1;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)v->base;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_type != ET_DYN || eh->e_machine != EM_X86_64 ||
	    eh->e_phentsize != sizeof(Elf64_Phdr))
		return 2;
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(v->base + eh->e_phoff);
	const Elf64_Dyn *dyn = NULL;
	int load = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD && !load) {
			v->load = v->base + ph[i].p_offset - ph[i].p_vaddr;
			load = 1;
		} else if (ph[i].p_type == PT_DYNAMIC) {
			dyn = (const Elf64_Dyn *)(v->base + ph[i].p_offset);
		}
	}
	if (!load || !dyn)
		return 3;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t p = v->load + dyn->d_un.d_ptr;
		switch (dyn->d_tag) {
		case DT_SYMTAB: v->sym = (const Elf64_Sym *)p; break;
		case DT_STRTAB: v->str = (const char *)p; break;
		case DT_HASH: v->hash = (const uint32_t *)p; break;
		case DT_GNU_HASH: v->gnu = (const uint32_t *)p; break;
		case DT_VERSYM: v->versym = (const uint16_t *)p; break;
		case DT_VERDEF: v->verdef = (const Elf64_Verdef *)p; break;
		case DT_NEEDED: return 4;
		case DT_RELA: case DT_REL: case 36 /* DT_RELR */: return 5;
		}
	}
	if (!v->sym || !v->str || (!v->hash && !v->gnu))
		return 6;
	return 0;
}

/* Symbol i is a defined function of version ver (versym/verdef). */
static int sym_ok(const struct vdso *v, uint32_t i, const char *name, const char *ver)
{
	const Elf64_Sym *s = &v->sym[i];
	if (strcmp(v->str + s->st_name, name) != 0 || s->st_shndx == SHN_UNDEF ||
	    ELF64_ST_TYPE(s->st_info) != STT_FUNC)
		return 0;
	if (!v->versym || !v->verdef)
		return 1;
	uint16_t vi = v->versym[i] & 0x7fff;
	for (const Elf64_Verdef *d = v->verdef;;
	     d = (const Elf64_Verdef *)((const char *)d + d->vd_next)) {
		if (!(d->vd_flags & VER_FLG_BASE) && (d->vd_ndx & 0x7fff) == vi) {
			const Elf64_Verdaux *a = (const Elf64_Verdaux *)((const char *)d + d->vd_aux);
			return d->vd_hash == elf_hash(ver) && strcmp(v->str + a->vda_name, ver) == 0;
		}
		if (!d->vd_next)
			return 0;
	}
}

static void *lookup_hash(const struct vdso *v, const char *name, const char *ver)
{
	if (!v->hash)
		return NULL;
	uint32_t nbucket = v->hash[0];
	const uint32_t *bucket = v->hash + 2, *chain = bucket + nbucket;
	for (uint32_t i = bucket[elf_hash(name) % nbucket]; i; i = chain[i])
		if (sym_ok(v, i, name, ver))
			return (void *)(v->load + v->sym[i].st_value);
	return NULL;
}

static void *lookup_gnu(const struct vdso *v, const char *name, const char *ver)
{
	if (!v->gnu)
		return NULL;
	uint32_t nb = v->gnu[0], symoff = v->gnu[1], nbloom = v->gnu[2], shift = v->gnu[3];
	const uint64_t *bloom = (const uint64_t *)(v->gnu + 4);
	const uint32_t *buckets = (const uint32_t *)(bloom + nbloom);
	const uint32_t *chain = buckets + nb;
	uint32_t h = gnu_hash(name);
	uint64_t w = bloom[(h / 64) % nbloom];
	if (!((w >> (h % 64)) & (w >> ((h >> shift) % 64)) & 1))
		return NULL;
	uint32_t i = buckets[h % nb];
	if (i < symoff)
		return NULL;
	for (;; i++) {
		uint32_t ch = chain[i - symoff];
		if ((ch | 1) == (h | 1) && sym_ok(v, i, name, ver))
			return (void *)(v->load + v->sym[i].st_value);
		if (ch & 1)
			return NULL;
	}
}

/* The function name@LINUX_2.6, found the same through every hash table. */
static void *vdso_fn(const char *name)
{
	struct vdso v;
	if (vdso_parse(&v) != 0)
		return NULL;
	void *a = lookup_hash(&v, name, "LINUX_2.6"), *b = lookup_gnu(&v, name, "LINUX_2.6");
	if (v.hash && v.gnu && a != b)
		return NULL;
	return a ? a : b;
}

static long long ts_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static const int fast_clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME,
				   CLOCK_MONOTONIC_RAW, CLOCK_MONOTONIC_COARSE,
				   CLOCK_REALTIME_COARSE };

/* rounds of vdso <= syscall <= vdso on each clock: 0, or 10 + the clock
 * index (out of order), 40 (a call failed), 50 (no vDSO function). */
static int order_rounds(int rounds)
{
	cgt_fn cgt = (cgt_fn)vdso_fn("__vdso_clock_gettime");
	if (!cgt)
		return 50;
	for (unsigned c = 0; c < sizeof(fast_clocks) / sizeof(fast_clocks[0]); c++) {
		int clk = fast_clocks[c];
		for (int i = 0; i < rounds; i++) {
			struct timespec a, b, d;
			if (cgt(clk, &a) != 0 || syscall(SYS_clock_gettime, clk, &b) != 0 ||
			    cgt(clk, &d) != 0)
				return 40;
			if (ts_ns(&a) > ts_ns(&b) || ts_ns(&b) > ts_ns(&d) ||
			    a.tv_nsec < 0 || a.tv_nsec >= 1000000000)
				return 10 + (int)c;
		}
	}
	return 0;
}

static int order_child(void *arg)
{
	(void)arg;
	return order_rounds(2000);
}

/* ---- the exec'd side ---- */

int main(int argc, char **argv)
{
	const char *mode = getenv("UTEST_VDSO_MODE");
	if (mode && strcmp(mode, "order") == 0)
		return order_rounds(2000);
	return ut_main(argc, argv);
}

static int on_concerto(void)
{
	struct utsname u;
	return uname(&u) == 0 && strstr(u.release, "concerto") != NULL;
}

UT_TEST(auxv_names_an_elf_with_the_linux_2_6_functions)
{
	struct vdso v;
	int r = vdso_parse(&v);
	T_EXPECT_EQ(r, 0);
	if (r)
		return;
	T_EXPECT(v.hash != NULL || v.gnu != NULL);
	T_EXPECT(v.versym != NULL && v.verdef != NULL);
	static const char *names[] = { "__vdso_clock_gettime", "__vdso_gettimeofday",
				       "__vdso_time", "__vdso_getcpu" };
	for (int i = 0; i < 4; i++) {
		void *h = lookup_hash(&v, names[i], "LINUX_2.6");
		void *g = lookup_gnu(&v, names[i], "LINUX_2.6");
		if (v.hash)
			T_EXPECT(h != NULL);
		if (v.gnu)
			T_EXPECT(g != NULL);
		if (v.hash && v.gnu)
			T_EXPECT(h == g);
		/* inside the image's mapping, found under no other version */
		T_EXPECT((uintptr_t)(h ? h : g) > v.base);
		T_EXPECT(lookup_hash(&v, names[i], "LINUX_2.5") == NULL);
		T_EXPECT(lookup_gnu(&v, names[i], "LINUX_2.5") == NULL);
	}
	T_EXPECT(lookup_hash(&v, "__vdso_no_such_function", "LINUX_2.6") == NULL);
	T_EXPECT(lookup_gnu(&v, "__vdso_no_such_function", "LINUX_2.6") == NULL);
}

UT_TEST(vdso_syscall_vdso_readings_are_ordered)
{
	T_EXPECT_EQ(order_rounds(5000), 0);
}

UT_TEST(ordered_after_fork)
{
	int st = ut_child(order_child, NULL);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("child: %s", ut_status_str(st));
}

UT_TEST(ordered_in_an_execd_image)
{
	pid_t p = fork();
	T_ASSERT(p >= 0);
	if (p == 0) {
		char *av[] = { (char *)ut_argv0, NULL };
		char *ev[] = { "UTEST_VDSO_MODE=order", NULL };
		execve(ut_argv0, av, ev);
		_exit(99);
	}
	int st;
	T_EXPECT_EQ(waitpid(p, &st, 0), p);
	T_EXPECT(UT_CHILD_OK(st));
	if (!UT_CHILD_OK(st))
		ut_diag("exec'd child: %s", ut_status_str(st));
}

/* Threads taking turns with the vDSO and the system call never see the
 * monotonic clock below what another thread saw before. */
static long long seen_max;
static volatile int thr_bad;

static void *mono_thread(void *arg)
{
	cgt_fn cgt = (cgt_fn)arg;
	for (int i = 0; i < 20000 && !thr_bad; i++) {
		long long m = __atomic_load_n(&seen_max, __ATOMIC_SEQ_CST);
		struct timespec ts;
		if ((i & 1) ? cgt(CLOCK_MONOTONIC, &ts) : syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts)) {
			thr_bad = 2;
			break;
		}
		long long t = ts_ns(&ts);
		if (t < m) {
			thr_bad = 1;
			break;
		}
		while (t > m && !__atomic_compare_exchange_n(&seen_max, &m, t, 0,
							     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
	}
	return NULL;
}

UT_TEST(monotonic_across_threads)
{
	cgt_fn cgt = (cgt_fn)vdso_fn("__vdso_clock_gettime");
	T_ASSERT(cgt != NULL);
	pthread_t t[3];
	for (int i = 0; i < 3; i++)
		T_ASSERT(pthread_create(&t[i], NULL, mono_thread, (void *)cgt) == 0);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	T_EXPECT_EQ(thr_bad, 0);
}

UT_TEST(gettimeofday_and_time_agree_with_realtime)
{
	cgt_fn cgt = (cgt_fn)vdso_fn("__vdso_clock_gettime");
	gtod_fn gtod = (gtod_fn)vdso_fn("__vdso_gettimeofday");
	time_fn tm = (time_fn)vdso_fn("__vdso_time");
	T_ASSERT(cgt && gtod && tm);
	for (int i = 0; i < 1000; i++) {
		struct timespec a, b;
		struct timeval tv;
		struct { int mw, dst; } tz = { 123, 456 };
		long t1, t2 = -1;
		T_ASSERT(cgt(CLOCK_REALTIME, &a) == 0);
		T_ASSERT(gtod(&tv, &tz) == 0);
		t1 = tm(&t2);
		T_ASSERT(cgt(CLOCK_REALTIME, &b) == 0);
		long long us = tv.tv_sec * 1000000LL + tv.tv_usec;
		T_EXPECT(ts_ns(&a) / 1000 <= us && us <= ts_ns(&b) / 1000);
		T_EXPECT(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
		/* Linux's time() reads the coarse clock, updated at its tick:
		 * it may still show the second before a precise reading. */
		T_EXPECT(a.tv_sec - 1 <= t1 && t1 <= b.tv_sec && t1 == t2);
		T_EXPECT(tz.mw == 0 && tz.dst == 0);    /* UTC on both */
		T_EXPECT(gtod(NULL, NULL) == 0);
		T_EXPECT(tm(NULL) >= t1);
		if (ut_failed)
			return;
	}
}

UT_TEST(other_clocks_take_the_system_call_errors_and_all)
{
	cgt_fn cgt = (cgt_fn)vdso_fn("__vdso_clock_gettime");
	T_ASSERT(cgt != NULL);
	struct timespec ts;
	/* raw -errno, as the system call returns it */
	T_EXPECT_EQ(cgt(99, &ts), -EINVAL);
	T_EXPECT_EQ(cgt(12345, &ts), -EINVAL);
	T_EXPECT_EQ(cgt(10, &ts), -EINVAL);                /* CLOCK_SGI_CYCLE */
	T_EXPECT_EQ(cgt(CLOCK_PROCESS_CPUTIME_ID, UT_BADPTR_LOW), -EFAULT);
	T_EXPECT_EQ(cgt(CLOCK_THREAD_CPUTIME_ID, UT_BADPTR_KERNEL), -EFAULT);
	T_EXPECT_EQ(cgt(CLOCK_PROCESS_CPUTIME_ID, &ts), 0);
	T_EXPECT(ts.tv_sec >= 0 && ts.tv_nsec >= 0 && ts.tv_nsec < 1000000000);
	struct timespec a, b;
	T_EXPECT_EQ(cgt(CLOCK_THREAD_CPUTIME_ID, &a), 0);
	for (volatile int i = 0; i < 100000; i++)
		;
	T_EXPECT_EQ(cgt(CLOCK_THREAD_CPUTIME_ID, &b), 0);
	T_EXPECT(ts_ns(&b) >= ts_ns(&a));
	/* and libc's clock_gettime (through the vDSO) says the same */
	T_EXPECT_ERRNO(clock_gettime(99, &ts), EINVAL);
}

UT_TEST(getcpu_names_an_online_cpu)
{
	getcpu_fn gc = (getcpu_fn)vdso_fn("__vdso_getcpu");
	T_ASSERT(gc != NULL);
	unsigned cpu = ~0u, node = ~0u;
	T_EXPECT_EQ(gc(&cpu, &node, NULL), 0);
	cpu_set_t set;
	T_ASSERT(sched_getaffinity(0, sizeof(set), &set) == 0);
	T_EXPECT(cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set));
	T_EXPECT_EQ(node, 0);
	T_EXPECT_EQ(gc(NULL, NULL, NULL), 0);
}

/* The [vvar] and [vdso] lines of /proc/self/maps: 0 if both found. */
static int find_maps(uintptr_t *vvar_lo, uintptr_t *vvar_hi, uintptr_t *vdso_lo,
		     uintptr_t *vdso_hi, int *stack)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	char line[256];
	int found = 0;
	*stack = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (strstr(line, "[vvar]") && !strstr(line, "[vvar_")) {
			*vvar_lo = lo;
			*vvar_hi = hi;
			found |= 1;
		} else if (strstr(line, "[vdso]")) {
			*vdso_lo = lo;
			*vdso_hi = hi;
			found |= 2;
		} else if (strstr(line, "[stack]")) {
			*stack = 1;
		}
	}
	fclose(f);
	return found == 3 ? 0 : found + 1;
}

static int store_vvar(void *arg)
{
	*(volatile char *)arg = 1;
	return 0;
}

UT_TEST(vvar_and_vdso_in_maps_readable_never_writable)
{
	uintptr_t vl = 0, vh = 0, dl = 0, dh = 0;
	int stack;
	int r = find_maps(&vl, &vh, &dl, &dh, &stack);
	T_EXPECT_EQ(r, 0);
	if (r)
		return;
	T_EXPECT(stack);                      /* still named */
	T_EXPECT_EQ(dl, getauxval(AT_SYSINFO_EHDR));
	T_EXPECT(vh <= dl);                   /* the data below the text */
	volatile char c = *(volatile char *)vl;   /* readable */
	(void)c;
	T_EXPECT_ERRNO(mprotect((void *)vl, 4096, PROT_READ | PROT_WRITE), EACCES);
	T_EXPECT_ERRNO(mprotect((void *)vl, vh - vl, PROT_WRITE), EACCES);
	int st = ut_child(store_vvar, (void *)vl);
	T_EXPECT(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	/* still working after all that */
	T_EXPECT_EQ(order_rounds(100), 0);
}

UT_TEST(settime_moves_the_vdso_realtime)
{
	if (!on_concerto() || geteuid() != 0) {
		ut_skip("sets the clock: Concerto as root only (the host's clock must not move)");
		return;
	}
	cgt_fn cgt = (cgt_fn)vdso_fn("__vdso_clock_gettime");
	T_ASSERT(cgt != NULL);
	struct timespec m0, r0, r1, s1, m1;
	T_ASSERT(clock_gettime(CLOCK_MONOTONIC, &m0) == 0);
	T_ASSERT(clock_gettime(CLOCK_REALTIME, &r0) == 0);
	struct timespec ahead = { r0.tv_sec + 100000, r0.tv_nsec };
	T_ASSERT(clock_settime(CLOCK_REALTIME, &ahead) == 0);
	T_EXPECT_EQ(cgt(CLOCK_REALTIME, &r1), 0);
	T_EXPECT_EQ(syscall(SYS_clock_gettime, CLOCK_REALTIME, &s1), 0);
	T_EXPECT(ts_ns(&r1) >= ts_ns(&ahead) && ts_ns(&r1) < ts_ns(&ahead) + 5000000000LL);
	T_EXPECT(ts_ns(&r1) <= ts_ns(&s1));
	struct timeval tv;
	T_EXPECT_EQ(((gtod_fn)vdso_fn("__vdso_gettimeofday"))(&tv, NULL), 0);
	T_EXPECT(tv.tv_sec >= ahead.tv_sec);
	/* back to where it was, plus the time that went by */
	T_ASSERT(clock_gettime(CLOCK_MONOTONIC, &m1) == 0);
	long long back = ts_ns(&r0) + (ts_ns(&m1) - ts_ns(&m0));
	struct timespec rb = { back / 1000000000LL, back % 1000000000LL };
	T_ASSERT(clock_settime(CLOCK_REALTIME, &rb) == 0);
	T_EXPECT_EQ(cgt(CLOCK_REALTIME, &r1), 0);
	T_EXPECT(ts_ns(&r1) >= back && ts_ns(&r1) < back + 5000000000LL);
	T_EXPECT_EQ(order_rounds(100), 0);
}
