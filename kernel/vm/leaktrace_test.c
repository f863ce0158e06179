/* Tests for leak tracing (leaktrace.c); they need the boot option leaktrace
 * (the ktest-leaktrace row of tools/runtest.py boots with it). */
#include "kernel.h"
#include "errno.h"
#include "kmem.h"
#include "ktest.h"
#include "leaktrace.h"
#include "page.h"
#include "sbuf.h"

/* The report, as text (the caller frees sb). */
static void report(struct sbuf *sb)
{
	sbuf_init(sb);
	leaktrace_format(sb);
}

/* A distinct function, so the allocations carry its name in their chain. */
static __attribute__((noinline)) void *leaktrace_test_allocator(size_t n, bool page)
{
	void *p = page ? page_alloc(0) : kmalloc(n, 0);
	__asm__ volatile("" ::: "memory");   /* not a tail call: keep the frame */
	return p;
}

KTEST(leaktrace_names_what_is_held_since_the_mark_and_forgets_what_is_freed)
{
	if (!leaktrace_enabled)
		KT_SKIP("boot option leaktrace not given");
	KT_ASSERT(leaktrace_command("mark") == 0);
	KT_EXPECT_EQ(leaktrace_command("bogus"), -EINVAL);
	void *a = leaktrace_test_allocator(200, false);
	void *b = leaktrace_test_allocator(0, true);
	KT_ASSERT(a && b);
	memcpy(a, "leaktrace-peek", 15);

	struct sbuf sb;
	report(&sb);
	KT_EXPECT(!sb.overflow);
	KT_EXPECT(strstr(sb.buf, "leaktrace_test_allocator") != NULL);
	KT_EXPECT(strstr(sb.buf, "     200  seq") != NULL);     /* the kmalloc's size */
	KT_EXPECT(strstr(sb.buf, "    4096  seq") != NULL);     /* the page */
	KT_EXPECT(strstr(sb.buf, "6b61656c") != NULL);          /* "leak" peeked */
	sbuf_free(&sb);

	kfree(a);
	page_free(b);
	report(&sb);
	KT_EXPECT(strstr(sb.buf, "leaktrace_test_allocator") == NULL);
	sbuf_free(&sb);

	/* A new mark hides what was allocated before it. */
	a = leaktrace_test_allocator(64, false);
	KT_ASSERT(a);
	KT_ASSERT(leaktrace_command("mark") == 0);
	report(&sb);
	KT_EXPECT(strstr(sb.buf, "leaktrace_test_allocator") == NULL);
	sbuf_free(&sb);
	kfree(a);
}

/* Many live entries whose home slots collide, freed in an order that makes
 * backward-shift deletion move entries: every one is still found and
 * removed (the table ends as it began). */
KTEST(leaktrace_table_survives_churn)
{
	if (!leaktrace_enabled)
		KT_SKIP("boot option leaktrace not given");
	enum { N = 512 };
	static void *p[N];
	KT_ASSERT(leaktrace_command("mark") == 0);
	for (int i = 0; i < N; i++)
		KT_ASSERT((p[i] = leaktrace_test_allocator(16 + (size_t)(i % 7) * 16, false)));
	for (int i = 0; i < N; i += 2)
		kfree(p[i]);
	for (int i = N - 1; i > 0; i -= 2)
		kfree(p[i]);
	struct sbuf sb;
	report(&sb);
	KT_EXPECT(strstr(sb.buf, "leaktrace_test_allocator") == NULL);
	sbuf_free(&sb);
}
