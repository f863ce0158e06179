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
#include "vfs.h"

#define NEWC_HDR_LEN  110
#define NEWC_TRAILER  "TRAILER!!!"

bool initramfs_verbose = true;

/* Warnings about the archive (tests of broken archives turn them off). */
#define warn(...) do { if (initramfs_verbose) kprintf(__VA_ARGS__); } while (0)

/* ---- the archive's hard-link table (one archive at a time) ---- */

struct link_ent {
	uint32_t ino, major, minor, type;
	struct inode *ip;            /* referenced */
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
	vnode_ref(ip);
	c->links[c->nlinks++] = (struct link_ent){ ino, major, minor, type, ip };
	return 0;
}

static void links_free(struct load_ctx *c)
{
	for (int i = 0; i < c->nlinks; i++)
		vnode_put(c->links[i].ip);
	kfree(c->links);
	c->links = NULL;
	c->nlinks = c->maxlinks = 0;
}

/* The inode named name[0..len) in dir (referenced), or NULL. */
static struct inode *dir_get(struct inode *dir, const char *name, size_t len)
{
	struct inode *ip;
	return vfs_lookup_child(dir, name, len, &ip) == 0 ? ip : NULL;
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
	simple_lock(&ip->meta);
	ip->mode = (ip->mode & S_IFMT) | (h->mode & 07777);
	ip->uid = h->uid;
	ip->gid = h->gid;
	ip->mtime.sec = ip->atime.sec = ip->ctime.sec = h->mtime;
	ip->mtime.nsec = ip->atime.nsec = ip->ctime.nsec = 0;
	simple_unlock(&ip->meta);
}

static void skip_warn(struct load_ctx *c, const char *name, size_t len, const char *why)
{
	warn("initramfs: skipping entry '%.*s': %s\n", (int)MIN(len, 200), name, why);
	c->st->skipped++;
}

/*
 * Check name (len bytes, no NUL) and walk it from the root, creating missing
 * parent directories.  On success *dirp is the parent (referenced) and
 * [*last, *last + *lastlen) the final component (lastlen 0: the name is the
 * root itself).  Returns 0, -EINVAL (skip: *why says why) or -ENOMEM.
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
	vnode_ref(dir);
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
		struct inode *ip = dir_get(dir, s, n);
		if (ip == NULL) {
			int err = vfs_create(dir, s, n, S_IFDIR | 0755, 0, NULL, &ip);
			if (err == -EEXIST)
				ip = dir_get(dir, s, n);
			else if (err) {
				vnode_put(dir);
				return -ENOMEM;
			} else {
				c->st->dirs++;
			}
			if (!ip) {
				vnode_put(dir);
				return -ENOMEM;
			}
		}
		vnode_put(dir);
		dir = ip;
		if (!S_ISDIR(ip->mode)) {
			vnode_put(dir);
			*why = "a parent is not a directory";
			return -EINVAL;
		}
	}
	*dirp = dir;
	return 0;
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
	struct inode *old = dir_get(dir, last, lastlen);
	if (old && S_ISDIR(old->mode)) {
		set_attrs(old, h);
		vnode_put(old);
		return 0;
	}
	if (old) {                      /* replaces a non-directory */
		vfs_unlink(dir, last, lastlen, false);
		vnode_put(old);
	}
	struct inode *nd;
	int err = vfs_create(dir, last, lastlen, S_IFDIR | (h->mode & 07777), 0, NULL, &nd);
	if (err)
		return err == -ENOMEM ? -ENOMEM : 0;
	set_attrs(nd, h);
	vnode_put(nd);
	c->st->dirs++;
	return 0;
}

/* A non-directory entry (file, link, device...), possibly a hard link. */
static int add_leaf(struct load_ctx *c, struct inode *dir, const char *name, size_t len,
		    const char *last, size_t lastlen, const struct newc_hdr *h,
		    const char *data)
{
	uint32_t type = h->mode & S_IFMT;
	if (lastlen == 0) {
		skip_warn(c, name, len, "the root must be a directory");
		return 0;
	}
	struct inode *old = dir_get(dir, last, lastlen);
	if (old && S_ISDIR(old->mode)) {
		vnode_put(old);
		skip_warn(c, name, len, "a directory of that name exists");
		return 0;
	}
	struct inode *ip = h->nlink >= 2 ?
		link_find(c, h->ino, h->devmajor, h->devminor, type) : NULL;
	if (ip) {                       /* another name of an earlier entry */
		if (old != ip) {
			if (old)
				vfs_unlink(dir, last, lastlen, false);
			if (vfs_link(ip, dir, last, lastlen) == -ENOMEM) {
				vnode_put(old);
				return -ENOMEM;
			}
		}
		vnode_put(old);
		if (type == S_IFREG && h->filesize > 0) {
			vfs_truncate(ip, 0);
			if (vfs_write_kernel(ip, data, h->filesize, 0) != (ssize_t)h->filesize)
				return -ENOMEM;
		}
		set_attrs(ip, h);
		c->st->hardlinks++;
		return 0;
	}
	if (old) {
		vfs_unlink(dir, last, lastlen, false);
		vnode_put(old);
	}
	char *target = NULL;
	if (type == S_IFLNK) {
		target = kmalloc(h->filesize + 1, 0);
		if (!target)
			return -ENOMEM;
		memcpy(target, data, h->filesize);
		target[h->filesize] = '\0';
	}
	uint32_t rdev = (h->rdevminor & 0xff) | (h->rdevmajor << 8) |
			((h->rdevminor & ~0xffu) << 12);
	int err = vfs_create(dir, last, lastlen, type | (h->mode & 07777),
			     type == S_IFCHR || type == S_IFBLK ? rdev : 0, target, &ip);
	kfree(target);
	if (err)
		return err == -ENOMEM ? -ENOMEM : 0;
	if (type == S_IFREG && h->filesize &&
	    vfs_write_kernel(ip, data, h->filesize, 0) != (ssize_t)h->filesize) {
		vnode_put(ip);
		return -ENOMEM;
	}
	set_attrs(ip, h);
	if (h->nlink >= 2 && link_add(c, h->ino, h->devmajor, h->devminor, type, ip) != 0) {
		vnode_put(ip);
		return -ENOMEM;
	}
	vnode_put(ip);
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
		err = add_dir(c, dir, last, lastlen, h);
	else
		err = add_leaf(c, dir, name, len, last, lastlen, h, data);
	vnode_put(dir);
	return err;
}

/*
 * Unpack one archive starting at *offp, up to and including its trailer.
 * Returns 0 at the trailer, 1 if the buffer ended cleanly without one,
 * -EINVAL on a broken header, -ENOMEM.
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
	for (;;) {
		while (off < len && p[off] == '\0')    /* padding between archives */
			off++;
		if (off >= len)
			break;
		err = load_archive(&c, p, len, &off);
		links_free(&c);                         /* links are per archive */
		if (err) {
			if (err > 0)
				err = 0;
			break;
		}
	}
	return err;
}

/* The boot module into the root file system (vfs_init). */
void initramfs_populate(struct inode *root)
{
	if (bootinfo.initrd_start && bootinfo.initrd_end > bootinfo.initrd_start) {
		struct initramfs_stats st;
		size_t len = bootinfo.initrd_end - bootinfo.initrd_start;
		int err = initramfs_load_tree(root, P2V(bootinfo.initrd_start), len, &st);
		kinfo("initramfs: %lu bytes: %d entries, %d dirs, %d files, %d symlinks, "
		      "%d nodes, %d hard links, %d skipped%s\n", len, st.entries, st.dirs,
		      st.files, st.symlinks, st.nodes, st.hardlinks, st.skipped,
		      err ? " (stopped early)" : "");
	}
}
