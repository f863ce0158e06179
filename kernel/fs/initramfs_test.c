/*
 * Tests of the initramfs unpacker and the file tree: newc parsing (good and
 * malformed archives built here), path lookup semantics, reading, and the
 * real boot module when one was given (-initrd).  Every test builds private
 * trees and frees them; the memory tests check the free-page count.
 */
#include "kernel.h"
#include "boot.h"
#include "errno.h"
#include "initramfs.h"
#include "kmem.h"
#include "ktest.h"
#include "page.h"
#include "sched.h"
#include "thread.h"
#include "vfs.h"

/* ---- building newc archives ---- */

struct cpio {
	char *p;
	size_t len, cap;
};

static bool cpio_init(struct cpio *c, size_t cap)
{
	c->p = kmalloc(cap, KM_ZERO);
	c->len = 0;
	c->cap = cap;
	return c->p != NULL;
}

static void put_hex8(char *d, uint32_t v)
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 7; i >= 0; i--, v >>= 4)
		d[i] = hex[v & 15];
}

static void cpio_bytes(struct cpio *c, const void *s, size_t n)
{
	KASSERT(c->len + n <= c->cap);
	memcpy(c->p + c->len, s, n);
	c->len += n;
}

static void cpio_pad(struct cpio *c)
{
	while (c->len & 3)
		cpio_bytes(c, "", 1);
}

/*
 * One entry with every field given: namesize and filesize as written in the
 * header (they may lie); nameb/datab bytes actually written.  Returns the
 * offset of the header.
 */
static size_t cpio_raw(struct cpio *c, const char *magic, uint32_t ino, uint32_t mode,
		       uint32_t nlink, uint32_t namesize, uint32_t filesize,
		       const char *name, size_t nameb, const void *data, size_t datab)
{
	size_t at = c->len;
	char h[110];
	memcpy(h, magic, 6);
	uint32_t f[13] = { ino, mode, 1000, 100, nlink, 1700000000, filesize,
			   0, 1, 5, 1, namesize, 0 };
	for (int i = 0; i < 13; i++)
		put_hex8(h + 6 + 8 * i, f[i]);
	cpio_bytes(c, h, sizeof(h));
	cpio_bytes(c, name, nameb);
	cpio_pad(c);
	if (datab)
		cpio_bytes(c, data, datab);
	cpio_pad(c);
	return at;
}

static size_t cpio_add(struct cpio *c, const char *name, uint32_t mode, const void *data,
		       size_t size)
{
	static uint32_t ino = 100;
	size_t n = strlen(name) + 1;
	return cpio_raw(c, "070701", ino++, mode, S_ISDIR(mode) ? 2 : 1, n, size, name, n,
			data, size);
}

static void cpio_file(struct cpio *c, const char *name, const char *text)
{
	cpio_add(c, name, S_IFREG | 0644, text, strlen(text));
}

static void cpio_link(struct cpio *c, const char *name, const char *target)
{
	cpio_add(c, name, S_IFLNK | 0777, target, strlen(target));
}

static void cpio_trailer(struct cpio *c)
{
	cpio_add(c, "TRAILER!!!", 0, NULL, 0);
}

/* Free pages after draining the caches.  The first call also makes the
 * global tree exist, so its one-time allocations do not look like leaks. */
static uint64_t settled_free(void)
{
	fs_root();
	kmem_drain_all();
	page_drain_all();
	return page_free_count();
}

/* Look path up in tree root (cwd = root unless given). */
static int lk(struct inode *root, struct inode *cwd, const char *path, int flags,
	      struct inode **out)
{
	return fs_lookup_at(root, cwd ? cwd : root, path, flags, out);
}

static struct inode *must(struct inode *root, const char *path)
{
	struct inode *ip = NULL;
	return lk(root, NULL, path, 0, &ip) == 0 ? ip : NULL;
}

static bool file_is(struct inode *ip, const char *text)
{
	char buf[64];
	size_t n = strlen(text);
	if (ip == NULL || n > sizeof(buf))
		return false;
	return fs_read(ip, buf, sizeof(buf), 0) == (ssize_t)n && memcmp(buf, text, n) == 0;
}

/* ---- unpacking ---- */

KTEST(initramfs_unpacks_dirs_files_symlinks_and_nodes)
{
	uint64_t before = settled_free();
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 8192));
	cpio_add(&c, ".", S_IFDIR | 0700, NULL, 0);
	cpio_add(&c, "bin", S_IFDIR | 0755, NULL, 0);
	cpio_file(&c, "bin/busybox", "BUSYBOX");
	cpio_link(&c, "bin/sh", "busybox");
	cpio_file(&c, "etc/deep/passwd", "root:x:0:0");       /* parents missing */
	cpio_add(&c, "./dev/console", S_IFCHR | 0600, NULL, 0);
	cpio_file(&c, "/abs//file", "A");                       /* leading and double slash */
	cpio_add(&c, "bin/../../x", S_IFREG | 0644, "no", 2);   /* skipped */
	cpio_trailer(&c);

	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	struct initramfs_stats st;
	KT_EXPECT_EQ(initramfs_load_tree(root, c.p, c.len, &st), 0);
	KT_EXPECT_EQ(st.entries, 8);
	KT_EXPECT_EQ(st.archives, 1);
	KT_EXPECT_EQ(st.files, 3);
	KT_EXPECT_EQ(st.symlinks, 1);
	KT_EXPECT_EQ(st.nodes, 1);
	KT_EXPECT_EQ(st.dirs, 5);          /* bin, etc, etc/deep, dev, abs */
	KT_EXPECT_EQ(st.skipped, 1);

	struct fs_stat s;
	fs_stat(root, &s);
	KT_EXPECT_EQ(s.mode, S_IFDIR | 0700);                   /* "." entry */
	KT_EXPECT_EQ(s.nlink, 2 + 4);                           /* bin etc dev abs */
	struct inode *bb = must(root, "/bin/busybox");
	KT_EXPECT(file_is(bb, "BUSYBOX"));
	fs_stat(bb, &s);
	KT_EXPECT_EQ(s.mode, S_IFREG | 0644);
	KT_EXPECT_EQ(s.uid, 1000);
	KT_EXPECT_EQ(s.gid, 100);
	KT_EXPECT_EQ(s.mtime, 1700000000);
	KT_EXPECT_EQ(s.nlink, 1);
	KT_EXPECT_EQ(s.size, 7);
	KT_EXPECT_EQ(s.blocks, 8);                              /* one tmpfs page */
	KT_EXPECT(must(root, "bin/sh") == bb);
	struct inode *sh = NULL;
	KT_EXPECT_EQ(lk(root, NULL, "/bin/sh", FS_NOFOLLOW, &sh), 0);
	KT_ASSERT(sh != NULL);
	fs_stat(sh, &s);
	KT_EXPECT_EQ(s.mode, S_IFLNK | 0777);
	KT_EXPECT_EQ(s.size, 7);
	KT_EXPECT(file_is(must(root, "etc/deep/passwd"), "root:x:0:0"));
	struct inode *etc = must(root, "etc");
	KT_ASSERT(etc != NULL);
	fs_stat(etc, &s);
	KT_EXPECT_EQ(s.mode, S_IFDIR | 0755);                   /* created parent */
	KT_EXPECT_EQ(s.nlink, 3);
	struct inode *con = must(root, "dev/console");
	KT_ASSERT(con != NULL);
	fs_stat(con, &s);
	KT_EXPECT_EQ(s.mode, S_IFCHR | 0600);
	KT_EXPECT_EQ(s.rdev, (5 << 8) | 1);
	KT_EXPECT(file_is(must(root, "abs/file"), "A"));
	KT_EXPECT(must(root, "x") == NULL);
	/* Inode numbers are distinct. */
	KT_EXPECT(bb->ino != sh->ino && bb->ino != root->ino && con->ino != etc->ino);

	fs_tree_free(root);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

KTEST(initramfs_hard_links_and_duplicates)
{
	uint64_t before = settled_free();
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 8192));
	/* newc hard links: same ino, nlink 3, data on the last name; 070702 (CRC). */
	cpio_raw(&c, "070702", 7, S_IFREG | 0755, 3, 2, 0, "a", 2, NULL, 0);
	cpio_raw(&c, "070702", 7, S_IFREG | 0755, 3, 4, 0, "d/b", 4, NULL, 0);
	cpio_raw(&c, "070702", 7, S_IFREG | 0755, 3, 2, 4, "c", 2, "DATA", 4);
	/* Same ino but nlink 1: not a link. */
	cpio_raw(&c, "070701", 7, S_IFREG | 0644, 1, 2, 1, "e", 2, "E", 1);
	/* A later entry of an existing name replaces it. */
	cpio_file(&c, "f", "old");
	cpio_file(&c, "f", "new");
	cpio_link(&c, "g", "a");
	cpio_add(&c, "g", S_IFDIR | 0711, NULL, 0);              /* dir over link */
	cpio_add(&c, "g", S_IFDIR | 0700, NULL, 0);              /* dir over dir */
	cpio_file(&c, "g", "file over dir");                     /* skipped */
	cpio_trailer(&c);

	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	struct initramfs_stats st;
	KT_EXPECT_EQ(initramfs_load_tree(root, c.p, c.len, &st), 0);
	KT_EXPECT_EQ(st.hardlinks, 2);
	KT_EXPECT_EQ(st.skipped, 1);
	struct inode *a = must(root, "a");
	KT_ASSERT(a != NULL);
	KT_EXPECT(must(root, "d/b") == a);
	KT_EXPECT(must(root, "c") == a);
	KT_EXPECT(file_is(a, "DATA"));
	struct fs_stat s;
	fs_stat(a, &s);
	KT_EXPECT_EQ(s.nlink, 3);
	KT_EXPECT_EQ(s.mode, S_IFREG | 0755);
	struct inode *e = must(root, "e");
	KT_EXPECT(e != NULL && e != a && file_is(e, "E"));
	KT_EXPECT(file_is(must(root, "f"), "new"));
	struct inode *g = must(root, "g");
	KT_ASSERT(g != NULL);
	fs_stat(g, &s);
	KT_EXPECT_EQ(s.mode, S_IFDIR | 0700);
	fs_tree_free(root);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

/* Bad entries with sound headers are skipped; the rest of the archive loads. */
KTEST(initramfs_malformed_entries_are_skipped)
{
	uint64_t before = settled_free();
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 32768));
	char *longname = kmalloc(5000, 0);
	KT_ASSERT(longname != NULL);
	cpio_file(&c, "good1", "1");
	cpio_raw(&c, "070701", 1, S_IFREG | 0644, 1, 4, 0, "abcd", 4, NULL, 0);  /* no NUL */
	cpio_raw(&c, "070701", 1, S_IFREG | 0644, 1, 4, 0, "a\0b", 4, NULL, 0);  /* NUL inside */
	cpio_raw(&c, "070701", 1, S_IFREG | 0644, 1, 1, 0, "", 1, NULL, 0);      /* empty */
	cpio_raw(&c, "070701", 1, S_IFREG | 0644, 1, 0, 0, "", 0, NULL, 0);      /* namesize 0 */
	cpio_file(&c, "../evil", "x");
	cpio_file(&c, "a/../../evil", "x");
	cpio_file(&c, "..", "x");
	memset(longname, 'n', 256);
	longname[256] = '\0';
	cpio_file(&c, longname, "x");                                /* component 256 */
	memset(longname, 'm', 4200);
	for (int i = 100; i < 4200; i += 100)
		longname[i] = '/';
	longname[4200] = '\0';
	cpio_file(&c, longname, "x");                                /* name over PATH_MAX */
	cpio_add(&c, "weird", 0000644, NULL, 0);                     /* no file type */
	cpio_add(&c, "weird2", 0170644, NULL, 0);                    /* bad file type */
	cpio_add(&c, "emptylink", S_IFLNK | 0777, NULL, 0);
	cpio_add(&c, "nullink", S_IFLNK | 0777, "a\0b", 3);
	cpio_file(&c, "plain", "p");
	cpio_file(&c, "plain/sub", "x");                             /* parent is a file */
	cpio_add(&c, "/", S_IFREG | 0644, "r", 1);                   /* root as a file */
	cpio_file(&c, "good2", "2");
	cpio_trailer(&c);

	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	struct initramfs_stats st;
	KT_EXPECT_EQ(initramfs_load_tree(root, c.p, c.len, &st), 0);
	KT_EXPECT_EQ(st.skipped, 15);
	KT_EXPECT_EQ(st.files, 3);
	KT_EXPECT(file_is(must(root, "good1"), "1"));
	KT_EXPECT(file_is(must(root, "good2"), "2"));
	KT_EXPECT(file_is(must(root, "plain"), "p"));
	KT_EXPECT(must(root, "evil") == NULL);
	KT_EXPECT(must(root, "weird") == NULL);
	KT_EXPECT(must(root, "emptylink") == NULL);
	struct fs_stat s;
	fs_stat(root, &s);
	KT_EXPECT(S_ISDIR(s.mode));
	KT_EXPECT_EQ(s.nlink, 2);          /* nothing of "a/../../evil" was created */
	fs_tree_free(root);
	kfree(longname);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

/* Load buf[0..len) into a fresh tree; the result; free the tree. */
static int load_fresh(const char *buf, size_t len, struct initramfs_stats *st,
		      bool (*check)(struct inode *root))
{
	struct inode *root = fs_tree_create();
	if (root == NULL)
		return -ENOMEM;
	int err = initramfs_load_tree(root, buf, len, st);
	if (check && !check(root))
		err = 12345;
	fs_tree_free(root);
	return err;
}

static bool has_first(struct inode *root)
{
	return file_is(must(root, "first"), "1st");
}

/* Broken headers stop the unpack with -EINVAL; what came before stays. */
KTEST(initramfs_broken_headers_stop_safely)
{
	uint64_t before = settled_free();
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 4096));
	struct initramfs_stats st;
	cpio_file(&c, "first", "1st");
	size_t second = c.len;
	cpio_file(&c, "second", "2nd");
	size_t third = c.len;
	cpio_trailer(&c);
	char *b = kmalloc(c.cap, 0);
	KT_ASSERT(b != NULL);

	KT_EXPECT_EQ(load_fresh(c.p, c.len, &st, has_first), 0);
	KT_EXPECT_EQ(st.files, 2);

	memcpy(b, c.p, c.len);                     /* bad magic */
	memcpy(b + second, "070707", 6);
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	KT_EXPECT_EQ(st.files, 1);
	memcpy(b, c.p, c.len);                     /* non-hex field (filesize) */
	b[second + 6 + 8 * 6 + 3] = 'g';
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	memcpy(b, c.p, c.len);                     /* space in a field */
	b[second + 6 + 8 * 11] = ' ';
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	memcpy(b, c.p, c.len);                     /* namesize past the end */
	put_hex8(b + second + 6 + 8 * 11, 0x7fffffff);
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	memcpy(b, c.p, c.len);                     /* namesize 0xffffffff (overflow) */
	put_hex8(b + second + 6 + 8 * 11, 0xffffffff);
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	memcpy(b, c.p, c.len);                     /* filesize past the end */
	put_hex8(b + second + 6 + 8 * 6, 0x10000);
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	memcpy(b, c.p, c.len);
	put_hex8(b + second + 6 + 8 * 6, 0xffffffff);
	KT_EXPECT_EQ(load_fresh(b, c.len, &st, has_first), -EINVAL);
	/* Truncated inside the second header, name, data; no trailer at all. */
	KT_EXPECT_EQ(load_fresh(c.p, second + 50, &st, has_first), -EINVAL);
	KT_EXPECT_EQ(load_fresh(c.p, second + 112, &st, has_first), -EINVAL);
	KT_EXPECT_EQ(load_fresh(c.p, second + 120, &st, has_first), -EINVAL);
	KT_EXPECT_EQ(load_fresh(c.p, third, &st, has_first), 0);
	KT_EXPECT_EQ(st.files, 2);
	KT_EXPECT_EQ(st.archives, 0);
	/* Empty and all-zero buffers: nothing, no error. */
	KT_EXPECT_EQ(load_fresh(c.p, 0, &st, NULL), 0);
	memset(b, 0, 512);
	KT_EXPECT_EQ(load_fresh(b, 512, &st, NULL), 0);
	KT_EXPECT_EQ(st.entries, 0);
	/* Garbage. */
	for (int i = 0; i < 512; i++)
		b[i] = (char)(i * 7 + 1);
	KT_EXPECT_EQ(load_fresh(b, 512, &st, NULL), -EINVAL);

	/* Every truncation of the archive: never a crash, first entry kept. */
	initramfs_verbose = false;
	for (size_t n = 0; n <= c.len; n++) {
		int err = load_fresh(c.p, n, &st, NULL);
		if (err != 0 && err != -EINVAL)
			KT_EXPECT_EQ(err, -EINVAL);
		if (n >= second && st.files < 1)
			KT_EXPECT_EQ(st.files, 1);
	}
	/* Random corruption of header bytes: never a crash. */
	uint64_t x = 0x243f6a8885a308d3UL;
	for (int round = 0; round < 300; round++) {
		memcpy(b, c.p, c.len);
		for (int k = 0; k < 4; k++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			b[x % c.len] = (char)(x >> 32);
		}
		int err = load_fresh(b, c.len, &st, NULL);
		if (err != 0 && err != -EINVAL)
			KT_EXPECT_EQ(err, -EINVAL);
	}

	initramfs_verbose = true;
	/* Two archives, NUL padding between them: both unpacked. */
	struct cpio d;
	KT_ASSERT(cpio_init(&d, 4096));
	cpio_file(&d, "first", "1st");
	cpio_trailer(&d);
	memset(d.p + d.len, 0, 512);
	d.len += 512;
	cpio_file(&d, "other", "o");
	cpio_trailer(&d);
	KT_EXPECT_EQ(load_fresh(d.p, d.len, &st, has_first), 0);
	KT_EXPECT_EQ(st.archives, 2);
	KT_EXPECT_EQ(st.files, 2);
	kfree(d.p);
	kfree(b);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

/* ---- lookup ---- */

/*
 * The lookup tree:
 *   /bin/busybox  /bin/sh -> busybox   /usr/bin -> ../bin
 *   /etc/passwd   /l1 -> l2 -> l3 -> /etc/passwd   /dang -> nowhere
 *   /loop1 <-> /loop2   /self -> self  /rel -> etc/../bin/../etc
 *   /c0 -> c1 -> ... -> c40 (a file): 40 links from c0 ok, c(-1) is 41
 */
static struct inode *lookup_tree(struct cpio *c)
{
	if (!cpio_init(c, 65536))
		return NULL;
	cpio_file(c, "bin/busybox", "BB");
	cpio_link(c, "bin/sh", "busybox");
	cpio_add(c, "usr", S_IFDIR | 0755, NULL, 0);
	cpio_link(c, "usr/bin", "../bin");
	cpio_file(c, "etc/passwd", "PW");
	cpio_link(c, "l1", "l2");
	cpio_link(c, "l2", "l3");
	cpio_link(c, "l3", "/etc/passwd");
	cpio_link(c, "dang", "nowhere");
	cpio_link(c, "loop1", "loop2");
	cpio_link(c, "loop2", "loop1");
	cpio_link(c, "self", "self");
	cpio_link(c, "rel", "etc/../bin/../etc");
	char name[16], target[16];
	for (int i = 0; i < 40; i++) {
		ksnprintf(name, sizeof(name), "c%d", i);
		ksnprintf(target, sizeof(target), "c%d", i + 1);
		cpio_link(c, name, target);
	}
	cpio_link(c, "cm1", "c0");
	cpio_file(c, "c40", "END");
	cpio_trailer(c);
	struct inode *root = fs_tree_create();
	if (root && initramfs_load_tree(root, c->p, c->len, NULL) != 0) {
		fs_tree_free(root);
		return NULL;
	}
	return root;
}

KTEST(fs_lookup_paths_dots_and_errors)
{
	uint64_t before = settled_free();
	struct cpio c;
	struct inode *root = lookup_tree(&c);
	KT_ASSERT(root != NULL);
	struct inode *ip, *bin = must(root, "/bin"), *etc = must(root, "/etc");
	struct inode *pw = must(root, "/etc/passwd"), *bb = must(root, "/bin/busybox");
	KT_ASSERT(bin && etc && pw && bb);

	KT_EXPECT(must(root, "/") == root);
	KT_EXPECT(must(root, "///") == root);
	KT_EXPECT(must(root, ".") == root);
	KT_EXPECT(must(root, "..") == root);                  /* .. of the root */
	KT_EXPECT(must(root, "/../../..") == root);
	KT_EXPECT(must(root, "//etc///passwd") == pw);
	KT_EXPECT(must(root, "/etc/./passwd") == pw);
	KT_EXPECT(must(root, "/bin/../etc/passwd") == pw);
	KT_EXPECT(must(root, "/etc/") == etc);
	KT_EXPECT(must(root, "/etc/.") == etc);
	ip = NULL;
	KT_EXPECT_EQ(lk(root, etc, "passwd", 0, &ip), 0);      /* relative to cwd */
	KT_EXPECT(ip == pw);
	KT_EXPECT_EQ(lk(root, etc, "../bin/busybox", 0, &ip), 0);
	KT_EXPECT(ip == bb);
	KT_EXPECT_EQ(lk(root, etc, "..", 0, &ip), 0);
	KT_EXPECT(ip == root);
	KT_EXPECT_EQ(lk(root, etc, "/bin", 0, &ip), 0);        /* absolute ignores cwd */
	KT_EXPECT(ip == bin);

	/* A subtree as the root (chroot): ".." and "/" stop at it. */
	KT_EXPECT_EQ(fs_lookup_at(etc, etc, "/..", 0, &ip), 0);
	KT_EXPECT(ip == etc);
	KT_EXPECT_EQ(fs_lookup_at(etc, etc, "../../passwd", 0, &ip), 0);
	KT_EXPECT(ip == pw);
	KT_EXPECT_EQ(fs_lookup_at(etc, root, "etc/../..", 0, &ip), 0);
	KT_EXPECT(ip == etc);
	KT_EXPECT_EQ(fs_lookup_at(etc, etc, "/bin", 0, &ip), -ENOENT);

	KT_EXPECT_EQ(lk(root, NULL, "", 0, &ip), -ENOENT);
	KT_EXPECT_EQ(lk(root, NULL, "/nope", 0, &ip), -ENOENT);
	KT_EXPECT_EQ(lk(root, NULL, "/nope/x", 0, &ip), -ENOENT);
	KT_EXPECT_EQ(lk(root, NULL, "/etc/passwd/x", 0, &ip), -ENOTDIR);
	KT_EXPECT_EQ(lk(root, NULL, "/etc/passwd/", 0, &ip), -ENOTDIR);
	KT_EXPECT_EQ(lk(root, NULL, "/etc/passwd/.", 0, &ip), -ENOTDIR);
	KT_EXPECT_EQ(lk(root, NULL, "/etc/passwd/..", 0, &ip), -ENOTDIR);
	KT_EXPECT_EQ(lk(root, pw, "x", 0, &ip), -ENOTDIR);     /* cwd not a directory */

	char *p = kmalloc(FS_PATH_MAX + 16, 0);
	KT_ASSERT(p != NULL);
	memset(p, 'a', 256);
	p[256] = '\0';
	KT_EXPECT_EQ(lk(root, NULL, p, 0, &ip), -ENAMETOOLONG);
	p[255] = '\0';
	KT_EXPECT_EQ(lk(root, NULL, p, 0, &ip), -ENOENT);      /* 255 is fine */
	/* "./" repeated: 4095 bytes resolve, 4096 are too long. */
	for (int i = 0; i < FS_PATH_MAX; i += 2)
		memcpy(p + i, "./", 2);
	p[FS_PATH_MAX - 1] = '\0';
	KT_EXPECT_EQ(lk(root, NULL, p, 0, &ip), 0);
	KT_EXPECT(ip == root);
	p[FS_PATH_MAX - 1] = '.';
	p[FS_PATH_MAX] = '\0';
	KT_EXPECT_EQ(lk(root, NULL, p, 0, &ip), -ENAMETOOLONG);
	kfree(p);

	fs_tree_free(root);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

KTEST(fs_lookup_symlinks_follow_nofollow_and_loops)
{
	uint64_t before = settled_free();
	struct cpio c;
	struct inode *root = lookup_tree(&c);
	KT_ASSERT(root != NULL);
	struct inode *ip = NULL, *bin = must(root, "/bin"), *etc = must(root, "/etc");
	struct inode *pw = must(root, "/etc/passwd"), *bb = must(root, "/bin/busybox");
	KT_ASSERT(bin && etc && pw && bb);
	struct fs_stat s;

	KT_EXPECT(must(root, "/bin/sh") == bb);                 /* relative target */
	KT_EXPECT_EQ(lk(root, NULL, "/bin/sh", FS_NOFOLLOW, &ip), 0);
	fs_stat(ip, &s);
	KT_EXPECT(S_ISLNK(s.mode));
	KT_EXPECT(must(root, "/usr/bin/busybox") == bb);       /* intermediate "../bin" */
	KT_EXPECT_EQ(lk(root, NULL, "/usr/bin/sh", FS_NOFOLLOW, &ip), 0);
	fs_stat(ip, &s);
	KT_EXPECT(S_ISLNK(s.mode));                             /* final not followed */
	KT_EXPECT_EQ(lk(root, NULL, "/usr/bin", FS_NOFOLLOW, &ip), 0);
	fs_stat(ip, &s);
	KT_EXPECT(S_ISLNK(s.mode));
	KT_EXPECT_EQ(lk(root, NULL, "/usr/bin/", FS_NOFOLLOW, &ip), 0);
	KT_EXPECT(ip == bin);                                   /* trailing slash follows */
	KT_EXPECT(must(root, "/usr/bin/..") == root);           /* .. of the target */
	KT_EXPECT(must(root, "l1") == pw);                      /* chain, absolute end */
	KT_EXPECT_EQ(lk(root, bin, "../l1", 0, &ip), 0);
	KT_EXPECT(ip == pw);
	KT_EXPECT(must(root, "rel") == etc);
	KT_EXPECT(must(root, "rel/passwd") == pw);
	KT_EXPECT_EQ(lk(root, NULL, "/l1/", 0, &ip), -ENOTDIR);  /* a file behind it */
	KT_EXPECT_EQ(lk(root, NULL, "/dang", 0, &ip), -ENOENT);
	KT_EXPECT_EQ(lk(root, NULL, "/dang", FS_NOFOLLOW, &ip), 0);
	KT_EXPECT_EQ(lk(root, NULL, "/loop1", 0, &ip), -ELOOP);
	KT_EXPECT_EQ(lk(root, NULL, "/loop1/x", FS_NOFOLLOW, &ip), -ELOOP);
	KT_EXPECT_EQ(lk(root, NULL, "/self", 0, &ip), -ELOOP);
	KT_EXPECT_EQ(lk(root, NULL, "/self", FS_NOFOLLOW, &ip), 0);
	/* 40 links in one lookup are allowed, 41 are not. */
	KT_EXPECT_EQ(lk(root, NULL, "/c0", 0, &ip), 0);
	KT_EXPECT(file_is(ip, "END"));
	KT_EXPECT_EQ(lk(root, NULL, "/cm1", 0, &ip), -ELOOP);
	KT_EXPECT_EQ(lk(root, NULL, "/cm1", FS_NOFOLLOW, &ip), 0);

	/* The global tree resolves absolute paths from its own root. */
	struct inode *g = fs_root();
	KT_EXPECT_EQ(fs_lookup(g, "/", 0, &ip), 0);
	KT_EXPECT(ip == g);

	fs_tree_free(root);
	kfree(c.p);
	KT_EXPECT_EQ(settled_free(), before);
}

/* A symlink whose expansion makes the path too long: ENAMETOOLONG. */
KTEST(fs_lookup_symlink_expansion_too_long)
{
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 16384));
	char *t = kmalloc(FS_PATH_MAX, 0);
	KT_ASSERT(t != NULL);
	/* target: "d/./././..." 4000 bytes, resolving to d */
	memcpy(t, "d", 1);
	for (int i = 1; i < 4000; i += 2)
		memcpy(t + i, "/.", 2);
	t[4001] = '\0';
	cpio_add(&c, "d", S_IFDIR | 0755, NULL, 0);
	cpio_file(&c, "d/f", "F");
	cpio_add(&c, "long", S_IFLNK | 0777, t, strlen(t));
	cpio_trailer(&c);
	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	KT_EXPECT_EQ(initramfs_load_tree(root, c.p, c.len, NULL), 0);
	struct inode *ip = NULL, *d = must(root, "d");
	KT_EXPECT(d != NULL);
	KT_EXPECT_EQ(lk(root, NULL, "long", 0, &ip), 0);
	KT_EXPECT(ip == d);
	KT_EXPECT_EQ(lk(root, NULL, "long/f", 0, &ip), 0);
	/* 4001 + "/" + 95 more bytes of path: over PATH_MAX once expanded. */
	char *p = kmalloc(200, 0);
	KT_ASSERT(p != NULL);
	memcpy(p, "long", 4);
	for (int i = 4; i < 100; i += 2)
		memcpy(p + i, "/.", 2);
	memcpy(p + 100, "/f", 3);
	KT_EXPECT_EQ(lk(root, NULL, p, 0, &ip), -ENAMETOOLONG);
	kfree(p);
	kfree(t);
	fs_tree_free(root);
	kfree(c.p);
}

/* ---- reading ---- */

KTEST(fs_read_at_offsets_readlink_and_stat)
{
	struct cpio c;
	KT_ASSERT(cpio_init(&c, 16384));
	uint8_t *data = kmalloc(10000, 0);
	uint8_t *buf = kmalloc(10000, 0);
	KT_ASSERT(data && buf);
	for (int i = 0; i < 10000; i++)
		data[i] = (uint8_t)(i * 31 + 7);
	cpio_add(&c, "big", S_IFREG | 0600, data, 10000);
	cpio_add(&c, "empty", S_IFREG | 0600, NULL, 0);
	cpio_link(&c, "ln", "big/target");
	cpio_add(&c, "dir", S_IFDIR | 0755, NULL, 0);
	cpio_add(&c, "fifo", S_IFIFO | 0600, NULL, 0);
	cpio_trailer(&c);
	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	KT_EXPECT_EQ(initramfs_load_tree(root, c.p, c.len, NULL), 0);
	struct inode *big = must(root, "big"), *ln = NULL, *dir = must(root, "dir");
	KT_ASSERT(big && dir);
	KT_EXPECT_EQ(lk(root, NULL, "ln", FS_NOFOLLOW, &ln), 0);

	KT_EXPECT_EQ(fs_read(big, buf, 10000, 0), 10000);
	KT_EXPECT(memcmp(buf, data, 10000) == 0);
	KT_EXPECT_EQ(fs_read(big, buf, 100, 4095), 100);
	KT_EXPECT(memcmp(buf, data + 4095, 100) == 0);
	KT_EXPECT_EQ(fs_read(big, buf, 500, 9800), 200);        /* short at the end */
	KT_EXPECT(memcmp(buf, data + 9800, 200) == 0);
	KT_EXPECT_EQ(fs_read(big, buf, 10, 10000), 0);
	KT_EXPECT_EQ(fs_read(big, buf, 10, ~0UL), 0);
	KT_EXPECT_EQ(fs_read(big, buf, 0, 0), 0);
	KT_EXPECT_EQ(fs_read(must(root, "empty"), buf, 10, 0), 0);
	KT_EXPECT_EQ(fs_read(dir, buf, 10, 0), -EISDIR);
	KT_EXPECT_EQ(fs_read(ln, buf, 10, 0), -EINVAL);
	KT_EXPECT_EQ(fs_read(must(root, "fifo"), buf, 10, 0), -EINVAL);

	char lb[32];
	KT_EXPECT_EQ(fs_readlink(ln, lb, sizeof(lb)), 10);
	KT_EXPECT(memcmp(lb, "big/target", 10) == 0);
	KT_EXPECT_EQ(fs_readlink(ln, lb, 3), 3);
	KT_EXPECT(memcmp(lb, "big", 3) == 0);
	KT_EXPECT_EQ(fs_readlink(big, lb, sizeof(lb)), -EINVAL);
	KT_EXPECT_EQ(fs_readlink(dir, lb, sizeof(lb)), -EINVAL);
	KT_EXPECT_EQ(lk(root, NULL, "ln", 0, &ln), -ENOTDIR);   /* big is a file */

	struct fs_stat s;
	fs_stat(big, &s);
	KT_EXPECT_EQ(s.size, 10000);
	KT_EXPECT_EQ(s.blocks, 24);                             /* whole tmpfs pages */
	KT_EXPECT_EQ(s.mode, S_IFREG | 0600);
	fs_tree_free(root);
	kfree(data);
	kfree(buf);
	kfree(c.p);
}

/* ---- concurrency: lookups while another thread loads into the tree ---- */

struct conc {
	struct inode *root;
	struct inode *target;
	volatile int stop;
	volatile int loading;          /* set while the loader runs */
	volatile int bad;
	volatile uint64_t lookups;
	volatile uint64_t during;      /* lookups made while loading was set */
};

static void conc_reader(void *arg)
{
	struct conc *cc = arg;
	/* Until the loads end (bounded: the test must end even if the
	 * scheduler starves the writer; it yields every 16 lookups).  A fixed
	 * count ran out before the loads began on 8 emulated CPUs. */
	for (int n = 0; n < 2000000 && (n < 100 || !READ_ONCE(cc->stop)); n++) {
		struct inode *ip = NULL;
		if (lk(cc->root, NULL, "/usr/bin/sh", 0, &ip) != 0 || ip != cc->target)
			__atomic_fetch_add(&cc->bad, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&cc->lookups, 1, __ATOMIC_RELAXED);
		if (READ_ONCE(cc->loading))
			__atomic_fetch_add(&cc->during, 1, __ATOMIC_RELAXED);
		if ((n & 15) == 0)
			sched_yield();
	}
}

KTEST(fs_lookup_concurrent_with_load)
{
	struct cpio c;
	struct inode *root = lookup_tree(&c);
	KT_ASSERT(root != NULL);
	struct conc cc = { .root = root, .target = must(root, "/bin/busybox") };
	KT_ASSERT(cc.target != NULL);
	struct thread *r[4];
	for (int i = 0; i < 4; i++)
		KT_ASSERT((r[i] = kthread_run("fsread", conc_reader, &cc)) != NULL);
	/* Let the readers start (bounded) so that loads and lookups overlap. */
	for (int i = 0; i < 100000 && READ_ONCE(cc.lookups) < 4; i++)
		sched_yield();
	struct cpio *more = kmalloc(20 * sizeof(*more), 0);
	KT_ASSERT(more != NULL);
	char name[32];
	WRITE_ONCE(cc.loading, 1);
	for (int k = 0; k < 20; k++) {
		KT_ASSERT(cpio_init(&more[k], 8192));
		for (int j = 0; j < 20; j++) {
			ksnprintf(name, sizeof(name), "bin/x%d_%d", k, j);
			cpio_file(&more[k], name, "x");
		}
		cpio_trailer(&more[k]);
		uint64_t before = READ_ONCE(cc.during);
		KT_EXPECT_EQ(initramfs_load_tree(root, more[k].p, more[k].len, NULL), 0);
		/* Between loads, let the readers in (bounded): on a loaded host
		 * the vCPUs running them may not run at all during 20 loads. */
		for (int i = 0; i < 200000 && READ_ONCE(cc.during) == before; i++)
			sched_yield();
	}
	WRITE_ONCE(cc.loading, 0);
	WRITE_ONCE(cc.stop, 1);
	for (int i = 0; i < 4; i++)
		thread_join(r[i]);
	KT_EXPECT_EQ(cc.bad, 0);
	/* The point of the test: lookups overlapped the loads (the readers
	 * were not all finished, nor all not yet started, while it loaded). */
	KT_EXPECT(cc.during > 0);
	KT_EXPECT(file_is(must(root, "/usr/bin/x19_19"), "x"));
	fs_tree_free(root);
	for (int k = 0; k < 20; k++)
		kfree(more[k].p);
	kfree(more);
	kfree(c.p);
}

/* ---- the boot module ---- */

static bool is_elf(struct inode *ip)
{
	char m[4];
	return fs_read(ip, m, 4, 0) == 4 && memcmp(m, "\177ELF", 4) == 0;
}

int initramfs_boot_elf(struct inode **out)
{
	struct inode *ip = NULL;
	if (bootinfo.initrd_start == 0 || fs_lookup(NULL, "/init", 0, &ip) != 0)
		return -ENOENT;
	if (is_elf(ip)) {
		*out = ip;
		return 0;
	}
	char line[128];
	ssize_t n = fs_read(ip, line, sizeof(line) - 1, 0);
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -ENOEXEC;
	line[n] = 0;
	char *p = line + 2, *e;
	while (*p == ' ' || *p == '\t')
		p++;
	for (e = p; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++)
		;
	*e = 0;
	if (fs_lookup(NULL, p, 0, &ip) != 0 || !is_elf(ip))
		return -ENOEXEC;
	*out = ip;
	return 0;
}

/* Whatever the module holds, /init is an executable regular file that is an
 * ELF program or a "#!" script whose interpreter is one. */
KTEST(initramfs_boot_module_has_init)
{
	if (bootinfo.initrd_start == 0)
		KT_SKIP("no -initrd given");
	struct inode *ip = NULL;
	KT_ASSERT(fs_lookup(NULL, "/init", 0, &ip) == 0);
	struct fs_stat s;
	fs_stat(ip, &s);
	KT_EXPECT(S_ISREG(s.mode));
	KT_EXPECT(s.mode & 0111);
	KT_EXPECT(s.size > 4);
	char m[4];
	KT_EXPECT_EQ(fs_read(ip, m, 4, 0), 4);
	KT_EXPECT(memcmp(m, "\177ELF", 4) == 0 || memcmp(m, "#!", 2) == 0);
	/* The data was copied into tmpfs pages. */
	void *va = NULL;
	KT_EXPECT_EQ(tmpfs_getpage(ip, 0, false, &va), 0);
	if (va) {
		KT_EXPECT(memcmp(va, m, 4) == 0);
		page_unref(va_to_page(va));
	}
	struct inode *elf = NULL;
	KT_EXPECT_EQ(initramfs_boot_elf(&elf), 0);
	struct inode *bb = NULL, *sh = NULL;
	if (fs_lookup(NULL, "/bin/busybox", 0, &bb) == 0) {
		KT_EXPECT_EQ(fs_lookup(NULL, "/bin/sh", 0, &sh), 0);
		KT_EXPECT(sh == bb);
	}
}
