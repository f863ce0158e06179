/*
 * In-kernel tests (KUnit-like, KTAP output).  Define a test with
 *
 *     KTEST(name_of_what_it_proves) { KT_EXPECT(x == 1); ... }
 *
 * Tests are collected in the .ktests section and run at boot by "ktest=all"
 * or "ktest=name1,name2" once every CPU is online.  A failed expectation marks
 * the test failed and lets it continue; KT_ASSERT also returns from the test.
 */
#ifndef CONCERTO_KTEST_H
#define CONCERTO_KTEST_H

#include "types.h"

struct ktest_ctx {
	int failures;
	const char *name;
	const char *skip;      /* reason, if the test skipped itself */
};

struct ktest {
	const char *name;
	void (*fn)(struct ktest_ctx *kt);
	uint64_t manual;       /* 1: run only when named, never by "all" */
};

#define KTEST_DEFINE(nm, man) \
	static void ktest_fn_##nm(struct ktest_ctx *kt); \
	static const struct ktest ktest_##nm __used __section(".ktests") \
		__aligned(8) = { #nm, ktest_fn_##nm, man }; \
	static void ktest_fn_##nm(struct ktest_ctx *kt __unused)

#define KTEST(nm) KTEST_DEFINE(nm, 0)
/* Tests that stop the system on purpose, and benchmarks: run only by name. */
#define KTEST_MANUAL(nm) KTEST_DEFINE(nm, 1)

/* Marks the test skipped (KTAP "# SKIP") and returns. */
#define KT_SKIP(reason) do { kt->skip = (reason); return; } while (0)

void ktest_fail(struct ktest_ctx *kt, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#define KT_EXPECT(e) do { if (!(e)) \
	ktest_fail(kt, __FILE__, __LINE__, "expected %s", #e); } while (0)
#define KT_EXPECT_EQ(a, b) do { \
	uint64_t _a = (uint64_t)(a), _b = (uint64_t)(b); \
	if (_a != _b) ktest_fail(kt, __FILE__, __LINE__, \
		"expected %s == %s (0x%lx vs 0x%lx)", #a, #b, _a, _b); } while (0)
#define KT_ASSERT(e) do { if (!(e)) { \
	ktest_fail(kt, __FILE__, __LINE__, "assertion %s", #e); return; } } while (0)

/* Runs the tests selected by spec ("all" or a comma list); returns failures. */
int ktest_run(const char *spec);

#endif
