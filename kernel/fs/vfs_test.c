/*
 * In-kernel tests of the name cache and tmpfs page handling.
 */
#include "kernel.h"
#include "errno.h"
#include "failinject.h"
#include "file.h"
#include "flock.h"
#include "kmem.h"
#include "ktest.h"
#include "page.h"
#include "sched.h"
#include "thread.h"
#include "vfs.h"

static uint64_t settled_free(void)
{
	vfs_root();
	kmem_drain_all();
	page_drain_all();
	return page_free_count();
}

KTEST(ncache_create_lookup_unlink)
{
	uint64_t before = settled_free();
	struct superblock *sb = tmpfs_create();
	KT_ASSERT(sb != NULL);
	struct inode *root = sb->root, *ip = NULL, *got = NULL;
	struct ncache_stats s0, s1;
	ncache_stats(&s0);
	char name[32];
	for (int i = 0; i < 200; i++) {
		ksnprintf(name, sizeof(name), "n%d", i);
		KT_EXPECT_EQ(vfs_create(root, name, strlen(name), S_IFREG | 0644, 0, NULL, NULL), 0);
	}
	ncache_stats(&s1);
	KT_EXPECT_EQ(s1.entries - s0.entries, 200);
	KT_EXPECT_EQ(vfs_create(root, "n7", 2, S_IFREG | 0644, 0, NULL, NULL), -EEXIST);
	KT_EXPECT_EQ(vfs_lookup_child(root, "n7", 2, &ip), 0);
	KT_EXPECT_EQ(vfs_lookup_child(root, "n7", 2, &got), 0);
	KT_EXPECT(ip == got);
	KT_EXPECT_EQ(ip->refcnt, 2);
	vnode_put(got);
	KT_EXPECT_EQ(vfs_lookup_child(root, "n", 1, &got), -ENOENT);
	KT_EXPECT_EQ(vfs_lookup_child(root, "n70", 3, &got), 0);
	KT_EXPECT(got != ip);
	vnode_put(got);
	/* Unlinked while referenced: the inode lives until the last put. */
	KT_EXPECT_EQ(vfs_unlink(root, "n7", 2, false), 0);
	KT_EXPECT_EQ(vfs_lookup_child(root, "n7", 2, &got), -ENOENT);
	KT_EXPECT_EQ(ip->nlink, 0);
	vnode_put(ip);
	/* The same name in another directory is another entry. */
	struct inode *d;
	KT_EXPECT_EQ(vfs_create(root, "d", 1, S_IFDIR | 0755, 0, NULL, &d), 0);
	KT_EXPECT_EQ(vfs_create(d, "n8", 2, S_IFREG | 0644, 0, NULL, NULL), 0);
	struct inode *a = NULL, *b = NULL;
	KT_EXPECT_EQ(vfs_lookup_child(root, "n8", 2, &a), 0);
	KT_EXPECT_EQ(vfs_lookup_child(d, "n8", 2, &b), 0);
	KT_EXPECT(a && b && a != b);
	vnode_put(a);
	vnode_put(b);
	KT_EXPECT_EQ(vfs_unlink(root, "d", 1, true), -ENOTEMPTY);
	KT_EXPECT_EQ(vfs_rename(d, "n8", 2, root, "moved", 5, 0), 0);
	KT_EXPECT_EQ(vfs_unlink(root, "d", 1, true), 0);
	vnode_put(d);
	tmpfs_destroy(sb);
	KT_EXPECT_EQ(settled_free(), before);
}

/*
 * flock(2) under allocation failure (as inside a system call): a call that
 * fails with ENOLCK leaves no lock context on the inode, and one that
 * succeeded leaves none once its file is closed.  A context used to live as
 * long as its inode, so one left on a long-lived inode (a mount's root) was
 * memory never given back (the grind row under fault injection lost a
 * 96-byte-class slab page to it).
 */
KTEST(flock_failing_allocation_leaves_no_lock_context)
{
	struct superblock *sb = tmpfs_create();
	KT_ASSERT(sb != NULL);
	int saved = fail_percent[FAIL_SLAB];
	struct thread *t = curthread();
	int failed = 0;
	for (int i = 0; i < 200; i++) {
		char name[16];
		ksnprintf(name, sizeof(name), "f%d", i);
		struct inode *ip = NULL;
		KT_ASSERT(vfs_create(sb->root, name, strlen(name), S_IFREG | 0644, 0, NULL, &ip) == 0);
		struct file *f = NULL;
		KT_ASSERT(file_open_inode(ip, 2 /* O_RDWR */, &f) == 0);
		fail_percent[FAIL_SLAB] = 50;
		t->in_syscall = true;
		int r = flock_flock(f, 2 | 4 /* LOCK_EX | LOCK_NB */);
		t->in_syscall = false;
		fail_percent[FAIL_SLAB] = saved;
		if (r == -ENOLCK) {
			failed++;
			if (READ_ONCE(ip->flctx) != NULL)
				ktest_fail(kt, __FILE__, __LINE__,
					   "attempt %d: ENOLCK left a lock context", i);
		} else if (r != 0) {
			ktest_fail(kt, __FILE__, __LINE__, "attempt %d gave %d", i, r);
		}
		file_unref(f);
		/* Its locks gone, the context goes too (not only with the inode). */
		if (READ_ONCE(ip->flctx) != NULL)
			ktest_fail(kt, __FILE__, __LINE__, "attempt %d: a context outlived its locks", i);
		vnode_put(ip);
	}
	KT_EXPECT(failed > 0);
	tmpfs_destroy(sb);
}

struct nc_conc {
	struct inode *dir;
	int id;
	volatile int bad;
};

static void nc_worker(void *arg)
{
	struct nc_conc *c = arg;
	char name[32];
	for (int i = 0; i < 300; i++) {
		ksnprintf(name, sizeof(name), "w%d_%d", c->id, i);
		struct inode *ip = NULL;
		if (vfs_create(c->dir, name, strlen(name), S_IFREG | 0644, 0, NULL, NULL) != 0 ||
		    vfs_lookup_child(c->dir, name, strlen(name), &ip) != 0)
			c->bad++;
		else
			vnode_put(ip);
		if (i % 2 && vfs_unlink(c->dir, name, strlen(name), false) != 0)
			c->bad++;
	}
}

KTEST(ncache_parallel_creates_in_one_directory)
{
	uint64_t before = settled_free();
	struct superblock *sb = tmpfs_create();
	KT_ASSERT(sb != NULL);
	struct nc_conc c[4];
	struct thread *t[4];
	for (int i = 0; i < 4; i++) {
		c[i] = (struct nc_conc){ .dir = sb->root, .id = i };
		KT_ASSERT((t[i] = kthread_run("nc", nc_worker, &c[i])) != NULL);
	}
	for (int i = 0; i < 4; i++) {
		thread_join(t[i]);
		KT_EXPECT_EQ(c[i].bad, 0);
	}
	KT_EXPECT_EQ(sb->root->u.dir.nent, 4 * 150);
	tmpfs_destroy(sb);
	KT_EXPECT_EQ(settled_free(), before);
}

KTEST(tmpfs_pages_holes_truncate_and_getpage)
{
	uint64_t before = settled_free();
	struct superblock *sb = tmpfs_create();
	KT_ASSERT(sb != NULL);
	struct inode *ip;
	KT_ASSERT(vfs_create(sb->root, "f", 1, S_IFREG | 0644, 0, NULL, &ip) == 0);
	char buf[64];
	KT_EXPECT_EQ(vfs_write_kernel(ip, "hello", 5, 3 * 4096 + 10), 5);
	KT_EXPECT_EQ(ip->size, 3 * 4096 + 15);
	/* Holes read as zeros and hold no page. */
	KT_EXPECT_EQ(vfs_read_kernel(ip, buf, 16, 4096), 16);
	bool zero = true;
	for (int i = 0; i < 16; i++)
		zero &= buf[i] == 0;
	KT_EXPECT(zero);
	KT_EXPECT(tmpfs_page_peek(ip, 1) == NULL);
	/* getpage: a reference to the page holding an offset. */
	void *va = NULL;
	KT_EXPECT_EQ(tmpfs_getpage(ip, 3 * 4096 + 12, false, &va), 0);
	KT_ASSERT(va != NULL);
	KT_EXPECT(memcmp((char *)va + 10, "hello", 5) == 0);
	KT_EXPECT_EQ(page_refcount(va_to_page(va)), 2);
	KT_EXPECT_EQ(tmpfs_getpage(ip, 10 * 4096, false, &va) , -ENXIO);
	/* Truncation drops the file's reference; ours keeps the page. */
	KT_EXPECT_EQ(vfs_truncate(ip, 3 * 4096 + 12), 0);
	KT_EXPECT_EQ(vfs_read_kernel(ip, buf, 64, 3 * 4096 + 10), 2);
	KT_EXPECT_EQ(vfs_truncate(ip, 100), 0);
	KT_EXPECT_EQ(page_refcount(va_to_page(va)), 1);
	page_unref(va_to_page(va));
	KT_EXPECT_EQ(vfs_truncate(ip, 200), 0);
	KT_EXPECT_EQ(vfs_read_kernel(ip, buf, 64, 100), 64);
	zero = true;
	for (int i = 0; i < 64; i++)
		zero &= buf[i] == 0;
	KT_EXPECT(zero);
	vnode_put(ip);
	KT_EXPECT_EQ(vfs_unlink(sb->root, "f", 1, false), 0);
	tmpfs_destroy(sb);
	KT_EXPECT_EQ(settled_free(), before);
}
