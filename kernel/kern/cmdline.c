/*
 * Kernel command line: space-separated words, "key=value" or "flag".
 * Unknown words and bad values get a warning and the default; never a crash.
 */
#include "kernel.h"
#include "boot.h"
#include "watchdog.h"
#include "failinject.h"
#include "leaktrace.h"

struct bootopts bootopts = { .lockmode = -1, .spinlock_queued = -1, .idlepoll_us = -1,
			     .wakesync = -1, .tracebuf_kb = -1 };
bool boot_quiet;

static bool parse_int(const char *s, int *out)
{
	int v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 100000)
			return false;
		v = v * 10 + (*s - '0');
	}
	*out = v;
	return true;
}

/* Decimal or 0x hexadecimal, 64 bits. */
static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int base = 10;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return false;
	for (; *s; s++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return false;
		if (v > (~0UL - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return true;
}

static void set_string(char *dst, size_t n, const char *key, const char *val)
{
	if (strlen(val) >= n) {
		kprintf("concerto: warning: %s= value too long (max %lu), ignored\n",
			key, n - 1);
		return;
	}
	strlcpy(dst, val, n);
}

static void option(const char *key, const char *val)
{
	if (!strcmp(key, "lockmode")) {
		int m;
		if (!val || !parse_int(val, &m) || m > 4)
			kprintf("concerto: warning: bad lockmode=%s, using the default\n",
				val ? val : "");
		else
			bootopts.lockmode = m;
	} else if (!strcmp(key, "ktest")) {
		set_string(bootopts.ktest, sizeof(bootopts.ktest), key, val ? val : "all");
	} else if (!strcmp(key, "init")) {
		set_string(bootopts.init, sizeof(bootopts.init), key, val ? val : "");
	} else if (!strcmp(key, "rdinit")) {
		set_string(bootopts.rdinit, sizeof(bootopts.rdinit), key, val ? val : "");
	} else if (!strcmp(key, "spinlock")) {
		if (val && !strcmp(val, "queued"))
			bootopts.spinlock_queued = 1;
		else if (val && !strcmp(val, "tas"))
			bootopts.spinlock_queued = 0;
		else
			kprintf("concerto: warning: spinlock= takes queued or tas, using the default\n");
	} else if (!strcmp(key, "idlepoll")) {
		int us = 0;
		const char *v = val ? val : "";
		for (; *v >= '0' && *v <= '9' && us < 1000000; v++)
			us = us * 10 + (*v - '0');
		if (!val || *v || us > 100000)
			kprintf("concerto: warning: idlepoll= takes 0..100000 (us), using the default\n");
		else
			bootopts.idlepoll_us = us;
	} else if (!strcmp(key, "wakesync")) {
		if (val && (!strcmp(val, "0") || !strcmp(val, "1")))
			bootopts.wakesync = val[0] - '0';
		else
			kprintf("concerto: warning: wakesync= takes 0 or 1, using the default\n");
	} else if (!strcmp(key, "watchdog")) {
		int secs;
		if (!val || !parse_int(val, &secs) || secs > 3600)
			kprintf("concerto: warning: watchdog= takes 0..3600 (s), using the default\n");
		else
			watchdog_seconds = secs;
	} else if (!strcmp(key, "failslab") || !strcmp(key, "failpage")) {
		int pct;
		if (!val || !parse_int(val, &pct) || pct > 100)
			kprintf("concerto: warning: %s= takes 0..100 (percent), ignored\n", key);
		else
			fail_percent[key[4] == 's' ? FAIL_SLAB : FAIL_PAGE] = pct;
	} else if (!strcmp(key, "failseed")) {
		if (!val || !parse_u64(val, &fail_seed))
			kprintf("concerto: warning: failseed= takes a number (decimal or 0x hex), "
				"ignored\n");
		else
			fail_seed_set = true;
	} else if (!strcmp(key, "strace") && !val) {
		bootopts.strace = true;
	} else if (!strcmp(key, "norandmaps") && !val) {
		bootopts.norandmaps = true;
	} else if (!strcmp(key, "leaktrace") && !val) {
		leaktrace_enabled = true;
	} else if (!strcmp(key, "lockstat") && !val) {
		bootopts.lockstat = true;
	} else if (!strcmp(key, "trace")) {
		set_string(bootopts.trace, sizeof(bootopts.trace), key, val ? val : "all");
	} else if (!strcmp(key, "tracebuf")) {
		int kb;
		if (!val || !parse_int(val, &kb) || kb > 4096)
			kprintf("concerto: warning: tracebuf= takes 0..4096 (KiB per CPU), "
				"using the default\n");
		else
			bootopts.tracebuf_kb = kb;
	} else if (!strcmp(key, "quiet") && !val) {
		bootopts.quiet = true;
		boot_quiet = true;
	} else {
		kprintf("concerto: warning: unknown option '%s%s%s' ignored\n",
			key, val ? "=" : "", val ? val : "");
	}
}

/* Parses cmdline (not modified) into bootopts.  Words after "--" are init's arguments. */
void cmdline_parse(const char *cmdline)
{
	char word[CMDLINE_MAX];
	const char *p = cmdline;
	while (*p) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (p[0] == '-' && p[1] == '-' && (p[2] == ' ' || p[2] == '\0')) {
			strlcpy(bootopts.init_args, p + 2, sizeof(bootopts.init_args));
			return;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		size_t n = 0;
		while (*p && *p != ' ' && *p != '\t') {
			if (n < sizeof(word) - 1)
				word[n++] = *p;
			p++;
		}
		if (!n)
			break;
		word[n] = '\0';
		char *eq = strchr(word, '=');
		if (eq)
			*eq = '\0';
		option(word, eq ? eq + 1 : NULL);
	}
}
