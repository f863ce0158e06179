/*
 * sysinfo(2): memory figures that agree with each other, a thread count
 * that sees our own children (Linux's procs is nr_threads), and EFAULT for
 * a bad buffer.
 */
#define _GNU_SOURCE
#include "utest.h"
#include <signal.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>

UT_TEST(memory_figures_agree)
{
	struct sysinfo si;
	T_OK(sysinfo(&si));
	T_EXPECT(si.mem_unit >= 1);
	T_EXPECT(si.totalram > 0);
	T_EXPECT(si.freeram > 0 && si.freeram <= si.totalram);
	long pages = sysconf(_SC_PHYS_PAGES);
	T_EXPECT(pages > 0);
	/* musl's _SC_PHYS_PAGES is totalram * mem_unit / page size */
	T_EXPECT_EQ((unsigned long)pages,
		    (unsigned long)(si.totalram * si.mem_unit / sysconf(_SC_PAGESIZE)));
}

UT_TEST(procs_counts_our_live_children)
{
	enum { N = 4 };
	pid_t kids[N];
	int p[2];
	T_OK(pipe(p));
	for (int i = 0; i < N; i++) {
		kids[i] = fork();
		T_ASSERT(kids[i] >= 0);
		if (kids[i] == 0) {
			char c;
			close(p[1]);
			(void)!read(p[0], &c, 1);   /* until the parent closes */
			_exit(0);
		}
	}
	struct sysinfo si;
	T_OK(sysinfo(&si));
	ut_diag("procs %u", si.procs);
	T_EXPECT(si.procs >= N + 1);       /* the children and this process */
	close(p[0]);
	close(p[1]);
	for (int i = 0; i < N; i++) {
		int st;
		T_EXPECT_EQ(waitpid(kids[i], &st, 0), kids[i]);
	}
}

UT_TEST(bad_buffer_is_efault)
{
	T_EXPECT_ERRNO(syscall(SYS_sysinfo, NULL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_sysinfo, UT_BADPTR_KERNEL), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_sysinfo, ut_readonly_page()), EFAULT);
	T_EXPECT_ERRNO(syscall(SYS_sysinfo, ut_unmapped_page()), EFAULT);
}

UT_MAIN
