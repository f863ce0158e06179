/*
 * Leak tracing (leaktrace.h): a table of live allocations, each with the
 * call chain that made it, kept while the boot option `leaktrace` is on.
 *
 * The table is an open-addressing hash of LT_SLOTS entries keyed by the
 * allocation's address, with linear probing and backward-shift deletion (no
 * tombstones, so churn does not fill it).  It lives in pages taken at boot,
 * so it is outside every leak check.  When it is full an allocation is not
 * recorded and counted in `dropped`.
 *
 * Lock key: (t) lt_lock, taken with interrupts disabled (allocations happen
 * in interrupt handlers and under every lock up to kmem_pool); it is a leaf.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "leaktrace.h"
#include "lock.h"
#include "page.h"
#include "sbuf.h"
#include "kmem.h"
#include "cpu.h"

#define LT_DEPTH        6               /* return addresses kept per allocation */
#define LT_BLOCK_ORDER  MAX_ORDER       /* the table: LT_BLOCKS blocks of 4 MiB */
#define LT_BLOCKS       4
#define LT_GROUPS       64              /* call chains a report shows */

struct lt_entry {
	uint64_t key;                   /* (t) address; 0 = free slot */
	uint32_t seq;                   /* (t) allocation number */
	uint32_t bytes;                 /* (t) size (saturated) */
	uint64_t pc[LT_DEPTH];          /* (t) call chain, innermost first */
};

#define LT_PER_BLOCK    ((PAGE_SIZE << LT_BLOCK_ORDER) / sizeof(struct lt_entry))
#define LT_SLOTS        (LT_PER_BLOCK * LT_BLOCKS)

bool leaktrace_enabled;                         /* [I] */
static struct simple_lock lt_lock;
static struct lt_entry *lt_block[LT_BLOCKS];    /* [I] */
static uint32_t lt_seq;                         /* (t) last allocation number */
static uint32_t lt_mark;                        /* (t) reports list seq > mark */
static uint64_t lt_used;                        /* (t) slots in use */
static uint64_t lt_dropped;                     /* (t) not recorded: table full */
static uint64_t lt_mark_slab[KMEM_NCLASS_MAX];  /* (t) slab pages per class at the mark */
static uint64_t lt_mark_free;                   /* (t) free pages at the mark */

static struct lt_entry *slot(uint64_t i)
{
	return &lt_block[i / LT_PER_BLOCK][i % LT_PER_BLOCK];
}

static uint64_t home(uint64_t key)
{
	return ((key >> 4) * 0x9e3779b97f4a7c15UL >> 20) % LT_SLOTS;
}

/* Called once on the boot CPU after kmem_init. */
void leaktrace_init(void)
{
	if (!leaktrace_enabled)
		return;
	simple_lock_init(&lt_lock, LC_LEAKTRACE);
	/* Off while the table is made: recording the table's own blocks wrote
	 * entries through a NULL block pointer (into whatever low memory the
	 * boot identity map showed there: the kernel's BSS). */
	WRITE_ONCE(leaktrace_enabled, false);
	for (int b = 0; b < LT_BLOCKS; b++) {
		lt_block[b] = pages_alloc(LT_BLOCK_ORDER, PA_ZERO);
		if (!lt_block[b])
			panic("leaktrace: no memory for the table (%d MiB)",
			      LT_BLOCKS << (LT_BLOCK_ORDER + PAGE_SHIFT - 20));
	}
	mb();
	WRITE_ONCE(leaktrace_enabled, true);
	kprintf("leaktrace: on, %lu slots\n", (uint64_t)LT_SLOTS);
}

/* The caller's chain, skipping this file's frames (frame pointers). */
static void chain(uint64_t *pc)
{
	extern char _load_start[], _etext[];
	uint64_t rbp = (uint64_t)__builtin_frame_address(0);
	int n = 0;
	for (int depth = 0; n < LT_DEPTH && depth < 16; depth++) {
		if (rbp < PHYS_BASE || (rbp & 7))
			break;
		uint64_t *frame = (uint64_t *)rbp;
		uint64_t ret = frame[1];
		if (ret < (uint64_t)_load_start || ret >= (uint64_t)_etext)
			break;
		if (depth > 0)                  /* frame 0 returns into leaktrace_note_* */
			pc[n++] = ret - 1;
		if (frame[0] <= rbp)
			break;
		rbp = frame[0];
	}
	for (; n < LT_DEPTH; n++)
		pc[n] = 0;
}

void leaktrace_note_alloc(void *p, uint64_t bytes)
{
	uint64_t pc[LT_DEPTH];
	chain(pc);
	uint64_t key = (uint64_t)p;
	uint64_t s = disable_lock(&lt_lock);
	if (lt_used * 8 >= LT_SLOTS * 7) {
		lt_dropped++;
	} else {
		uint64_t i = home(key);
		while (slot(i)->key != 0 && slot(i)->key != key)
			i = (i + 1) % LT_SLOTS;
		struct lt_entry *e = slot(i);
		if (e->key == 0)
			lt_used++;
		e->key = key;
		e->seq = ++lt_seq;
		e->bytes = bytes > 0xffffffffUL ? 0xffffffffU : (uint32_t)bytes;
		memcpy(e->pc, pc, sizeof(pc));
	}
	unlock_enable(&lt_lock, s);
}

/* True if slot j's entry may move to slot i (i lies cyclically in [home, j)). */
static bool may_move(uint64_t i, uint64_t j, uint64_t h)
{
	if (i <= j)
		return h <= i || h > j;
	return h <= i && h > j;
}

void leaktrace_note_free(void *p)
{
	uint64_t key = (uint64_t)p;
	uint64_t s = disable_lock(&lt_lock);
	uint64_t i = home(key);
	while (slot(i)->key != 0 && slot(i)->key != key)
		i = (i + 1) % LT_SLOTS;
	if (slot(i)->key == key) {
		/* Backward-shift deletion keeps every probe chain unbroken. */
		uint64_t j = i;
		for (;;) {
			j = (j + 1) % LT_SLOTS;
			struct lt_entry *e = slot(j);
			if (e->key == 0)
				break;
			if (may_move(i, j, home(e->key))) {
				*slot(i) = *e;
				i = j;
			}
		}
		slot(i)->key = 0;
		lt_used--;
	}
	unlock_enable(&lt_lock, s);
}

/* Slab pages per size class (and their sizes) with the per-CPU caches
 * drained, so that free pages read next are comparable; returns the count. */
static int slab_snapshot(uint64_t slab[KMEM_NCLASS_MAX], uint32_t sizes[KMEM_NCLASS_MAX])
{
	kmem_drain_all();
	page_drain_all();
	return kmem_slab_pages(slab, sizes, KMEM_NCLASS_MAX);
}

int leaktrace_command(const char *cmd)
{
	if (!leaktrace_enabled)
		return -ENODEV;
	if (strcmp(cmd, "mark") != 0)
		return -EINVAL;
	uint64_t slab[KMEM_NCLASS_MAX];
	uint32_t sizes[KMEM_NCLASS_MAX];
	int n = slab_snapshot(slab, sizes);
	uint64_t s = disable_lock(&lt_lock);
	lt_mark = lt_seq;
	memcpy(lt_mark_slab, slab, (size_t)n * sizeof(slab[0]));
	lt_mark_free = page_free_count();
	unlock_enable(&lt_lock, s);
	return 0;
}

#define LT_PEEK_WORDS   16              /* words of a small allocation shown */

struct lt_group {
	uint64_t pc[LT_DEPTH];
	uint64_t count;
	uint64_t bytes;
	uint32_t first_seq;
	uint32_t peek_words;            /* words of the first allocation copied */
	uint64_t peek[LT_PEEK_WORDS];
};

/* Adds e to its chain's group; returns false when groups[] is full. */
static bool group_add(struct lt_group *g, int *ng, const struct lt_entry *e)
{
	for (int k = 0; k < *ng; k++)
		if (!memcmp(g[k].pc, e->pc, sizeof(e->pc))) {
			g[k].count++;
			g[k].bytes += e->bytes;
			return true;
		}
	if (*ng == LT_GROUPS)
		return false;
	memcpy(g[*ng].pc, e->pc, sizeof(e->pc));
	g[*ng].count = 1;
	g[*ng].bytes = e->bytes;
	g[*ng].first_seq = e->seq;
	/* A small (kmalloc) allocation's first words help name it: its
	 * fields, a reference count, a string.  It is live: readable. */
	uint32_t words = e->bytes <= 2048 ? MIN(e->bytes / 8, LT_PEEK_WORDS) : 0;
	memcpy(g[*ng].peek, (const void *)e->key, words * 8);
	g[*ng].peek_words = words;
	(*ng)++;
	return true;
}

static void group_print(struct sbuf *sb, const struct lt_group *g)
{
	sbuf_printf(sb, "%6lu %8lu  seq %u:", g->count, g->bytes, g->first_seq);
	for (int d = 0; d < LT_DEPTH && g->pc[d]; d++) {
		uint64_t off;
		const char *name = ksym_lookup(g->pc[d], &off);
		if (name)
			sbuf_printf(sb, " %s+0x%lx", name, off);
		else
			sbuf_printf(sb, " 0x%lx", g->pc[d]);
	}
	sbuf_printf(sb, "\n");
	for (uint32_t w = 0; w < g->peek_words; w++)
		sbuf_printf(sb, "%s%016lx%s", w % 8 ? " " : "    ", g->peek[w],
			    w % 8 == 7 || w + 1 == g->peek_words ? "\n" : "");
}

/*
 * /proc/leaktrace: the allocations made since the mark and still held,
 * grouped by call chain, largest first.
 */
void leaktrace_format(struct sbuf *sb)
{
	if (!leaktrace_enabled) {
		sbuf_printf(sb, "leaktrace: off (boot option leaktrace)\n");
		return;
	}
	struct lt_group *g = kzalloc(sizeof(*g) * LT_GROUPS);
	if (!g) {
		sb->overflow = true;    /* the read fails with ENOMEM: the reader retries */
		return;
	}
	int ng = 0;
	uint64_t count = 0, bytes = 0, other = 0;
	uint64_t s = disable_lock(&lt_lock);
	uint32_t mark = lt_mark;
	for (uint64_t i = 0; i < LT_SLOTS; i++) {
		const struct lt_entry *e = slot(i);
		if (e->key == 0 || e->key == (uint64_t)g || (int32_t)(e->seq - mark) <= 0)
			continue;
		count++;
		bytes += e->bytes;
		if (!group_add(g, &ng, e))
			other++;
	}
	uint64_t used = lt_used, dropped = lt_dropped;
	unlock_enable(&lt_lock, s);

	sbuf_printf(sb, "leaktrace: %lu allocations (%lu bytes) since the mark, %lu in "
		    "other chains; table %lu/%lu, %lu dropped\n", count, bytes, other,
		    used, (uint64_t)LT_SLOTS, dropped);
	{
		/* Slab pages (not recorded above: only their chunks are) and
		 * free pages against the mark, after draining the caches. */
		uint64_t slab[KMEM_NCLASS_MAX];
		uint32_t sizes[KMEM_NCLASS_MAX];
		int n = slab_snapshot(slab, sizes);
		sbuf_printf(sb, "leaktrace: free pages %ld since the mark; slab pages since the mark:",
			    (int64_t)(page_free_count() - lt_mark_free));
		for (int c = 0; c < n; c++)
			if (slab[c] != lt_mark_slab[c])
				sbuf_printf(sb, " %u:%ld", sizes[c], (int64_t)(slab[c] - lt_mark_slab[c]));
		sbuf_printf(sb, "\n");
	}
	for (int done = 0; done < ng; done++) {     /* largest first */
		int best = done;
		for (int k = done + 1; k < ng; k++)
			if (g[k].bytes > g[best].bytes)
				best = k;
		struct lt_group t = g[done];
		g[done] = g[best];
		g[best] = t;
		group_print(sb, &g[done]);
	}
	kfree(g);
}
