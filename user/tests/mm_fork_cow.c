/* mm_fork_cow: memory across fork — private pages are copy-on-write in both
 * directions (heap-like anonymous memory, static data, stack, read-only
 * pages), MAP_SHARED|MAP_ANONYMOUS memory is shared with children and
 * grandchildren, a child's munmap/mprotect does not affect the parent, and
 * N processes writing to the same inherited pages at once each see only
 * their own writes (race library, N = 2, 4, 8). */
#define _GNU_SOURCE
#include "utest.h"
#include "race.h"

#define PG 4096UL

static int static_data = 1;

static int wait_ok(pid_t p)
{
	int st;
	return waitpid(p, &st, 0) == p && UT_CHILD_OK(st);
}

UT_TEST(private_pages_copy_on_write)
{
	size_t len = 64 * PG;
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	for (size_t i = 0; i < len; i += PG)
		p[i] = 'A';
	volatile int *sync = ut_shared(PG);
	T_ASSERT(sync);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int bad = 0;
		for (size_t i = 0; i < len; i += PG)
			bad += p[i] != 'A';
		for (size_t i = 0; i < len; i += PG)
			p[i] = 'B';
		sync[0] = 1;            /* child wrote */
		while (!sync[1])        /* parent wrote */
			ut_sleep_ms(1);
		for (size_t i = 0; i < len; i += PG)
			bad += p[i] != 'B';
		_exit(bad ? 1 : 0);
	}
	while (!sync[0])
		ut_sleep_ms(1);
	int bad = 0;
	for (size_t i = 0; i < len; i += PG)
		bad += p[i] != 'A';
	for (size_t i = 0; i < len; i += 2 * PG)
		p[i] = 'C';
	sync[1] = 1;
	T_EXPECT(wait_ok(c));
	for (size_t i = 0; i < len; i += PG)
		bad += p[i] != ((i / PG) % 2 == 0 ? 'C' : 'A');
	T_EXPECT_EQ(bad, 0);
	munmap(p, len);
	munmap((void *)sync, PG);
}

UT_TEST(static_data_and_stack_copy_on_write)
{
	volatile int local = 10;
	static_data = 20;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		int ok = local == 10 && static_data == 20;
		local = 11;
		static_data = 21;
		_exit(ok && local == 11 && static_data == 21 ? 0 : 1);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(local, 10);
	T_EXPECT_EQ(static_data, 20);
}

UT_TEST(readonly_page_stays_private_after_child_mprotect)
{
	char *p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	p[0] = 'r';
	T_ASSERT(mprotect(p, PG, PROT_READ) == 0);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (mprotect(p, PG, PROT_READ | PROT_WRITE) != 0)
			_exit(1);
		p[0] = 'w';
		_exit(p[0] == 'w' ? 0 : 2);
	}
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(p[0], 'r');
	munmap(p, PG);
}

UT_TEST(child_munmap_does_not_affect_parent)
{
	char *p = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(p != MAP_FAILED);
	memset(p, 'x', 4 * PG);
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0)
		_exit(munmap(p, 4 * PG) == 0 ? 0 : 1);
	T_EXPECT(wait_ok(c));
	T_EXPECT_EQ(p[3 * PG + 5], 'x');
	munmap(p, 4 * PG);
}

UT_TEST(shared_anonymous_shared_both_ways)
{
	size_t len = 16 * PG;
	volatile unsigned char *s = mmap(NULL, len, PROT_READ | PROT_WRITE,
					 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(s != MAP_FAILED);
	T_EXPECT_EQ(s[len - 1], 0);
	s[0] = 1;
	pid_t c = fork();
	T_ASSERT(c >= 0);
	if (c == 0) {
		if (s[0] != 1)
			_exit(1);
		for (size_t i = PG; i < len; i += PG)
			s[i] = 2;
		/* a grandchild shares it too */
		pid_t g = fork();
		if (g == 0) {
			s[5] = 3;
			_exit(0);
		}
		if (!wait_ok(g))
			_exit(2);
		while (s[1] != 9) /* wait for the parent's write */
			ut_sleep_ms(1);
		_exit(0);
	}
	uint64_t t0 = ut_now_ns();
	while (s[5] != 3 && ut_now_ns() - t0 < 3000000000ull)
		ut_sleep_ms(1);
	int bad = 0;
	for (size_t i = PG; i < len; i += PG)
		bad += s[i] != 2;
	T_EXPECT_EQ(bad, 0);
	T_EXPECT_EQ(s[5], 3);
	s[1] = 9;
	T_EXPECT(wait_ok(c));
	munmap((void *)s, len);
}

struct cow_race {
	unsigned char *p;
	size_t len;
};

static int cow_contender(struct race *r, int id, void *arg)
{
	struct cow_race *cr = arg;
	(void)r;
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < cr->len; i += 64)
			cr->p[i] = (unsigned char)(id + round);
		for (size_t i = 0; i < cr->len; i += 64)
			if (cr->p[i] != (unsigned char)(id + round))
				return 1;
		if (race_barrier(r) < 0)
			return 2;
	}
	return 0;
}

UT_TEST(concurrent_cow_writers)
{
	struct cow_race cr = { NULL, 32 * PG };
	cr.p = mmap(NULL, cr.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(cr.p != MAP_FAILED);
	memset(cr.p, 0xee, cr.len);
	for (int n = 2; n <= 8; n *= 2) {
		struct race *r = race_new(n);
		T_ASSERT(r);
		int bad = race_run(r, cow_contender, &cr);
		T_EXPECT_EQ(bad, 0);
		race_free(r);
	}
	int bad = 0;
	for (size_t i = 0; i < cr.len; i++)
		bad += cr.p[i] != 0xee;
	T_EXPECT_EQ(bad, 0);
	munmap(cr.p, cr.len);
}

UT_MAIN
