#define _GNU_SOURCE
/* No execution from memory that is not code: jumping into a data page
 * (mmap without PROT_EXEC), the stack, the heap (brk) or the program's
 * writable data is SIGSEGV; the same bytes in a PROT_EXEC mapping run,
 * and mprotect adding or removing PROT_EXEC takes effect. */
#include "utest.h"
#include <sys/personality.h>

static unsigned char data_code[16] = { 0xb8, 42, 0, 0, 0, 0xc3 };   /* mov $42,%eax; ret */
static const unsigned char code[] = { 0xb8, 42, 0, 0, 0, 0xc3 };

typedef int (*fn_t)(void);

static int call_at(void *p)
{
	memcpy(p, code, sizeof(code));
	__builtin___clear_cache((char *)p, (char *)p + sizeof(code));
	return ((fn_t)p)();
}

/* In a child: run the code at where(); the exit status or the signal. */
static int run_child(void *(*where)(void))
{
	pid_t c = fork();
	if (c == 0) {
		void *p = where();
		_exit(p && call_at(p) == 42 ? 0 : 1);
	}
	int st;
	if (waitpid(c, &st, 0) != c)
		return -1;
	return st;
}

static int segv(int st)
{
	return st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static void *rw_map(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void *rwx_map(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void *heap(void)
{
	unsigned long cur = syscall(SYS_brk, 0);
	if ((unsigned long)syscall(SYS_brk, cur + 8192) != cur + 8192)
		return NULL;
	return (void *)((cur + 4095) & ~4095UL);
}

static void *data(void)
{
	return data_code;
}

/* Executes from its own stack frame (the stack is not executable). */
static int stack_run(void *arg)
{
	(void)arg;
	unsigned char buf[64];
	return call_at(buf) == 42 ? 0 : 1;
}

static void *mprotect_off(void)
{
	void *p = rwx_map();
	if (!p || call_at(p) != 42)
		return NULL;
	mprotect(p, 4096, PROT_READ | PROT_WRITE);
	return p;
}

static void *mprotect_on(void)
{
	void *p = rw_map();
	if (p && mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return NULL;
	return p;
}

UT_TEST(data_mappings_do_not_execute)
{
	if (personality(0xffffffff) & READ_IMPLIES_EXEC) {
		ut_skip("READ_IMPLIES_EXEC");
		return;
	}
	T_EXPECT(segv(run_child(rw_map)));
	T_EXPECT(segv(run_child(heap)));
	T_EXPECT(segv(run_child(data)));
	T_EXPECT(segv(ut_child(stack_run, NULL)));
	T_EXPECT(segv(run_child(mprotect_off)));
}

UT_TEST(exec_mappings_execute)
{
	int st = run_child(rwx_map);
	T_EXPECT(UT_CHILD_OK(st));
	st = run_child(mprotect_on);
	T_EXPECT(UT_CHILD_OK(st));
}

UT_MAIN
