/*
 * The in-memory file tree and the initramfs unpacker (cpio "newc").
 * See initramfs.h for the model and the locking.
 *
 * newc format: each entry is a 110-byte ASCII header ("070701", or "070702"
 * whose checksum we ignore, then 13 fields of 8 hex digits: ino mode uid gid
 * nlink mtime filesize devmajor devminor rdevmajor rdevminor namesize check),
 * the name (namesize bytes with its NUL), padding to a multiple of 4, the
 * data (filesize bytes: file contents or a link's target), padding to 4.
 * The entry named "TRAILER!!!" ends an archive; NUL bytes between archives
 * are skipped and a following archive is unpacked too (as Linux does).
 *
 * Defensive parsing: a header that is truncated, has a bad magic or a
 * non-hex field, or whose name or data runs past the end stops the unpack
 * (-EINVAL; what came before stays).  An entry whose header is sound but
 * whose name is bad (no NUL, embedded NUL, empty, a ".." component, a
 * component over 255 bytes, over 4096 bytes in all), whose parent is not a
 * directory, or whose type is unknown is skipped with a warning.
 *
 * Names: a leading "/" or "./" and "." components are dropped; missing
 * parent directories are created (mode 0755, owner 0).  "." alone sets the
 * root's attributes.  An entry for an existing name: a directory over a
 * directory updates its attributes; anything over a non-directory replaces
 * it (the later entry wins, as Linux's unpacker); a non-directory over a
 * directory is skipped.  Intermediate symlinks in archive names are not
 * followed (skipped: "parent is not a directory").
 *
 * Hard links: a non-directory entry with nlink >= 2 is remembered by
 * (ino, devmajor, devminor, type) for the rest of its archive; a later entry
 * with the same key becomes another name of the same node, and its data, if
 * it has any (newc puts it on the last name), becomes the node's data.
 * nlink is then the number of names made, not the archive's field.
 * Directories get nlink = 2 + subdirectories.  Inode numbers are assigned
 * in creation order from 1 (the archive's are only used to match links).
 */
#include "kernel.h"
#include "atomic.h"
#include "boot.h"
#include "errno.h"
#include "initramfs.h"
#include "kmem.h"
#include "lock.h"

#define NEWC_HDR_LEN  110
#define NEWC_TRAILER  "TRAILER!!!"

static struct complex_lock fs_lock;      /* the tree lock (class fs_tree) */
static struct inode *global_root;        /* (t) set once by fs_once */
static volatile uint32_t fs_state;       /* [a] 0 none, 1 starting, 2 ready */
static volatile uint64_t next_ino = 1;   /* [a] */
bool initramfs_verbose = true;

/* Warnings about the archive (tests of broken archives turn them off). */
#define warn(...) do { if (initramfs_verbose) kprintf(__VA_ARGS__); } while (0)

/* ---- nodes and directories ---- */

static struct inode *node_alloc(uint32_t mode)
{
	struct inode *ip = kzalloc(sizeof(*ip));
	if (ip == NULL)
		return NULL;
	ip->ino = fetch_and_add(&next_ino, 1);
	ip->mode = mode;
	if (S_ISDIR(mode)) {
		ip->nlink = 2;
		ip->u.dir.parent = ip;
	}
	return ip;
}

static void node_free(struct inode *ip)
{
	if (S_ISLNK(ip->mode))
		kfree(ip->u.lnk.target);
	else if (S_ISREG(ip->mode) && ip->u.reg.data_owned)
		kfree((void *)ip->u.reg.data);
	kfree(ip);
}

/* The entry named name[0..len) in dir, or NULL.  Tree lock held. */
static struct fs_dirent *dir_find(struct inode *dir, const char *name, size_t len)
{
	for (struct fs_dirent *de = dir->u.dir.entries; de; de = de->next)
		if (de->namelen == len && memcmp(de->name, name, len) == 0)
			return de;
	return NULL;
}

/* Account for ip gaining the name in dir (nlink, "..").  Tree lock for write. */
static void name_gained(struct inode *dir, struct inode *ip)
{
	if (S_ISDIR(ip->mode)) {
		ip->u.dir.parent = dir;
		dir->nlink++;
	} else {
		ip->nlink++;
	}
}

/* Add name[0..len) -> ip to dir: 0 or -ENOMEM.  Tree lock held for write. */
static int dir_add(struct inode *dir, const char *name, size_t len, struct inode *ip)
{
	struct fs_dirent *de = kmalloc(sizeof(*de) + len + 1, 0);
	if (de == NULL)
		return -ENOMEM;
	memcpy(de->name, name, len);
	de->name[len] = '\0';
	de->namelen = (uint16_t)len;
	de->ip = ip;
	de->next = dir->u.dir.entries;
	dir->u.dir.entries = de;
	name_gained(dir, ip);
	return 0;
}

/* ---- the archive's hard-link table (one archive at a time) ---- */

struct link_ent {
	uint32_t ino, major, minor, type;
	struct inode *ip;
};

struct load_ctx {
	struct inode *root;
	struct initramfs_stats *st;
	struct link_ent *links;      /* kmalloc'd array */
	int nlinks, maxlinks;
};

static struct inode *link_find(struct load_ctx *c, uint32_t ino, uint32_t major,
			       uint32_t minor, uint32_t type)
{
	for (int i = 0; i < c->nlinks; i++) {
		struct link_ent *l = &c->links[i];
		if (l->ip && l->ino == ino && l->major == major && l->minor == minor &&
		    l->type == type)
			return l->ip;
	}
	return NULL;
}

static int link_add(struct load_ctx *c, uint32_t ino, uint32_t major, uint32_t minor,
		    uint32_t type, struct inode *ip)
{
	if (c->nlinks == c->maxlinks) {
		int nmax = c->maxlinks ? 2 * c->maxlinks : 16;
		struct link_ent *n = kmalloc(nmax * sizeof(*n), 0);
		if (n == NULL)
			return -ENOMEM;
		if (c->links) {
			memcpy(n, c->links, c->nlinks * sizeof(*n));
			kfree(c->links);
		}
		c->links = n;
		c->maxlinks = nmax;
	}
	c->links[c->nlinks++] = (struct link_ent){ ino, major, minor, type, ip };
	return 0;
}

/* ip loses a name; free it when it has none left.  Never a directory. */
static void name_lost(struct load_ctx *c, struct inode *ip)
{
	KASSERT(!S_ISDIR(ip->mode));
	if (--ip->nlink > 0)
		return;
	for (int i = 0; c && i < c->nlinks; i++)
		if (c->links[i].ip == ip)
			c->links[i].ip = NULL;
	node_free(ip);
}

/* ---- newc headers ---- */

struct newc_hdr {
	uint32_t ino, mode, uid, gid, nlink, mtime, filesize;
	uint32_t devmajor, devminor, rdevmajor, rdevminor, namesize, check;
};

static bool parse_hex8(const char *p, uint32_t *out)
{
	uint32_t v = 0;
	for (int i = 0; i < 8; i++) {
		char ch = p[i];
		int d;
		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return true;
}

/* Parse the header at p (NEWC_HDR_LEN bytes available): 0 or -EINVAL. */
static int parse_header(const char *p, struct newc_hdr *h, size_t off)
{
	if (memcmp(p, "070701", 6) != 0 && memcmp(p, "070702", 6) != 0) {
		warn("initramfs: no newc magic at offset %lu; stopping\n", off);
		return -EINVAL;
	}
	uint32_t *f = &h->ino;          /* the 13 fields, in header order */
	for (int i = 0; i < 13; i++) {
		if (!parse_hex8(p + 6 + 8 * i, &f[i])) {
			warn("initramfs: bad hex field %d at offset %lu; stopping\n", i, off);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- entries ---- */

static void set_attrs(struct inode *ip, const struct newc_hdr *h)
{
	ip->mode = (ip->mode & S_IFMT) | (h->mode & 07777);
	ip->uid = h->uid;
	ip->gid = h->gid;
	ip->mtime = h->mtime;
}

static void skip_warn(struct load_ctx *c, const char *name, size_t len, const char *why)
{
	warn("initramfs: skipping entry '%.*s': %s\n", (int)MIN(len, 200), name, why);
	c->st->skipped++;
}

/*
 * Check name (len bytes, no NUL) and walk it from the root, creating missing
 * parent directories.  On success *dirp is the parent and [*last, *last +
 * *lastlen) the final component (lastlen 0: the name is the root itself).
 * Returns 0, -EINVAL (skip: *why says why) or -ENOMEM.
 */
static int walk_parents(struct load_ctx *c, const char *name, size_t len,
			struct inode **dirp, const char **last, size_t *lastlen,
			const char **why)
{
	struct inode *dir = c->root;
	const char *p = name, *end = name + len;
	*last = NULL;
	*lastlen = 0;
	/* First pass: validate every component. */
	for (const char *q = p; q < end;) {
		const char *s = q;
		while (q < end && *q != '/')
			q++;
		size_t n = q - s;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			*why = "'..' component";
			return -EINVAL;
		}
		if (n > FS_NAME_MAX) {
			*why = "component longer than 255 bytes";
			return -EINVAL;
		}
		while (q < end && *q == '/')
			q++;
	}
	/* Second pass: walk, keeping the last real component for the caller. */
	while (p < end) {
		const char *s = p;
		while (p < end && *p != '/')
			p++;
		size_t n = p - s;
		while (p < end && *p == '/')
			p++;
		if (n == 0 || (n == 1 && s[0] == '.'))
			continue;
		/* Is there another real component after this one? */
		const char *r = p;
		bool more = false;
		while (r < end) {
			const char *t = r;
			while (r < end && *r != '/')
				r++;
			if (!(r - t == 0 || (r - t == 1 && t[0] == '.'))) {
				more = true;
				break;
			}
			while (r < end && *r == '/')
				r++;
		}
		if (!more) {
			*last = s;
			*lastlen = n;
			break;
		}
		struct fs_dirent *de = dir_find(dir, s, n);
		if (de == NULL) {
			struct inode *nd = node_alloc(S_IFDIR | 0755);
			if (nd == NULL)
				return -ENOMEM;
			if (dir_add(dir, s, n, nd) != 0) {
				kfree(nd);
				return -ENOMEM;
			}
			c->st->dirs++;
			dir = nd;
		} else if (S_ISDIR(de->ip->mode)) {
			dir = de->ip;
		} else {
			*why = "a parent is not a directory";
			return -EINVAL;
		}
	}
	*dirp = dir;
	return 0;
}

/* A new node for a non-directory entry (data from the archive).  NULL: why. */
static struct inode *make_leaf(const struct newc_hdr *h, const char *data,
			       const char **why)
{
	uint32_t type = h->mode & S_IFMT;
	struct inode *ip = node_alloc(type);
	if (ip == NULL) {
		*why = "out of memory";
		return NULL;
	}
	set_attrs(ip, h);
	switch (type) {
	case S_IFREG:
		ip->u.reg.data = (const uint8_t *)data;
		ip->size = h->filesize;
		break;
	case S_IFLNK:
		ip->u.lnk.target = kmalloc(h->filesize + 1, 0);
		if (ip->u.lnk.target == NULL) {
			kfree(ip);
			*why = "out of memory";
			return NULL;
		}
		memcpy(ip->u.lnk.target, data, h->filesize);
		ip->u.lnk.target[h->filesize] = '\0';
		ip->size = h->filesize;
		break;
	default:        /* device, fifo, socket */
		ip->rdev = (h->rdevminor & 0xff) | (h->rdevmajor << 8) |
			   ((h->rdevminor & ~0xffu) << 12);
		break;
	}
	return ip;
}

/* Type-specific checks of an entry's data; NULL if fine, else why not. */
static const char *check_type(const struct newc_hdr *h, const char *data)
{
	switch (h->mode & S_IFMT) {
	case S_IFDIR: case S_IFREG: case S_IFCHR: case S_IFBLK: case S_IFIFO: case S_IFSOCK:
		return NULL;
	case S_IFLNK:
		if (h->filesize == 0)
			return "empty symlink target";
		if (h->filesize >= FS_PATH_MAX)
			return "symlink target too long";
		for (uint32_t i = 0; i < h->filesize; i++)
			if (data[i] == '\0')
				return "NUL in symlink target";
		return NULL;
	default:
		return "unknown file type";
	}
}

/* A directory entry: create it, or update an existing directory. */
static int add_dir(struct load_ctx *c, struct inode *dir, const char *last,
		   size_t lastlen, const struct newc_hdr *h)
{
	if (lastlen == 0) {             /* "." : the root itself */
		set_attrs(c->root, h);
		return 0;
	}
	struct fs_dirent *de = dir_find(dir, last, lastlen);
	if (de && S_ISDIR(de->ip->mode)) {
		set_attrs(de->ip, h);
		return 0;
	}
	struct inode *nd = node_alloc(S_IFDIR);
	if (nd == NULL)
		return -ENOMEM;
	set_attrs(nd, h);
	if (de) {                       /* replaces a non-directory */
		struct inode *old = de->ip;
		de->ip = nd;
		name_gained(dir, nd);
		name_lost(c, old);
	} else if (dir_add(dir, last, lastlen, nd) != 0) {
		kfree(nd);
		return -ENOMEM;
	}
	c->st->dirs++;
	return 0;
}

/* Give ip the name last in dir, replacing a non-directory there. */
static int bind_name(struct load_ctx *c, struct inode *dir, struct fs_dirent *de,
		     const char *last, size_t lastlen, struct inode *ip)
{
	if (de == NULL)
		return dir_add(dir, last, lastlen, ip);
	struct inode *old = de->ip;
	if (old == ip)
		return 0;
	de->ip = ip;
	name_gained(dir, ip);
	name_lost(c, old);
	return 0;
}

/* A non-directory entry (file, link, device...), possibly a hard link. */
static int add_leaf(struct load_ctx *c, struct inode *dir, const char *name, size_t len,
		    const char *last, size_t lastlen, const struct newc_hdr *h,
		    const char *data)
{
	const char *why = NULL;
	uint32_t type = h->mode & S_IFMT;
	if (lastlen == 0) {
		skip_warn(c, name, len, "the root must be a directory");
		return 0;
	}
	struct fs_dirent *de = dir_find(dir, last, lastlen);
	if (de && S_ISDIR(de->ip->mode)) {
		skip_warn(c, name, len, "a directory of that name exists");
		return 0;
	}
	struct inode *ip = h->nlink >= 2 ?
		link_find(c, h->ino, h->devmajor, h->devminor, type) : NULL;
	if (ip) {                       /* another name of an earlier entry */
		if (bind_name(c, dir, de, last, lastlen, ip) != 0)
			return -ENOMEM;
		if (type == S_IFREG && h->filesize > 0) {
			ip->u.reg.data = (const uint8_t *)data;
			ip->size = h->filesize;
		}
		set_attrs(ip, h);
		c->st->hardlinks++;
		return 0;
	}
	ip = make_leaf(h, data, &why);
	if (ip == NULL)
		return -ENOMEM;
	if (bind_name(c, dir, de, last, lastlen, ip) != 0) {
		node_free(ip);
		return -ENOMEM;
	}
	if (h->nlink >= 2 && link_add(c, h->ino, h->devmajor, h->devminor, type, ip) != 0)
		return -ENOMEM;
	if (type == S_IFREG)
		c->st->files++;
	else if (type == S_IFLNK)
		c->st->symlinks++;
	else
		c->st->nodes++;
	return 0;
}

/* One sound entry: name (namesize bytes, checked for its NUL here) and data. */
static int add_entry(struct load_ctx *c, const struct newc_hdr *h, const char *name,
		     const char *data)
{
	size_t len = h->namesize - 1;
	const char *why = NULL;
	if (h->namesize == 0 || name[len] != '\0') {
		skip_warn(c, name, h->namesize, "name without NUL");
		return 0;
	}
	if (strlen(name) != len) {
		skip_warn(c, name, len, "NUL inside the name");
		return 0;
	}
	if (len == 0) {
		skip_warn(c, name, len, "empty name");
		return 0;
	}
	if (h->namesize > FS_PATH_MAX) {
		skip_warn(c, name, len, "name longer than PATH_MAX");
		return 0;
	}
	if ((why = check_type(h, data)) != NULL) {
		skip_warn(c, name, len, why);
		return 0;
	}
	struct inode *dir;
	const char *last;
	size_t lastlen;
	int err = walk_parents(c, name, len, &dir, &last, &lastlen, &why);
	if (err == -EINVAL) {
		skip_warn(c, name, len, why);
		return 0;
	}
	if (err)
		return err;
	if (S_ISDIR(h->mode))
		return add_dir(c, dir, last, lastlen, h);
	return add_leaf(c, dir, name, len, last, lastlen, h, data);
}

/*
 * Unpack one archive starting at *offp, up to and including its trailer.
 * Returns 0 at the trailer, 1 if the buffer ended cleanly without one,
 * -EINVAL on a broken header, -ENOMEM.  Tree lock held for write.
 */
static int load_archive(struct load_ctx *c, const char *buf, size_t len, size_t *offp)
{
	size_t off = *offp;
	int err = 0;
	for (;;) {
		if (off >= len) {
			warn("initramfs: archive ends without %s\n", NEWC_TRAILER);
			err = 1;
			break;
		}
		struct newc_hdr h;
		if (len - off < NEWC_HDR_LEN) {
			warn("initramfs: truncated header at offset %lu; stopping\n", off);
			err = -EINVAL;
			break;
		}
		if ((err = parse_header(buf + off, &h, off)) != 0)
			break;
		size_t name_off = off + NEWC_HDR_LEN;
		if (h.namesize > len - name_off) {
			warn("initramfs: name runs past the end at offset %lu; stopping\n", off);
			err = -EINVAL;
			break;
		}
		size_t data_off = ALIGN_UP(name_off + h.namesize, 4);
		if (data_off > len || h.filesize > len - data_off) {
			warn("initramfs: data runs past the end at offset %lu; stopping\n", off);
			err = -EINVAL;
			break;
		}
		size_t next = MIN(ALIGN_UP(data_off + h.filesize, 4), len);
		const char *name = buf + name_off;
		if (h.namesize == sizeof(NEWC_TRAILER) &&
		    memcmp(name, NEWC_TRAILER, sizeof(NEWC_TRAILER)) == 0) {
			c->st->archives++;
			off = next;
			break;
		}
		c->st->entries++;
		if ((err = add_entry(c, &h, name, buf + data_off)) != 0)
			break;
		off = next;
	}
	*offp = off;
	return err;
}

int initramfs_load_tree(struct inode *root, const void *buf, size_t len,
			struct initramfs_stats *st)
{
	struct initramfs_stats dummy;
	if (st == NULL)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	struct load_ctx c = { .root = root, .st = st };
	const char *p = buf;
	size_t off = 0;
	int err = 0;
	lock_write(&fs_lock);
	for (;;) {
		while (off < len && p[off] == '\0')    /* padding between archives */
			off++;
		if (off >= len)
			break;
		err = load_archive(&c, p, len, &off);
		kfree(c.links);                         /* links are per archive */
		c.links = NULL;
		c.nlinks = c.maxlinks = 0;
		if (err) {
			if (err > 0)
				err = 0;
			break;
		}
	}
	lock_done(&fs_lock);
	return err;
}

/* ---- the global tree ---- */

/* Once: the lock, the root, and the boot module unpacked into it. */
static void fs_once(void)
{
	if (__atomic_load_n(&fs_state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!compare_and_swap32(&fs_state, 0, 1)) {
		while (__atomic_load_n(&fs_state, __ATOMIC_ACQUIRE) != 2)
			cpu_relax();
		return;
	}
	complex_lock_init(&fs_lock, LC_FS_TREE, 0);
	global_root = node_alloc(S_IFDIR | 0755);
	if (global_root == NULL)
		panic("initramfs: no memory for the root directory");
	if (bootinfo.initrd_start && bootinfo.initrd_end > bootinfo.initrd_start) {
		struct initramfs_stats st;
		size_t len = bootinfo.initrd_end - bootinfo.initrd_start;
		int err = initramfs_load_tree(global_root, P2V(bootinfo.initrd_start), len, &st);
		kinfo("initramfs: %lu bytes: %d entries, %d dirs, %d files, %d symlinks, "
		      "%d nodes, %d hard links, %d skipped%s\n", len, st.entries, st.dirs,
		      st.files, st.symlinks, st.nodes, st.hardlinks, st.skipped,
		      err ? " (stopped early)" : "");
	}
	__atomic_store_n(&fs_state, 2, __ATOMIC_RELEASE);
}

void initramfs_init(void)
{
	fs_once();
}

struct inode *fs_root(void)
{
	fs_once();
	return global_root;
}

int initramfs_load(const void *buf, size_t len)
{
	return initramfs_load_tree(fs_root(), buf, len, NULL);
}

struct inode *fs_tree_create(void)
{
	fs_once();
	return node_alloc(S_IFDIR | 0755);
}

/*
 * Free a private tree, iteratively (trees may be deep).  Nobody may use it.
 * A non-directory is freed with its last name.
 */
void fs_tree_free(struct inode *root)
{
	KASSERT(root != global_root);
	lock_write(&fs_lock);
	struct inode *ip = root;
	for (;;) {
		struct fs_dirent *de = ip->u.dir.entries;
		if (de) {
			ip->u.dir.entries = de->next;
			struct inode *child = de->ip;
			kfree(de);
			if (S_ISDIR(child->mode))
				ip = child;          /* empty it first */
			else
				name_lost(NULL, child);
			continue;
		}
		struct inode *parent = ip->u.dir.parent;
		bool done = (ip == root);
		kfree(ip);
		if (done)
			break;
		ip = parent;
	}
	lock_done(&fs_lock);
}

/* ---- lookup ---- */

/*
 * Resolve buf (a writable copy of the path, FS_PATH_MAX bytes) from cur.
 * Symlinks are expanded in place: the target replaces the component and the
 * rest of the path follows it.  Tree lock held for read.
 */
static int walk(struct inode *root, struct inode *cur, char *buf, int flags,
		struct inode **out)
{
	int nlinks = 0;
	char *p = buf;
	if (*p == '/')
		cur = root;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = p - s;
		if (n > FS_NAME_MAX)
			return -ENAMETOOLONG;
		char *rest = p;                /* slashes and what follows */
		while (*p == '/')
			p++;
		bool last = (*p == '\0');
		bool trailing_slash = last && rest != p;
		if (!S_ISDIR(cur->mode))
			return -ENOTDIR;
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (cur != root)
				cur = cur->u.dir.parent;
			continue;
		}
		struct fs_dirent *de = dir_find(cur, s, n);
		if (de == NULL)
			return -ENOENT;
		struct inode *ip = de->ip;
		if (S_ISLNK(ip->mode) && (!last || trailing_slash || !(flags & FS_NOFOLLOW))) {
			if (++nlinks > FS_MAXSYMLINKS)
				return -ELOOP;
			const char *t = ip->u.lnk.target;
			size_t tlen = ip->size, rlen = strlen(rest);
			if (tlen + rlen >= FS_PATH_MAX)
				return -ENAMETOOLONG;
			memmove(buf + tlen, rest, rlen + 1);
			memcpy(buf, t, tlen);
			p = buf;
			if (*p == '/')
				cur = root;
			continue;
		}
		cur = ip;
		if (trailing_slash && !S_ISDIR(cur->mode))
			return -ENOTDIR;
	}
	*out = cur;
	return 0;
}

int fs_lookup_at(struct inode *root, struct inode *cwd, const char *path, int flags,
		 struct inode **out)
{
	size_t len = strnlen(path, FS_PATH_MAX);
	if (len == 0)
		return -ENOENT;
	if (len >= FS_PATH_MAX)
		return -ENAMETOOLONG;
	char *buf = kmalloc(FS_PATH_MAX, 0);
	if (buf == NULL)
		return -ENOMEM;
	memcpy(buf, path, len + 1);
	if (cwd == NULL)
		cwd = root;
	lock_read(&fs_lock);
	int err = walk(root, cwd, buf, flags, out);
	lock_done(&fs_lock);
	kfree(buf);
	return err;
}

int fs_lookup(struct inode *cwd, const char *path, int flags, struct inode **out)
{
	return fs_lookup_at(fs_root(), cwd, path, flags, out);
}

/* ---- reading ---- */

ssize_t fs_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	ssize_t r;
	lock_read(&fs_lock);
	if (S_ISDIR(ip->mode)) {
		r = -EISDIR;
	} else if (!S_ISREG(ip->mode)) {
		r = -EINVAL;
	} else if (off >= ip->size) {
		r = 0;
	} else {
		size_t k = MIN(n, ip->size - off);
		memcpy(buf, ip->u.reg.data + off, k);
		r = (ssize_t)k;
	}
	lock_done(&fs_lock);
	return r;
}

ssize_t fs_readlink(struct inode *ip, char *buf, size_t n)
{
	ssize_t r = -EINVAL;
	lock_read(&fs_lock);
	if (S_ISLNK(ip->mode)) {
		size_t k = MIN(n, ip->size);
		memcpy(buf, ip->u.lnk.target, k);
		r = (ssize_t)k;
	}
	lock_done(&fs_lock);
	return r;
}

void fs_stat(struct inode *ip, struct fs_stat *st)
{
	lock_read(&fs_lock);
	st->ino = ip->ino;
	st->mode = ip->mode;
	st->nlink = ip->nlink;
	st->uid = ip->uid;
	st->gid = ip->gid;
	st->rdev = ip->rdev;
	st->size = ip->size;
	st->blocks = ALIGN_UP(ip->size, 512) / 512;
	st->mtime = ip->mtime;
	lock_done(&fs_lock);
}
