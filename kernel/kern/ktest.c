/*
 * In-kernel test runner: KTAP version 1 output on the console.  Tests are
 * the struct ktest entries the KTEST() macro places in section .ktests.
 */
#include "kernel.h"
#include "ktest.h"

extern const struct ktest __ktests_start[], __ktests_end[];

void ktest_fail(struct ktest_ctx *kt, const char *file, int line, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	kvsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kprintf("# %s: %s:%d: %s\n", kt->name, file, line, buf);
	kt->failures++;
}

/*
 * True if the test is named in the comma-separated list spec; "all" selects
 * every test not marked manual, and "prefix*" every such test whose name
 * starts with prefix.
 */
static bool selected(const char *spec, const struct ktest *t)
{
	const char *name = t->name;
	if (!strcmp(spec, "all"))
		return !t->manual;
	size_t n = strlen(name);
	for (const char *p = spec; *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && !strncmp(p, name, n))
			return true;
		if (len > 0 && p[len - 1] == '*' && !t->manual && !strncmp(p, name, len - 1))
			return true;
		p += len + (end ? 1 : 0);
	}
	return false;
}

int ktest_run(const char *spec)
{
	int total = 0, failed = 0, n = 0;
	for (const struct ktest *t = __ktests_start; t < __ktests_end; t++)
		if (selected(spec, t))
			total++;
	kprintf("KTAP version 1\n1..%d\n", total);
	if (total == 0)
		kprintf("# ktest: no test matches '%s'\n", spec);
	for (const struct ktest *t = __ktests_start; t < __ktests_end; t++) {
		if (!selected(spec, t))
			continue;
		struct ktest_ctx kt = { .failures = 0, .name = t->name, .skip = NULL };
		t->fn(&kt);
		n++;
		if (kt.failures)
			failed++;
		if (kt.skip && !kt.failures)
			kprintf("ok %d %s # SKIP %s\n", n, t->name, kt.skip);
		else
			kprintf("%s %d %s\n", kt.failures ? "not ok" : "ok", n, t->name);
	}
	kprintf("concerto: ktest: %d passed, %d failed\n", total - failed, failed);
	return total == 0 ? 1 : failed;
}
