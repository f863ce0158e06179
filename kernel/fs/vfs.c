/*
 * The VFS core: inodes, the name cache, path walk, directory operations,
 * mounts (vfs.h has the model and the locking).  tmpfs is the file system
 * whose directories live in the name cache; its file data is in tmpfs.c.
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "ns.h"
#include "page.h"
#include "proc.h"
#include "sbuf.h"
#include "sched.h"
#include "syscall.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"
#include "flock.h"
#include "inotify.h"

/* ---- credentials and permissions ---- */

/*
 * The caller's file-system uid and gid (Linux fsuid/fsgid: the effective
 * ids unless setfsuid changed them); kernel threads act as root.  A
 * process reads its own credentials without a lock: only its own threads
 * change them, and a check racing a set*id call sees the ids before or
 * after it, as on Linux.
 */
void vfs_cred(uint32_t *uid, uint32_t *gid)
{
	struct proc *p = curproc();
	*uid = p ? READ_ONCE(p->cred.fsuid) : 0;
	*gid = p ? READ_ONCE(p->cred.fsgid) : 0;
}

bool vfs_in_group(uint32_t gid, bool real)
{
	struct proc *p = curproc();
	if (!p)
		return true;
	uint32_t mine = real ? READ_ONCE(p->cred.rgid) : READ_ONCE(p->cred.fsgid);
	if (gid == mine)
		return true;
	int n = MIN(READ_ONCE(p->cred.ngroups), NGROUPS_KERN);
	for (int i = 0; i < n; i++)
		if (p->cred.groups[i] == gid)
			return true;
	return false;
}

/* The caller's effective capabilities (every one for kernel threads; none
 * for a process in a user namespace other than the initial: its
 * capabilities are not over files, which belong to the initial one). */
static uint64_t cred_caps(void)
{
	struct proc *p = curproc();
	if (p && !ns_user_is_init(p))
		return 0;
	return p ? READ_ONCE(p->cred.cap_eff) : CAP_FULL;
}

bool vfs_capable(int cap)
{
	return (cred_caps() & CAP_BIT(cap)) != 0;
}

/*
 * Access by uid (and its groups; real: the real gid, for access(2)) with
 * capability set caps, as Linux's generic_permission: the owner, group or
 * other bits; failing them, CAP_DAC_READ_SEARCH reads any file and reads
 * and searches any directory, CAP_DAC_OVERRIDE reads and writes anything
 * and executes a file with some x bit.
 */
static int permission_as(struct inode *ip, int may, uint32_t uid, bool real, uint64_t caps)
{
	if ((may & MAY_WRITE) && vfs_rdonly(ip))
		return -EROFS;               /* Linux: before the mode bits, root too */
	uint32_t mode = READ_ONCE(ip->mode);
	uint32_t bits = uid == READ_ONCE(ip->uid) ? mode >> 6 :
			vfs_in_group(READ_ONCE(ip->gid), real) ? mode >> 3 : mode;
	may &= MAY_READ | MAY_WRITE | MAY_EXEC;
	if (!(may & ~bits & 7))
		return 0;
	bool read_search = caps & CAP_BIT(CAP_DAC_READ_SEARCH);
	bool override = caps & CAP_BIT(CAP_DAC_OVERRIDE);
	if (S_ISDIR(mode))
		return (read_search && !(may & MAY_WRITE)) || override ? 0 : -EACCES;
	if (may == MAY_READ && read_search)
		return 0;
	if (override && (!(may & MAY_EXEC) || (mode & 0111)))
		return 0;
	return -EACCES;
}

int vfs_permission(struct inode *ip, int may)
{
	uint32_t uid, gid;
	vfs_cred(&uid, &gid);
	return permission_as(ip, may, uid, false, cred_caps());
}

/* Linux's access(2) acts with the real ids and, for a real uid 0, the
 * permitted set as effective, otherwise with no capabilities (under
 * SECBIT_NO_SETUID_FIXUP with the effective set as it is). */
int vfs_permission_real(struct inode *ip, int may)
{
	struct proc *p = curproc();
	if (!p)
		return permission_as(ip, may, 0, true, CAP_FULL);
	uint32_t ruid = READ_ONCE(p->cred.ruid);
	uint64_t caps = ruid == 0 ? READ_ONCE(p->cred.cap_prm) : 0;
	if (READ_ONCE(p->cred.securebits) & SECBIT_NO_SETUID_FIXUP)
		caps = READ_ONCE(p->cred.cap_eff);
	if (!ns_user_is_init(p))
		caps = 0;                     /* as cred_caps */
	return permission_as(ip, may, ruid, true, caps);
}

bool vfs_owner_or_capable(struct inode *ip)
{
	uint32_t uid, gid;
	vfs_cred(&uid, &gid);
	return uid == READ_ONCE(ip->uid) || vfs_capable(CAP_FOWNER);
}

/*
 * Sticky directories (mode 01000, /tmp): only the owner of the entry, the
 * owner of the directory or CAP_FOWNER may remove or rename it.  0 or
 * -EPERM.
 */
int vfs_sticky_ok(struct inode *dir, struct inode *ip)
{
	uint32_t uid, gid;
	vfs_cred(&uid, &gid);
	if (!(READ_ONCE(dir->mode) & 01000) || uid == READ_ONCE(ip->uid) ||
	    uid == READ_ONCE(dir->uid) || vfs_capable(CAP_FOWNER))
		return 0;
	return -EPERM;
}

/*
 * After a write or truncate (Linux file_remove_privs): a regular file
 * loses set-user-id, and set-group-id if group-executable, unless the
 * writer has CAP_FSETID.  Any context that may take ip->meta.
 */
void vfs_kill_suid(struct inode *ip)
{
	uint32_t mode = READ_ONCE(ip->mode);
	uint32_t kill = (mode & 04000) | ((mode & 02010) == 02010 ? 02000 : 0);
	if (!kill || !S_ISREG(mode) || vfs_capable(CAP_FSETID))
		return;
	simple_lock(&ip->meta);
	ip->mode &= ~kill;
	simple_unlock(&ip->meta);
	vnode_touch(ip, 4);
}

/* ---- inodes ---- */

static struct timespec64 now(void)
{
	uint64_t ns = time_realtime_ns();
	return (struct timespec64){ (int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC) };
}

void vnode_touch(struct inode *ip, int what)
{
	struct timespec64 t = now();
	simple_lock(&ip->meta);
	if (what & 1)
		ip->atime = t;
	if (what & 2)
		ip->mtime = t;
	if (what & 4)
		ip->ctime = t;
	simple_unlock(&ip->meta);
}

struct inode *vnode_alloc(struct superblock *sb, uint32_t mode)
{
	struct inode *ip = kzalloc(sizeof(*ip));
	if (!ip)
		return NULL;
	complex_lock_init(&ip->lock, LC_VNODE, 0);
	simple_lock_init(&ip->meta, LC_VNODE_META);
	simple_lock_init(&ip->pages, LC_TMPFS_PAGES);
	ip->refcnt = 1;
	ip->sb = sb;
	ip->ino = fetch_and_add(&sb->next_ino, 1);
	ip->mode = mode;
	vfs_cred(&ip->uid, &ip->gid);
	ip->atime = ip->mtime = ip->ctime = ip->btime = now();
	if (S_ISDIR(mode)) {
		ip->u.dir.next_cookie = 2;
		ip->u.dir.parent = ip;
	}
	fetch_and_add(&sb->ninodes, 1);
	return ip;
}

static void sb_free(struct superblock *sb);

static void vnode_free(struct inode *ip)
{
	struct superblock *sb = ip->sb;
	inotify_inode_free(ip);
	if (ip->ops && ip->ops->release)
		ip->ops->release(ip);
	flock_inode_release(ip);
	xattr_inode_release(ip);
	if (S_ISREG(ip->mode) && !ip->ops) {
		tmpfs_free_pages(ip, 0);        /* and the page index */
	} else if (S_ISLNK(ip->mode)) {
		kfree(ip->u.lnk.target);
	}
	kfree(ip);
	if (fetch_and_add(&sb->ninodes, -1UL) == 1 && sb->root == NULL)
		sb_free(sb);
}

void vnode_ref(struct inode *ip)
{
	fetch_and_add(&ip->refcnt, 1);
}

void vnode_put(struct inode *ip)
{
	if (!ip)
		return;
	simple_lock(&ip->meta);
	uint64_t r = fetch_and_add(&ip->refcnt, -1UL) - 1;
	bool dofree = r == 0 && ip->nlink == 0;
	simple_unlock(&ip->meta);
	if (dofree)
		vnode_free(ip);
}

/* ip lost one name (all: every name, a directory); free it if unused. */
static void vnode_drop_link(struct inode *ip, bool all)
{
	simple_lock(&ip->meta);
	if (all)
		ip->nlink = 0;
	else if (ip->nlink)
		ip->nlink--;
	ip->ctime = now();
	bool dofree = ip->nlink == 0 && ip->refcnt == 0;
	simple_unlock(&ip->meta);
	if (dofree)
		vnode_free(ip);
}

/* ---- the name cache ---- */

#define NC_BITS 12
#define NC_BUCKETS (1u << NC_BITS)

struct nc_bucket {
	struct simple_lock lock;
	struct dentry *head;           /* (lock) */
} __cacheline_aligned;

static struct nc_bucket nc_table[NC_BUCKETS];
static volatile uint64_t nc_entries, nc_hits, nc_misses;   /* [a] fuzzy */

static uint32_t nc_hash(const struct inode *dir, const char *name, size_t len)
{
	uint64_t h = 1469598103934665603ULL ^ ((uint64_t)dir >> 4);
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)name[i];
		h *= 1099511628211ULL;
	}
	return (uint32_t)(h ^ (h >> 32));
}

static struct nc_bucket *nc_bucket(uint32_t hash)
{
	return &nc_table[hash & (NC_BUCKETS - 1)];
}

/* The dentry for (dir, name) in a locked bucket, or NULL. */
static struct dentry *nc_find_locked(struct nc_bucket *b, uint32_t hash, struct inode *dir,
				     const char *name, size_t len)
{
	KASSERT(simple_lock_held(&b->lock));
	for (struct dentry *d = b->head; d; d = d->hnext)
		if (d->hash == hash && d->dir == dir && d->namelen == len &&
		    memcmp(d->name, name, len) == 0)
			return d;
	return NULL;
}

/* The dentry of name in dir; dir's lock held (so it cannot go away). */
static struct dentry *dir_find(struct inode *dir, const char *name, size_t len)
{
	uint32_t h = nc_hash(dir, name, len);
	struct nc_bucket *b = nc_bucket(h);
	simple_lock(&b->lock);
	struct dentry *d = nc_find_locked(b, h, dir, name, len);
	simple_unlock(&b->lock);
	return d;
}

static struct dentry *dentry_alloc(const char *name, size_t len)
{
	struct dentry *d = kmalloc(sizeof(*d) + len + 1, 0);
	if (!d)
		return NULL;
	memcpy(d->name, name, len);
	d->name[len] = '\0';
	d->namelen = (uint16_t)len;
	return d;
}

/* Link the prepared dentry d (name set) -> ip into dir.  dir->lock write. */
static void dir_add_locked(struct inode *dir, struct dentry *d, struct inode *ip)
{
	KASSERT(lock_write_held(&dir->lock));
	d->dir = dir;
	d->ip = ip;
	d->cookie = dir->u.dir.next_cookie++;
	d->hash = nc_hash(dir, d->name, d->namelen);
	d->dnext = NULL;
	d->dprev = dir->u.dir.last;
	if (dir->u.dir.last)
		dir->u.dir.last->dnext = d;
	else
		dir->u.dir.first = d;
	dir->u.dir.last = d;
	struct nc_bucket *b = nc_bucket(d->hash);
	simple_lock(&b->lock);
	d->hnext = b->head;
	b->head = d;
	simple_unlock(&b->lock);
	struct timespec64 t = now();
	simple_lock(&dir->meta);
	dir->u.dir.nent++;
	if (S_ISDIR(ip->mode))
		dir->nlink++;
	dir->mtime = dir->ctime = t;
	simple_unlock(&dir->meta);
	if (S_ISDIR(ip->mode)) {
		simple_lock(&ip->meta);
		ip->u.dir.parent = dir;
		simple_unlock(&ip->meta);
		ip->u.dir.self = d;
	}
	fetch_and_add(&nc_entries, 1);
}

/* Unlink d from its directory (lock write) and free it; the inode keeps
 * its nlink (the caller drops it). */
static void dir_remove_locked(struct dentry *d)
{
	struct inode *dir = d->dir;
	KASSERT(lock_write_held(&dir->lock));
	struct nc_bucket *b = nc_bucket(d->hash);
	simple_lock(&b->lock);
	struct dentry **pp = &b->head;
	while (*pp != d)
		pp = &(*pp)->hnext;
	*pp = d->hnext;
	simple_unlock(&b->lock);
	if (d->dprev)
		d->dprev->dnext = d->dnext;
	else
		dir->u.dir.first = d->dnext;
	if (d->dnext)
		d->dnext->dprev = d->dprev;
	else
		dir->u.dir.last = d->dprev;
	struct timespec64 t = now();
	simple_lock(&dir->meta);
	dir->u.dir.nent--;
	if (S_ISDIR(d->ip->mode))
		dir->nlink--;
	dir->mtime = dir->ctime = t;
	simple_unlock(&dir->meta);
	fetch_and_add(&nc_entries, -1UL);
	kfree(d);
}

void ncache_stats(struct ncache_stats *st)
{
	st->entries = nc_entries;
	st->hits = nc_hits;
	st->misses = nc_misses;
}

int vfs_lookup_child(struct inode *dir, const char *name, size_t len, struct inode **out)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (dir->ops) {
		if (!dir->ops->lookup)
			return -ENOENT;
		return dir->ops->lookup(dir, name, len, out);
	}
	uint32_t h = nc_hash(dir, name, len);
	struct nc_bucket *b = nc_bucket(h);
	simple_lock(&b->lock);
	struct dentry *d = nc_find_locked(b, h, dir, name, len);
	if (d)
		vnode_ref(d->ip);
	simple_unlock(&b->lock);
	if (!d) {
		nc_misses++;
		return -ENOENT;
	}
	nc_hits++;
	*out = d->ip;
	return 0;
}

/* ---- mounts ---- */

static struct complex_lock ns_lock;        /* class vfs_ns */
static struct fs_type *fstypes;            /* (n) */
static struct superblock *root_sb;         /* [I] after vfs_init */
static struct superblock *mounts;          /* (n) every mounted file system (ustat) */
static volatile uint32_t next_dev = 1;     /* [a] */
static volatile uint32_t vfs_state;        /* [a] 0, 1 starting, 2 ready */

/* ---- file system types: sysfs(2), /proc/filesystems ---- */

/* /proc/filesystems: every type, in the order sysfs(2) numbers them; all
 * are "nodev" (none needs a block device). */
void vfs_filesystems_format(struct sbuf *out)
{
	lock_read(&ns_lock);
	for (struct fs_type *t = fstypes; t; t = t->next)
		sbuf_printf(out, "nodev\t%s\n", t->name);
	lock_done(&ns_lock);
}

/* sysfs option 1: the index of the type named name, or -EINVAL. */
static int fstype_index(const char *name)
{
	int i = 0, r = -EINVAL;
	lock_read(&ns_lock);
	for (struct fs_type *t = fstypes; t; t = t->next, i++) {
		if (!strcmp(t->name, name)) {
			r = i;
			break;
		}
	}
	lock_done(&ns_lock);
	return r;
}

/* sysfs option 2: the name of type idx into buf (n bytes): 0 or -EINVAL. */
static int fstype_name(uint64_t idx, char *buf, size_t n)
{
	int r = -EINVAL;
	uint64_t i = 0;
	lock_read(&ns_lock);
	for (struct fs_type *t = fstypes; t; t = t->next, i++) {
		if (i == idx) {
			ksnprintf(buf, n, "%s", t->name);
			r = 0;
			break;
		}
	}
	lock_done(&ns_lock);
	return r;
}

static int fstype_count(void)
{
	int i = 0;
	lock_read(&ns_lock);
	for (struct fs_type *t = fstypes; t; t = t->next)
		i++;
	lock_done(&ns_lock);
	return i;
}

/* sysfs(option, arg1, arg2): 1 name -> index, 2 index -> name, 3 count. */
SYSCALL(139, sysfs)
{
	char name[64];
	size_t len;
	int r;
	switch ((int)a0) {
	case 1:
		r = copyinstr(name, (const void *)a1, sizeof(name), &len);
		if (r == -ENAMETOOLONG)
			return -EINVAL;         /* longer than any type's name */
		return r ? r : fstype_index(name);
	case 2:
		r = fstype_name((uint32_t)a1, name, sizeof(name));
		if (r == 0 && copyout((void *)a2, name, strlen(name) + 1))
			r = -EFAULT;
		return r;
	case 3:
		return fstype_count();
	}
	return -EINVAL;
}

void vfs_register_fstype(struct fs_type *t)
{
	lock_write(&ns_lock);
	t->next = fstypes;
	fstypes = t;
	lock_done(&ns_lock);
}

static struct superblock *sb_new(struct fs_type *type)
{
	struct superblock *sb = kzalloc(sizeof(*sb));
	if (!sb)
		return NULL;
	sb->type = type;
	sb->next_ino = 1;
	sb->dev = fetch_and_add32(&next_dev, 1);
	return sb;
}

uint32_t vfs_anon_dev(void)
{
	return fetch_and_add32(&next_dev, 1);
}

static void sb_free(struct superblock *sb)
{
	kfree(sb);
}

/* "N", "Nk", "Nm", "Ng" (bytes) or "N%" (of RAM) as pages; false if bad. */
static bool parse_size(const char *v, size_t len, uint64_t *pages)
{
	uint64_t n = 0;
	size_t i = 0;
	for (; i < len && v[i] >= '0' && v[i] <= '9'; i++) {
		if (n > (UINT64_MAX - 9) / 10)
			return false;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	if (i == 0 || len - i > 1)
		return false;
	if (i < len && v[i] == '%') {
		if (n > 100000)
			return false;
		*pages = page_total_count() * n / 100;  /* Linux allows over 100 % */
		return true;
	}
	char unit = i < len ? (char)(v[i] | 0x20) : 0;
	int shift = unit == 'k' ? 10 : unit == 'm' ? 20 : unit == 'g' ? 30 : 0;
	if (unit && !shift)
		return false;
	if (n > (UINT64_MAX >> shift))
		return false;
	*pages = ALIGN_UP(n << shift, PAGE_SIZE) / PAGE_SIZE;   /* 0: no limit (Linux) */
	return true;
}

/*
 * Mount options (comma separated, Linux's tmpfs): size= (bytes with k/m/g,
 * or N% of RAM; default half of RAM; 0 no limit), mode= (octal, the root's), uid=, gid=
 * (the root's owner), nr_inodes= and nr_blocks= (accepted, not enforced);
 * anything else is EINVAL.
 */
static int tmpfs_options(struct superblock *sb, struct inode *root, const char *data)
{
	while (data && *data) {
		const char *end = strchr(data, ',');
		size_t len = end ? (size_t)(end - data) : strlen(data);
		const char *eq = NULL;
		for (size_t i = 0; i < len && !eq; i++)
			if (data[i] == '=')
				eq = data + i;
		size_t klen = eq ? (size_t)(eq - data) : len;
		const char *v = eq ? eq + 1 : "";
		size_t vlen = eq ? len - klen - 1 : 0;
		uint64_t num = 0;
		bool ok = vlen > 0;
		if (klen == 4 && !strncmp(data, "size", 4)) {
			ok = ok && parse_size(v, vlen, &sb->max_pages);
		} else if ((klen == 4 && !strncmp(data, "mode", 4)) ||
			   (klen == 3 && (!strncmp(data, "uid", 3) || !strncmp(data, "gid", 3))) ||
			   (klen == 9 && (!strncmp(data, "nr_inodes", 9) || !strncmp(data, "nr_blocks", 9)))) {
			int base = data[0] == 'm' ? 8 : 10;
			for (size_t i = 0; ok && i < vlen; i++) {
				int d = v[i] - '0';
				ok = d >= 0 && d < base && num < (1ULL << 40);
				num = num * (uint64_t)base + (uint64_t)d;
			}
			if (ok && data[0] == 'm')
				root->mode = S_IFDIR | (uint32_t)(num & 07777);
			else if (ok && data[0] == 'u')
				root->uid = (uint32_t)num;
			else if (ok && data[0] == 'g')
				root->gid = (uint32_t)num;
		} else {
			ok = false;
		}
		if (!ok)
			return -EINVAL;
		data = end ? end + 1 : NULL;
	}
	return 0;
}

static int tmpfs_fill(struct superblock *sb, const void *data)
{
	struct inode *root = vnode_alloc(sb, S_IFDIR | 01777);
	if (!root)
		return -ENOMEM;
	root->nlink = 2;
	sb->max_pages = page_total_count() / 2;
	int r = tmpfs_options(sb, root, data);
	if (r) {
		/* Never published and holds nothing: free it here, not through
		 * vnode_put (a directory with links is never freed there, and the
		 * caller frees sb). */
		fetch_and_add(&sb->ninodes, -1UL);
		kfree(root);
		return r;
	}
	sb->root = root;                 /* the superblock's reference */
	return 0;
}

static int devfs_fill(struct superblock *sb, const void *data)
{
	int r = tmpfs_fill(sb, data);
	if (r == 0) {
		sb->root->mode = S_IFDIR | 0755;
		devfs_populate(sb->root);
	}
	return r;
}

static struct fs_type tmpfs_type = { .name = "tmpfs", .fill = tmpfs_fill };
static struct fs_type devtmpfs_type = { .name = "devtmpfs", .fill = devfs_fill };
static struct fs_type devfs_type = { .name = "devfs", .fill = devfs_fill };
extern struct fs_type procfs_type;
extern struct fs_type sysfs_type;
extern struct fs_type mqueue_fs_type;

struct superblock *tmpfs_create(void)
{
	vfs_init();
	struct superblock *sb = sb_new(&tmpfs_type);
	if (!sb)
		return NULL;
	if (tmpfs_fill(sb, NULL) != 0) {
		kfree(sb);
		return NULL;
	}
	sb->root->mode = S_IFDIR | 0755;
	sb->max_pages = 0;               /* internal (memfd): no limit, as Linux's shm mount */
	return sb;
}

/*
 * Free every name of a tmpfs instance (iteratively: trees may be deep) and
 * the root's reference.  Inodes still referenced live on until their last
 * reference; the superblock goes with its last inode.
 */
void tmpfs_destroy(struct superblock *sb)
{
	struct inode *root = sb->root;
	struct inode *ip = root;
	lock_write(&ip->lock);
	for (;;) {
		struct dentry *d = ip->u.dir.first;
		if (d) {
			struct inode *child = d->ip;
			dir_remove_locked(d);
			if (S_ISDIR(child->mode) && !child->ops) {
				lock_done(&ip->lock);
				ip = child;            /* empty it first */
				lock_write(&ip->lock);
			} else {
				vnode_drop_link(child, false);
			}
			continue;
		}
		struct inode *parent = ip->u.dir.parent;
		lock_done(&ip->lock);
		if (ip == root)
			break;
		simple_lock(&ip->meta);
		ip->dead = true;
		simple_unlock(&ip->meta);
		vnode_drop_link(ip, true);
		ip = parent;
		lock_write(&ip->lock);
	}
	simple_lock(&root->meta);
	root->dead = true;
	root->nlink = 0;
	simple_unlock(&root->meta);
	sb->root = NULL;               /* the last inode frees sb */
	fetch_and_add(&sb->ninodes, 1);
	vnode_put(root);
	if (fetch_and_add(&sb->ninodes, -1UL) == 1)
		sb_free(sb);
}

/*
 * Mounts and mount namespaces.  A mount is a file system (superblock)
 * mounted on a directory in one mount namespace's table; CLONE_NEWNS copies
 * every mount of the caller's table, so one superblock can be mounted in
 * several namespaces (at the same place).  ip->mounted counts the mounts on
 * ip in every namespace (a hint: a walk that finds 0 looks no further);
 * sb->nmounts counts the mounts of sb: the last one's removal (umount, or
 * the namespace's end) destroys it.  Tables and mounts are under ns_lock
 * (class vfs_ns).  Propagation types (MS_SHARED, MS_SLAVE, ...) are recorded
 * but every mount behaves as private: a mount or umount is seen in its own
 * namespace only.
 */
struct mount {
	struct superblock *sb;          /* [I] */
	struct inode *covered;          /* (n) referenced; NULL: the namespace's root */
	struct mount *next;             /* (n) the table's list, newest first */
	uint64_t propagation;           /* (n) the MS_* type last set (mount(2)) */
	uint32_t flags;                 /* (n) MS_NOSUID | MS_NODEV | MS_NOEXEC: per-mount flags */
};

struct mnt_table {
	struct mount *mounts;           /* (n) its mounts, the root's included */
	struct mount *root;             /* (n) the root mount (covered NULL) */
};

static struct mount init_root_mount = { .propagation = MS_SHARED };   /* as before: "shared:1" */
static struct mnt_table init_mnt = { &init_root_mount, &init_root_mount };

struct mnt_table *vfs_mnt_table_init(void)
{
	return &init_mnt;
}

/* The caller's mount table, with a reference to its namespace in *ref
 * (ns_put when done, with no lock held). */
static struct mnt_table *cur_mnt(struct ns **ref)
{
	return ns_cur_mnt(ref);
}

/* The mount of t on dir, or NULL (ns_lock held). */
static struct mount *mount_on_locked(struct mnt_table *t, struct inode *dir)
{
	for (struct mount *m = t->mounts; m; m = m->next)
		if (m->covered == dir)
			return m;
	return NULL;
}

/* The mount of sb in t, or NULL (ns_lock held). */
static struct mount *mount_of_locked(struct mnt_table *t, struct superblock *sb)
{
	for (struct mount *m = t->mounts; m; m = m->next)
		if (m->sb == sb)
			return m;
	return NULL;
}

/* The directory the mount of ip's file system hides in t, if ip is the
 * root of a file system mounted there, else NULL (ns_lock held). */
static struct inode *covered_of_locked(struct mnt_table *t, struct inode *ip)
{
	if (ip != ip->sb->root)
		return NULL;
	struct mount *m = mount_of_locked(t, ip->sb);
	return m ? m->covered : NULL;
}

/* m leaves its table's list (ns_lock held): the directory it covered is
 * put in *covered (the caller puts it with ns_lock dropped); true if it
 * was sb's last mount (the caller destroys sb then). */
static bool mount_detach_locked(struct mnt_table *t, struct mount *m, struct inode **covered)
{
	for (struct mount **pp = &t->mounts; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	*covered = m->covered;
	if (m->covered)
		fetch_and_add32(&m->covered->mounted, -1u);
	struct superblock *sb = m->sb;
	if (--sb->nmounts)
		return false;
	for (struct superblock **pp = &mounts; *pp; pp = &(*pp)->next)
		if (*pp == sb) {
			*pp = sb->next;
			break;
		}
	return true;
}

/* A file system whose last mount went: names freed, gone with its last inode. */
static void sb_destroy(struct superblock *sb)
{
	inotify_umount(sb);
	tmpfs_destroy(sb);
}

struct mnt_table *vfs_mnt_table_copy(struct mnt_table *from)
{
	struct mnt_table *t = kzalloc(sizeof(*t));
	if (!t)
		return NULL;
	lock_write(&ns_lock);
	struct mount **tail = &t->mounts;
	bool failed = false;
	for (struct mount *m = from->mounts; m && !failed; m = m->next) {
		struct mount *c = kmalloc(sizeof(*c), 0);
		if (!c) {
			failed = true;
			break;
		}
		*c = *m;
		c->next = NULL;
		*tail = c;
		tail = &c->next;
		if (c->covered) {
			vnode_ref(c->covered);
			fetch_and_add32(&c->covered->mounted, 1);
		}
		c->sb->nmounts++;
		if (m == from->root)
			t->root = c;
	}
	lock_done(&ns_lock);
	if (failed) {
		vfs_mnt_table_free(t);      /* nothing in it is sb's last mount */
		return NULL;
	}
	return t;
}

void vfs_mnt_table_free(struct mnt_table *t)
{
	KASSERT(t != &init_mnt);
	while (t->mounts) {
		struct inode *covered;
		lock_write(&ns_lock);
		struct mount *m = t->mounts;
		bool last = mount_detach_locked(t, m, &covered);
		lock_done(&ns_lock);
		if (last)
			sb_destroy(m->sb);
		vnode_put(covered);
		kfree(m);
	}
	kfree(t);
}

int vfs_mount_at(struct inode *dir, const char *type, const void *data)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	struct mount *m = kzalloc(sizeof(*m));
	lock_write(&ns_lock);
	struct fs_type *ft = fstypes;
	while (ft && strcmp(ft->name, type) != 0)
		ft = ft->next;
	int r = 0;
	struct superblock *sb = NULL;
	if (!ft)
		r = -ENODEV;
	else if (mount_on_locked(t, dir))
		r = -EBUSY;
	else if (!m || !(sb = sb_new(ft)))
		r = -ENOMEM;
	else if ((r = ft->fill(sb, data)) != 0)
		kfree(sb);
	if (r == 0) {
		vnode_ref(dir);
		m->sb = sb;
		m->covered = dir;
		m->propagation = MS_PRIVATE;
		m->next = t->mounts;
		t->mounts = m;
		sb->nmounts = 1;
		sb->next = mounts;
		mounts = sb;
		fetch_and_add32(&dir->mounted, 1);
	}
	lock_done(&ns_lock);
	ns_put(ref);
	if (r)
		kfree(m);
	return r;
}

int vfs_umount(struct inode *root)
{
	struct superblock *sb = root->sb;
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_write(&ns_lock);
	int r = 0;
	struct mount *m = sb->root == root ? mount_of_locked(t, sb) : NULL;
	if (!m || m == t->root)
		r = -EINVAL;
	else if (mount_on_locked(t, root) || (sb->nmounts == 1 && sb->active > 0))
		r = -EBUSY;
	struct inode *covered = NULL;
	bool last = false;
	if (r == 0)
		last = mount_detach_locked(t, m, &covered);
	lock_done(&ns_lock);
	ns_put(ref);
	if (r == 0) {
		vnode_put(root);          /* the caller's */
		if (last)
			sb_destroy(sb);
		vnode_put(covered);
		kfree(m);
	}
	return r;
}

struct inode *vfs_mnt_root(struct mnt_table *t)
{
	lock_read(&ns_lock);
	struct inode *r = t->root->sb->root;
	vnode_ref(r);
	lock_done(&ns_lock);
	return r;
}

/* The root of what the caller's namespace mounts on dir, referenced, or NULL. */
struct inode *vfs_mounted_root(struct inode *dir)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_read(&ns_lock);
	struct mount *m = mount_on_locked(t, dir);
	struct inode *r = m ? m->sb->root : NULL;
	if (r)
		vnode_ref(r);
	lock_done(&ns_lock);
	ns_put(ref);
	return r;
}

/* Records propagation type prop (one MS_* type) on the mount whose root is
 * ip in the caller's namespace: 0, or -EINVAL if ip is not a mount's root. */
int vfs_mount_propagation(struct inode *ip, uint64_t prop)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_write(&ns_lock);
	struct mount *m = ip == ip->sb->root ? mount_of_locked(t, ip->sb) : NULL;
	if (m)
		m->propagation = prop;
	lock_done(&ns_lock);
	ns_put(ref);
	return m ? 0 : -EINVAL;
}

/* mount(MS_REMOUNT) of the mount whose root is ip in the caller's
 * namespace (and mount(2) of a new one): its per-mount flags become those
 * of MNT_FLAGS in flags, the others are cleared, as Linux.  0, or -EINVAL
 * if ip is not a mount's root. */
int vfs_mount_set_flags(struct inode *ip, uint64_t flags)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_write(&ns_lock);
	struct mount *m = ip == ip->sb->root ? mount_of_locked(t, ip->sb) : NULL;
	if (m) {
		m->flags = (uint32_t)(flags & MNT_FLAGS);
		WRITE_ONCE(ip->sb->rdonly, (flags & MS_RDONLY) != 0);
	}
	lock_done(&ns_lock);
	ns_put(ref);
	return m ? 0 : -EINVAL;
}

/* ip's file system's mount in the caller's namespace has per-mount flag f */
static bool mount_flag(struct inode *ip, uint32_t f)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_read(&ns_lock);
	struct mount *m = mount_of_locked(t, ip->sb);
	bool r = m && (m->flags & f);
	lock_done(&ns_lock);
	ns_put(ref);
	return r;
}

bool vfs_noexec(struct inode *ip)
{
	return mount_flag(ip, MS_NOEXEC);
}

bool vfs_nosuid(struct inode *ip)
{
	return mount_flag(ip, MS_NOSUID);
}

bool vfs_nodev(struct inode *ip)
{
	return mount_flag(ip, MS_NODEV);
}

/* Is to reached from from by going up (parents and mount points) in t? */
static bool reachable_locked(struct mnt_table *t, struct inode *from, struct inode *to)
{
	struct inode *ip = from;
	for (int steps = 0; steps < 4096; steps++) {
		if (ip == to)
			return true;
		if (ip == ip->sb->root) {
			struct inode *c = covered_of_locked(t, ip);
			if (!c)
				return false;
			ip = c;
			continue;
		}
		struct inode *p = ip->u.dir.parent;
		if (!p || p == ip)
			return false;
		ip = p;
	}
	return false;
}

/*
 * pivot_root(2) in the caller's mount namespace: new_root (the root of a
 * mount) becomes the namespace's root, the old root is mounted on put_old
 * (at or under new_root), and the caller's root and cwd move from the old
 * root to the new one.  Linux's checks: EBUSY if either is on the current
 * root's file system, EINVAL if the current root or new_root is not a
 * mount's root or put_old is not under new_root or new_root is not under
 * the root, ENOENT for a removed new_root.  Differences: other processes'
 * roots and cwds stay where they were, and the initial root (a tmpfs that
 * is not Linux's rootfs) may be pivoted.
 */
int vfs_pivot_root(struct inode *nr, struct inode *po, struct inode *cur_root)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_write(&ns_lock);
	struct mount *rootm = t->root, *nm = NULL;
	int r = 0;
	if (nr->dead)
		r = -ENOENT;
	else if (nr->sb == cur_root->sb || po->sb == cur_root->sb)
		r = -EBUSY;
	else if (cur_root != cur_root->sb->root || mount_of_locked(t, cur_root->sb) != rootm)
		r = -EINVAL;                  /* the root is not the namespace's root mount */
	else if (nr != nr->sb->root || !(nm = mount_of_locked(t, nr->sb)) || nm == rootm)
		r = -EINVAL;                  /* new_root is not a mount point */
	else if (!reachable_locked(t, po, nr) || !reachable_locked(t, nr, cur_root))
		r = -EINVAL;
	else if (mount_on_locked(t, po))
		r = -EBUSY;
	struct inode *old_covered = NULL;
	if (r == 0) {
		old_covered = nm->covered;
		fetch_and_add32(&old_covered->mounted, -1u);
		nm->covered = NULL;
		vnode_ref(po);
		rootm->covered = po;
		fetch_and_add32(&po->mounted, 1);
		t->root = nm;
	}
	lock_done(&ns_lock);
	ns_put(ref);
	vnode_put(old_covered);
	return r;
}

/* ---- the global tree ---- */


void vfs_init(void)
{
	if (__atomic_load_n(&vfs_state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!compare_and_swap32(&vfs_state, 0, 1)) {
		while (__atomic_load_n(&vfs_state, __ATOMIC_ACQUIRE) != 2)
			cpu_relax();
		return;
	}
	complex_lock_init(&ns_lock, LC_VFS_NS, 0);
	for (unsigned i = 0; i < NC_BUCKETS; i++)
		simple_lock_init(&nc_table[i].lock, LC_NCACHE);
	fstypes = &tmpfs_type;
	tmpfs_type.next = &devtmpfs_type;
	devtmpfs_type.next = &devfs_type;
	devfs_type.next = &procfs_type;        /* procfs.c */
	procfs_type.next = &sysfs_type;        /* sysfs.c */
	sysfs_type.next = &mqueue_fs_type;     /* ipc/mqueue.c */
	root_sb = sb_new(&tmpfs_type);
	if (!root_sb || tmpfs_fill(root_sb, NULL) != 0)
		panic("vfs: no memory for the root file system");
	root_sb->root->mode = S_IFDIR | 0755;
	init_root_mount.sb = root_sb;
	root_sb->nmounts = 1;
	__atomic_store_n(&vfs_state, 2, __ATOMIC_RELEASE);
	initramfs_populate(root_sb->root);
	/* /dev (devfs) and /tmp. */
	struct inode *root = root_sb->root, *ip = NULL;
	if (vfs_lookup_child(root, "dev", 3, &ip) != 0 &&
	    vfs_create(root, "dev", 3, S_IFDIR | 0755, 0, NULL, &ip) != 0)
		ip = NULL;
	if (ip) {
		if (vfs_mount_at(ip, "devtmpfs", NULL) != 0)
			kprintf("vfs: cannot mount /dev\n");
		vnode_put(ip);
	}
	ip = NULL;
	if (vfs_lookup_child(root, "tmp", 3, &ip) != 0)
		vfs_create(root, "tmp", 3, S_IFDIR | 01777, 0, NULL, NULL);
	else
		vnode_put(ip);
}

struct inode *vfs_root(void)
{
	vfs_init();
	return root_sb->root;
}

uint64_t vfs_dev(struct inode *ip)
{
	return ip->sb->dev;
}

/* ---- path walk ---- */

/* ".." of cur (referenced), crossing mount points upward; not above root. */
static int dotdot(struct inode *root, struct inode *cur, struct inode **out)
{
	if (cur != root && cur == cur->sb->root) {
		struct ns *ref;
		struct mnt_table *t = cur_mnt(&ref);
		lock_read(&ns_lock);
		struct inode *c;
		while (cur != root && (c = covered_of_locked(t, cur)) != NULL) {
			vnode_ref(c);
			vnode_put(cur);           /* still referenced: the mount's root */
			cur = c;
		}
		lock_done(&ns_lock);
		ns_put(ref);
	}
	if (cur == root) {
		*out = cur;
		return 0;
	}
	simple_lock(&cur->meta);
	struct inode *p = cur->u.dir.parent;
	bool dead = cur->dead;
	if (!dead)
		vnode_ref(p);
	simple_unlock(&cur->meta);
	vnode_put(cur);
	if (dead)
		return -ENOENT;
	*out = p;
	return 0;
}

/* Follow mounts down from ip (referenced). */
static struct inode *cross_mounts(struct inode *ip)
{
	if (!__atomic_load_n(&ip->mounted, __ATOMIC_ACQUIRE))
		return ip;
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	lock_read(&ns_lock);
	struct mount *m;
	while ((m = mount_on_locked(t, ip)) != NULL) {
		struct inode *r = m->sb->root;
		vnode_ref(r);
		vnode_put(ip);                /* still referenced: the mount's */
		ip = r;
	}
	lock_done(&ns_lock);
	ns_put(ref);
	return ip;
}

/* *ipp (referenced) is a magic link with magic_walk: it becomes the inode
 * it leads to (referenced; the link's reference dropped).  0 or -errno
 * (the link released either way). */
static int magic_walk(struct inode **ipp)
{
	struct inode *link = *ipp, *target = NULL;
	struct file *f = NULL;
	int r = link->ops->magic_target(link, &target, &f);
	vnode_put(link);
	if (r == 0 && !target && f && f->ip) {
		target = f->ip;
		vnode_ref(target);
	}
	file_unref(f);
	if (r == 0 && !target)
		r = -ENOENT;
	if (r > 0)
		r = -ENOENT;
	*ipp = r ? NULL : target;
	if (r)
		vnode_put(target);
	return r;
}

/* *ipp (referenced) is a magic link without magic_walk (/proc/PID/fd/N,
 * exe, cwd, root): if it leads to an open file's inode, the walk jumps
 * there as Linux's does (an O_PATH descriptor of a symbolic link reaches
 * the link itself, a deleted file its inode): 0 with *ipp that inode
 * (the link's reference dropped).  1 with *ipp unchanged if it is to be
 * followed as its text (a path, a pipe); -errno with the link released. */
static int magic_jump(struct inode **ipp)
{
	struct inode *link = *ipp, *target = NULL;
	struct file *f = NULL;
	int r = link->ops->magic_target(link, &target, &f);
	file_unref(f);
	if (r == 0 && target) {
		vnode_put(link);
		*ipp = target;
		return 0;
	}
	if (r < 0) {
		vnode_put(link);
		*ipp = NULL;
		return r;
	}
	return 1;
}

static ssize_t link_target(struct inode *ip, char *buf, size_t n)
{
	if (ip->ops)
		return ip->ops->readlink ? ip->ops->readlink(ip, buf, n) : -EINVAL;
	size_t k = MIN(n, ip->size);
	memcpy(buf, ip->u.lnk.target, k);
	return (ssize_t)k;
}

int vfs_lookup(struct inode *root, struct inode *start, const char *path, int flags,
	       struct lookup *lk)
{
	size_t len = strnlen(path, FS_PATH_MAX);
	if (len == 0)
		return -ENOENT;
	if (len >= FS_PATH_MAX)
		return -ENAMETOOLONG;
	char *buf = kmalloc(FS_PATH_MAX, 0);
	char *tbuf = kmalloc(FS_PATH_MAX, 0);
	if (!buf || !tbuf) {
		kfree(buf);
		kfree(tbuf);
		return -ENOMEM;
	}
	memcpy(buf, path, len + 1);
	int nlinks = 0, err = 0;
	char *p = buf;
	if (*p == '/' && (flags & LK_BENEATH)) {
		kfree(buf);
		kfree(tbuf);
		return -EXDEV;
	}
	if (*p == '/' && (flags & LK_NO_XDEV) && root->sb != start->sb) {
		kfree(buf);
		kfree(tbuf);
		return -EXDEV;
	}
	struct inode *cur = *p == '/' ? root : start;
	vnode_ref(cur);
	lk->trailing_slash = false;
	for (;;) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		char *s = p;
		while (*p && *p != '/')
			p++;
		size_t n = p - s;
		if (n > FS_NAME_MAX) {
			err = -ENAMETOOLONG;
			goto fail;
		}
		char *rest = p;
		while (*p == '/')
			p++;
		bool last = *p == '\0';
		bool trailing = last && rest != p;
		if (!S_ISDIR(cur->mode)) {
			err = -ENOTDIR;
			goto fail;
		}
		if (last && (flags & LK_PARENT)) {
			memcpy(lk->last, s, n);
			lk->last[n] = '\0';
			lk->lastlen = n;
			lk->trailing_slash = trailing;
			lk->ip = cur;
			kfree(buf);
			kfree(tbuf);
			return 0;
		}
		if ((err = vfs_permission(cur, MAY_EXEC)) != 0)
			goto fail;
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (cur == root && (flags & LK_BENEATH)) {
				err = -EXDEV;                /* would leave the anchor */
				goto fail;
			}
			struct superblock *from = cur->sb;
			if ((err = dotdot(root, cur, &cur)) != 0) {
				cur = NULL;
				goto fail;
			}
			if ((flags & LK_NO_XDEV) && cur->sb != from) {
				err = -EXDEV;
				goto fail;
			}
			continue;
		}
		struct inode *ip;
		if ((err = vfs_lookup_child(cur, s, n, &ip)) != 0)
			goto fail;
		ip = cross_mounts(ip);
		if ((flags & LK_NO_XDEV) && ip->sb != cur->sb) {
			vnode_put(ip);
			err = -EXDEV;
			goto fail;
		}
		bool stop_magic = last && !trailing && (flags & LK_STOP_MAGIC) && ip->ops &&
				  ip->ops->magic_target &&
				  !(flags & (LK_NO_MAGICLINKS | LK_NO_SYMLINKS));   /* ELOOP below */
		if (S_ISLNK(ip->mode) && (!last || trailing || !(flags & LK_NOFOLLOW)) && !stop_magic) {
			if ((flags & LK_NO_SYMLINKS) ||
			    ((flags & LK_NO_MAGICLINKS) && ip->ops && ip->ops->magic)) {
				vnode_put(ip);
				err = -ELOOP;
				goto fail;
			}
			if (++nlinks > FS_MAXSYMLINKS) {
				vnode_put(ip);
				err = -ELOOP;
				goto fail;
			}
			if (ip->ops && ip->ops->magic_walk) {
				if ((err = magic_walk(&ip)) != 0)
					goto fail;
				goto stepped;
			}
			if (ip->ops && ip->ops->magic_target) {
				int j = magic_jump(&ip);
				if (j < 0) {
					err = j;
					goto fail;
				}
				if (j == 0)
					goto stepped;
			}
			ssize_t tlen = link_target(ip, tbuf, FS_PATH_MAX);
			vnode_put(ip);
			size_t rlen = strlen(rest);
			if (tlen < 0) {
				err = (int)tlen;
				goto fail;
			}
			if (tlen == 0) {
				err = -ENOENT;
				goto fail;
			}
			if ((size_t)tlen + rlen >= FS_PATH_MAX) {
				err = -ENAMETOOLONG;
				goto fail;
			}
			memmove(buf + tlen, rest, rlen + 1);
			memcpy(buf, tbuf, tlen);
			p = buf;
			if (*p == '/' && (flags & (LK_BENEATH | LK_NO_XDEV)) &&
			    ((flags & LK_BENEATH) || root->sb != cur->sb)) {
				err = -EXDEV;                /* an absolute link */
				goto fail;
			}
			if (*p == '/') {
				vnode_put(cur);
				cur = root;
				vnode_ref(cur);
			}
			continue;
		}
stepped:
		vnode_put(cur);
		cur = ip;
		if (trailing && !S_ISDIR(cur->mode)) {
			err = -ENOTDIR;
			goto fail;
		}
	}
	kfree(buf);
	kfree(tbuf);
	if (flags & LK_PARENT) {
		lk->last[0] = '\0';
		lk->lastlen = 0;
		lk->ip = cur;
		return 0;
	}
	if ((flags & LK_DIRECTORY) && !S_ISDIR(cur->mode)) {
		vnode_put(cur);
		return -ENOTDIR;
	}
	lk->ip = cur;
	return 0;
fail:
	vnode_put(cur);
	kfree(buf);
	kfree(tbuf);
	return err;
}

/* ---- directory operations ---- */

static bool is_dot(const char *name, size_t len)
{
	return (len == 1 && name[0] == '.') || (len == 2 && name[0] == '.' && name[1] == '.');
}

/*
 * A change of the names of dir, a directory of a synthetic file system
 * (proc, sys: ip->ops), which cannot change: Linux's errors, in its order.
 * Creating (op SR_CREATE, mode the new file's type): an existing name is
 * EEXIST.  Removing or renaming (SR_UNLINK, SR_RMDIR, SR_RENAME): a missing
 * one ENOENT, the wrong type EISDIR/ENOTDIR.  Then EACCES if the caller
 * may not write dir, else EPERM (Linux: the directory has no mkdir, mknod,
 * symlink, link, unlink, rmdir or rename operation), but EACCES to create
 * a regular file (no create: open with O_CREAT, mknod S_IFREG).
 */
enum { SR_CREATE, SR_UNLINK, SR_RMDIR, SR_RENAME };

static int synth_dir_refuse(struct inode *dir, const char *name, size_t len, int op,
			    uint32_t mode)
{
	struct inode *ip = NULL;
	int r = vfs_lookup_child(dir, name, len, &ip);
	if (r && r != -ENOENT)
		return r;
	bool exists = r == 0;
	uint32_t type = exists ? ip->mode : 0;
	vnode_put(ip);
	if (op == SR_CREATE && exists)
		return -EEXIST;
	if (op != SR_CREATE && !exists)
		return -ENOENT;
	if (op == SR_UNLINK && S_ISDIR(type))
		return -EISDIR;
	if (op == SR_RMDIR && !S_ISDIR(type))
		return -ENOTDIR;
	r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
	if (r)
		return r;
	return op == SR_CREATE && S_ISREG(mode) ? -EACCES : -EPERM;
}

int vfs_create(struct inode *dir, const char *name, size_t len, uint32_t mode, uint32_t rdev,
	       const char *target, struct inode **out)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (len == 0 || is_dot(name, len))
		return -EEXIST;
	if (len > FS_NAME_MAX)
		return -ENAMETOOLONG;
	if (dir->ops)
		return synth_dir_refuse(dir, name, len, SR_CREATE, mode);
	int r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
	if (r)
		return r;
	if ((S_ISCHR(mode) || S_ISBLK(mode)) && !vfs_capable(CAP_MKNOD))
		return -EPERM;                  /* device nodes: CAP_MKNOD */
	struct inode *ip = vnode_alloc(dir->sb, mode);
	struct dentry *d = dentry_alloc(name, len);
	if (!ip || !d)
		goto nomem;
	ip->rdev = rdev;
	if (READ_ONCE(dir->mode) & 02000) {
		/* a set-group-id directory: its group, and for a directory the
		 * bit too (Linux, BSD semantics) */
		ip->gid = READ_ONCE(dir->gid);
		if (S_ISDIR(mode))
			ip->mode |= 02000;
		else if ((mode & 02010) == 02010 && !vfs_in_group(ip->gid, false) &&
			 !vfs_capable(CAP_FSETID))
			ip->mode &= ~02000u;    /* Linux inode_init_owner */
	}
	if (S_ISLNK(mode)) {
		size_t tl = strlen(target);
		ip->u.lnk.target = kmalloc(tl + 1, 0);
		if (!ip->u.lnk.target)
			goto nomem;
		memcpy(ip->u.lnk.target, target, tl + 1);
		ip->size = tl;
	}
	ip->nlink = S_ISDIR(mode) ? 2 : 1;
	lock_write(&dir->lock);
	simple_lock(&dir->meta);
	bool dead = dir->dead;
	simple_unlock(&dir->meta);
	if (dead)
		r = -ENOENT;
	else if (dir_find(dir, name, len))
		r = -EEXIST;
	else
		dir_add_locked(dir, d, ip);
	lock_done(&dir->lock);
	if (r) {
		kfree(d);
		ip->nlink = 0;
		vnode_put(ip);
		return r;
	}
	inotify_dir(dir, IN_CREATE | inotify_isdir(ip), 0, name, len);
	if (out)
		*out = ip;
	else
		vnode_put(ip);
	return 0;
nomem:
	kfree(d);
	if (ip)
		vnode_put(ip);
	return -ENOMEM;
}

int vfs_unlink(struct inode *dir, const char *name, size_t len, bool rmdir)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (len == 0)
		return rmdir ? -EBUSY : -EISDIR;
	if (len == 1 && name[0] == '.')
		return rmdir ? -EINVAL : -EISDIR;
	if (len == 2 && name[0] == '.' && name[1] == '.')
		return rmdir ? -ENOTEMPTY : -EISDIR;
	if (dir->ops && !rmdir && dir->ops->unlink) {
		int r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
		return r ? r : dir->ops->unlink(dir, name, len);
	}
	if (dir->ops)
		return synth_dir_refuse(dir, name, len, rmdir ? SR_RMDIR : SR_UNLINK, 0);
	int r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
	if (r)
		return r;
	lock_write(&dir->lock);
	struct dentry *d = dir_find(dir, name, len);
	struct inode *ip = d ? d->ip : NULL;
	if (!d) {
		r = -ENOENT;
	} else if ((r = vfs_sticky_ok(dir, ip)) != 0) {
		/* a sticky directory: not ours to remove */
	} else if (rmdir) {
		if (!S_ISDIR(ip->mode)) {
			r = -ENOTDIR;
		} else if (ip->mounted) {
			r = -EBUSY;
		} else {
			simple_lock(&ip->meta);
			if (ip->u.dir.nent)
				r = -ENOTEMPTY;
			else
				ip->dead = true;
			simple_unlock(&ip->meta);
		}
	} else if (S_ISDIR(ip->mode)) {
		r = -EISDIR;
	}
	if (r == 0)
		dir_remove_locked(d);
	lock_done(&dir->lock);
	if (r == 0) {
		uint32_t isdir = inotify_isdir(ip);
		if (!rmdir)
			inotify_inode(ip, IN_ATTRIB);    /* its link count */
		vnode_drop_link(ip, rmdir);          /* may free it */
		inotify_dir(dir, IN_DELETE | isdir, 0, name, len);
	}
	return r;
}

int vfs_link(struct inode *ip, struct inode *dir, const char *name, size_t len)
{
	if (!S_ISDIR(dir->mode))
		return -ENOTDIR;
	if (S_ISDIR(ip->mode))
		return -EPERM;
	if (ip->sb != dir->sb)
		return -EXDEV;
	if (len == 0 || is_dot(name, len))
		return -EEXIST;
	if (dir->ops)
		return synth_dir_refuse(dir, name, len, SR_CREATE, S_IFLNK);   /* a new name */
	int r = vfs_permission(dir, MAY_WRITE | MAY_EXEC);
	if (r)
		return r;
	struct dentry *d = dentry_alloc(name, len);
	if (!d)
		return -ENOMEM;
	lock_write(&dir->lock);
	simple_lock(&dir->meta);
	bool dead = dir->dead;
	simple_unlock(&dir->meta);
	if (dead) {
		r = -ENOENT;
	} else if (dir_find(dir, name, len)) {
		r = -EEXIST;
	} else {
		simple_lock(&ip->meta);
		if (ip->nlink == 0 && !ip->linkable) {
			r = -ENOENT;
		} else {
			ip->nlink++;
			ip->linkable = false;        /* an O_TMPFILE file gets its name */
			ip->ctime = now();
		}
		simple_unlock(&ip->meta);
		if (r == 0)
			dir_add_locked(dir, d, ip);
	}
	lock_done(&dir->lock);
	if (r) {
		kfree(d);
		return r;
	}
	inotify_inode(ip, IN_ATTRIB);
	inotify_dir(dir, IN_CREATE, 0, name, len);
	return 0;
}

/* inotify events of a rename done (no lock held; src, victim and other
 * still alive: the victim's link is dropped after): src moved from
 * odir/oname to ndir/nname, replacing victim; an exchange moved other back. */
static void rename_notify(struct inode *odir, const char *oname, size_t olen,
			  struct inode *ndir, const char *nname, size_t nlen,
			  struct inode *src, struct inode *victim, struct inode *other)
{
	if (!READ_ONCE(odir->inotify) && !READ_ONCE(ndir->inotify) &&
	    !READ_ONCE(src->inotify) && !(victim && READ_ONCE(victim->inotify)) &&
	    !(other && READ_ONCE(other->inotify)))
		return;
	uint32_t c = inotify_cookie();
	inotify_dir(odir, IN_MOVED_FROM | inotify_isdir(src), c, oname, olen);
	inotify_dir(ndir, IN_MOVED_TO | inotify_isdir(src), c, nname, nlen);
	if (victim)
		inotify_inode(victim, IN_ATTRIB);
	inotify_inode(src, IN_MOVE_SELF);
	if (other) {
		c = inotify_cookie();
		inotify_dir(ndir, IN_MOVED_FROM | inotify_isdir(other), c, nname, nlen);
		inotify_dir(odir, IN_MOVED_TO | inotify_isdir(other), c, oname, olen);
		inotify_inode(other, IN_MOVE_SELF);
	}
}

/* The second directory lock of a rename: by try-lock (same class). */
static void lock_second_dir(struct inode *dir)
{
	while (!lock_try_write(&dir->lock))
		sched_yield();
}

int vfs_rename(struct inode *odir, const char *oname, size_t olen,
	       struct inode *ndir, const char *nname, size_t nlen, int flags)
{
	if (!S_ISDIR(odir->mode) || !S_ISDIR(ndir->mode))
		return -ENOTDIR;
	if (olen == 0 || nlen == 0 || is_dot(oname, olen) || is_dot(nname, nlen))
		return olen == 0 || nlen == 0 ? -EBUSY : -EINVAL;
	if (flags & ~(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	if ((flags & RENAME_NOREPLACE) && (flags & RENAME_EXCHANGE))
		return -EINVAL;
	if (odir->sb != ndir->sb)
		return -EXDEV;
	if (odir->ops)
		return synth_dir_refuse(odir, oname, olen, SR_RENAME, 0);
	int r = vfs_permission(odir, MAY_WRITE | MAY_EXEC);
	if (r == 0)
		r = vfs_permission(ndir, MAY_WRITE | MAY_EXEC);
	if (r)
		return r;
	struct dentry *nd = dentry_alloc(nname, nlen);
	struct dentry *od2 = dentry_alloc(oname, olen);     /* for an exchange */
	if (!nd || !od2) {
		kfree(nd);
		kfree(od2);
		return -ENOMEM;
	}
	lock_write(&ns_lock);
	lock_write(&odir->lock);
	if (ndir != odir)
		lock_second_dir(ndir);
	struct dentry *od = dir_find(odir, oname, olen);
	struct dentry *tgt = dir_find(ndir, nname, nlen);
	struct inode *src = od ? od->ip : NULL, *victim = NULL, *exchanged = NULL;
	bool victim_dir = false, moved = false;
	if (!od) {
		r = -ENOENT;
		goto out;
	}
	if (ndir->dead) {
		r = -ENOENT;
		goto out;
	}
	/* A directory may not move below itself. */
	if (odir != ndir) {
		struct inode *x = ndir;
		for (;;) {
			if (x == src || (tgt && S_ISDIR(tgt->ip->mode) && (flags & RENAME_EXCHANGE) &&
					 x == tgt->ip)) {
				r = -EINVAL;
				goto out;
			}
			if (x == x->sb->root || x->u.dir.parent == x)
				break;
			x = x->u.dir.parent;
		}
		if (flags & RENAME_EXCHANGE && tgt && S_ISDIR(tgt->ip->mode)) {
			for (x = odir;; x = x->u.dir.parent) {
				if (x == tgt->ip) {
					r = -EINVAL;
					goto out;
				}
				if (x == x->sb->root || x->u.dir.parent == x)
					break;
			}
		}
	}
	if (S_ISDIR(src->mode) && src->mounted) {
		r = -EBUSY;
		goto out;
	}
	/* Sticky directories: the names moved out or replaced must be ours. */
	if ((r = vfs_sticky_ok(odir, src)) != 0 ||
	    (tgt && tgt->ip != src && (r = vfs_sticky_ok(ndir, tgt->ip)) != 0))
		goto out;
	if (flags & RENAME_EXCHANGE) {
		if (!tgt) {
			r = -ENOENT;
			goto out;
		}
		struct inode *other = tgt->ip;
		if (other == src)
			goto out;
		dir_remove_locked(od);
		dir_remove_locked(tgt);
		dir_add_locked(odir, od2, other);
		od2 = NULL;
		dir_add_locked(ndir, nd, src);
		nd = NULL;
		moved = true;
		exchanged = other;
		vnode_ref(src);                   /* for rename_notify */
		vnode_ref(other);
		goto out;
	}
	if (tgt) {
		victim = tgt->ip;
		if (flags & RENAME_NOREPLACE) {
			r = -EEXIST;
			goto out;
		}
		if (victim == src) {
			victim = NULL;
			goto out;                   /* two names of one file: nothing */
		}
		if (S_ISDIR(src->mode)) {
			if (!S_ISDIR(victim->mode)) {
				r = -ENOTDIR;
				goto out;
			}
			if (victim->mounted) {
				r = -EBUSY;
				goto out;
			}
			simple_lock(&victim->meta);
			if (victim->u.dir.nent)
				r = -ENOTEMPTY;
			else
				victim->dead = true;
			simple_unlock(&victim->meta);
			if (r)
				goto out;
			victim_dir = true;
		} else if (S_ISDIR(victim->mode)) {
			r = -EISDIR;
			goto out;
		}
		dir_remove_locked(tgt);
	}
	dir_remove_locked(od);
	dir_add_locked(ndir, nd, src);
	nd = NULL;
	vnode_touch(src, 4);
	moved = true;
	vnode_ref(src);                           /* for rename_notify */
out:
	if (ndir != odir)
		lock_done(&ndir->lock);
	lock_done(&odir->lock);
	lock_done(&ns_lock);
	if (r == 0 && moved) {
		rename_notify(odir, oname, olen, ndir, nname, nlen, src, victim, exchanged);
		vnode_put(src);
		vnode_put(exchanged);
	}
	if (r == 0 && victim)
		vnode_drop_link(victim, victim_dir);
	kfree(nd);
	kfree(od2);
	return r;
}

/* ---- reading directories, stat, getcwd ---- */

uint64_t vfs_readdir(struct inode *dir, uint64_t cookie,
		     int (*emit)(void *arg, const char *name, size_t len, uint64_t ino,
				 unsigned type, uint64_t next), void *arg)
{
	if (dir->ops)
		return dir->ops->readdir ? dir->ops->readdir(dir, cookie, emit, arg) : cookie;
	lock_read(&dir->lock);
	if (cookie == 0) {
		if (emit(arg, ".", 1, dir->ino, 4, 1))
			goto out;
		cookie = 1;
	}
	if (cookie == 1) {
		simple_lock(&dir->meta);
		struct inode *p = dir->u.dir.parent;
		simple_unlock(&dir->meta);
		if (emit(arg, "..", 2, p->ino, 4, 2))
			goto out;
		cookie = 2;
	}
	for (struct dentry *d = dir->u.dir.first; d; d = d->dnext) {
		if (d->cookie < cookie)
			continue;
		uint32_t m = d->ip->mode & S_IFMT;
		unsigned type = m >> 12;        /* DT_* == S_IFMT >> 12 */
		if (emit(arg, d->name, d->namelen, d->ip->ino, type, d->cookie + 1))
			break;
		cookie = d->cookie + 1;
	}
	if (cookie < dir->u.dir.next_cookie && !dir->u.dir.last)
		cookie = dir->u.dir.next_cookie;
out:
	lock_done(&dir->lock);
	return cookie;
}

void vfs_stat(struct inode *ip, struct fs_stat *st)
{
	simple_lock(&ip->meta);
	st->ino = ip->ino;
	st->mode = ip->mode;
	st->nlink = ip->nlink;
	st->uid = ip->uid;
	st->gid = ip->gid;
	st->rdev = ip->rdev;
	st->size = ip->size;
	st->blocks = ALIGN_UP(ip->size, 4096) / 512;
	st->mtime = ip->mtime.sec;
	st->mtime_ns = (uint32_t)ip->mtime.nsec;
	st->atime = ip->atime.sec;
	st->atime_ns = (uint32_t)ip->atime.nsec;
	st->ctime = ip->ctime.sec;
	st->ctime_ns = (uint32_t)ip->ctime.nsec;
	simple_unlock(&ip->meta);
	st->dev = ip->sb->dev;
	st->has_btime = !ip->ops;            /* tmpfs keeps it; proc does not */
	/* A synthetic inode (proc, sys) has no name to count (nlink 0: freed
	 * on its last reference); it shows Linux's counts. */
	if (ip->ops && st->nlink == 0)
		st->nlink = S_ISDIR(st->mode) ? 2 : 1;
	st->btime = ip->btime.sec;
	st->btime_ns = (uint32_t)ip->btime.nsec;
	if (S_ISDIR(st->mode))
		st->size = 4096, st->blocks = 8;
	else if (S_ISREG(st->mode) && !ip->ops)
		st->blocks = READ_ONCE(ip->u.reg.npages) * (PAGE_SIZE / 512);   /* Linux: held pages */
}

/* vfs_path_of in mount table t. */
static int path_of_in(struct mnt_table *t, struct inode *root, struct inode *dir, char *buf,
		      size_t n)
{
	if (n < 2)
		return -ERANGE;
	size_t pos = n - 1;
	buf[pos] = '\0';
	int r = 0;
	lock_read(&ns_lock);
	struct inode *ip = dir;
	if (ip->dead)
		r = -ENOENT;
	while (r == 0 && ip != root) {
		if (ip == ip->sb->root) {
			struct inode *c = covered_of_locked(t, ip);
			if (!c)
				break;              /* above the process root: stop at / */
			ip = c;
			continue;
		}
		struct dentry *d = ip->u.dir.self;
		if (!d) {
			r = -ENOENT;
			break;
		}
		if ((size_t)d->namelen + 1 > pos) {
			r = -ERANGE;
			break;
		}
		pos -= d->namelen;
		memcpy(buf + pos, d->name, d->namelen);
		buf[--pos] = '/';
		ip = d->dir;
	}
	lock_done(&ns_lock);
	if (r)
		return r;
	if (pos == n - 1)
		buf[--pos] = '/';
	size_t len = n - 1 - pos;
	memmove(buf, buf + pos, len + 1);
	return (int)len;
}

int vfs_path_of(struct inode *root, struct inode *dir, char *buf, size_t n)
{
	struct ns *ref;
	struct mnt_table *t = cur_mnt(&ref);
	int r = path_of_in(t, root, dir, buf, n);
	ns_put(ref);
	return r;
}

/* Lexically clean absolute path p in place: "//", "." and ".." go. */
static void path_clean(char *p)
{
	char *out = p;                        /* p[0] == '/' */
	const char *in = p;
	while (*in) {
		while (*in == '/')
			in++;
		const char *c = in;
		while (*in && *in != '/')
			in++;
		size_t len = (size_t)(in - c);
		if (len == 0 || (len == 1 && c[0] == '.'))
			continue;
		if (len == 2 && c[0] == '.' && c[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, c, len);
		out += len;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

char *vfs_abs_path(struct inode *root, struct inode *start, const char *path)
{
	char *buf = kmalloc(FS_PATH_MAX, 0);
	if (!buf)
		return NULL;
	size_t plen = strlen(path);
	int len = 0;
	if (path[0] != '/') {
		len = start ? vfs_path_of(root, start, buf, FS_PATH_MAX) : -ENOENT;
		if (len < 0 || (size_t)len + plen + 2 > FS_PATH_MAX) {
			kfree(buf);
			return NULL;
		}
	} else if (plen + 1 > FS_PATH_MAX) {
		kfree(buf);
		return NULL;
	}
	buf[len++] = '/';
	memcpy(buf + len, path, plen + 1);
	path_clean(buf);
	size_t n = strlen(buf) + 1;
	char *r = kmalloc(n, 0);            /* kept long: only its own size */
	if (r)
		memcpy(r, buf, n);
	kfree(buf);
	return r;
}

/* ---- the old interface (exec, the ELF loader, private trees) ---- */

/* Lends ip's reference to the calling process (see initramfs.h). */
static void lend(struct inode *ip)
{
	struct proc *p = curproc();
	struct fdtable *fdt = p ? p->fdt : NULL;
	if (!fdt) {
		vnode_put(ip);
		return;
	}
	simple_lock(&fdt->lock);
	struct inode *old = fdt->borrowed;
	fdt->borrowed = ip;
	simple_unlock(&fdt->lock);
	vnode_put(old);
}

void fs_lend(struct inode *ip)
{
	lend(ip);
}

int fs_lookup_at(struct inode *root, struct inode *cwd, const char *path, int flags,
		 struct inode **out)
{
	struct lookup lk;
	int r = vfs_lookup(root, cwd ? cwd : root, path,
			   (flags & FS_NOFOLLOW) ? LK_NOFOLLOW : 0, &lk);
	if (r)
		return r;
	*out = lk.ip;
	lend(lk.ip);
	return 0;
}

int fs_lookup(struct inode *cwd, const char *path, int flags, struct inode **out)
{
	struct inode *root = vfs_root();
	struct proc *p = curproc();
	if (cwd == NULL && p && p->fs) {
		struct inode *c = cwd_get(), *rt = root_get();
		int r = fs_lookup_at(rt, c, path, flags, out);
		vnode_put(c);
		vnode_put(rt);
		return r;
	}
	return fs_lookup_at(root, cwd, path, flags, out);
}

ssize_t fs_read(struct inode *ip, void *buf, size_t n, uint64_t off)
{
	if (S_ISDIR(ip->mode))
		return -EISDIR;
	if (!S_ISREG(ip->mode))
		return -EINVAL;
	return vfs_read_kernel(ip, buf, n, off);
}

ssize_t fs_readlink(struct inode *ip, char *buf, size_t n)
{
	if (!S_ISLNK(ip->mode))
		return -EINVAL;
	return link_target(ip, buf, n);
}

void fs_stat(struct inode *ip, struct fs_stat *st)
{
	vfs_stat(ip, st);
}

struct inode *fs_root(void)
{
	return vfs_root();
}

void initramfs_init(void)
{
	vfs_init();
}

struct inode *fs_tree_create(void)
{
	struct superblock *sb = tmpfs_create();
	return sb ? sb->root : NULL;
}

void fs_tree_free(struct inode *root)
{
	KASSERT(root->sb != root_sb);
	tmpfs_destroy(root->sb);
}

int initramfs_load(const void *buf, size_t len)
{
	return initramfs_load_tree(vfs_root(), buf, len, NULL);
}

/* The mounts of process pid's namespace (0: the caller's), oldest first,
 * into list (at most max; the directories referenced, NULL for the root);
 * the count, or -ESRCH.  *rootip: the namespace's root, referenced. */
struct mnt_line {
	const char *type;                   /* fs_type names are static */
	struct inode *covered;
	uint32_t dev, pdev;
	uint64_t propagation;
	uint32_t flags;
};

static int mount_lines(int pid, struct mnt_line *list, int max, struct mnt_table **tp,
		       struct ns **ref, struct inode **rootip)
{
	struct mnt_table *t = pid ? ns_pid_mnt(pid, ref) : cur_mnt(ref);
	if (!t)
		return -ESRCH;
	*tp = t;
	int n = 0;
	lock_read(&ns_lock);
	for (struct mount *m = t->mounts; m; m = m->next)
		n++;
	int skip = n > max ? n - max : 0, i = 0;
	n = 0;
	for (struct mount *m = t->mounts; m; m = m->next, i++) {
		if (i < skip)
			continue;
		struct mnt_line *l = &list[n++];
		l->type = m->sb->type->name;
		l->covered = m->covered;
		l->dev = m->sb->dev;
		l->pdev = m->covered ? m->covered->sb->dev : 0;
		l->propagation = m->propagation;
		l->flags = m->flags;
		if (m->covered)
			vnode_ref(m->covered);
	}
	*rootip = t->root->sb->root;
	vnode_ref(*rootip);
	lock_done(&ns_lock);
	for (int a = 0, b = n - 1; a < b; a++, b--) {      /* oldest first */
		struct mnt_line x = list[a];
		list[a] = list[b];
		list[b] = x;
	}
	return n;
}

#define MS_SHARED_FLAG 0x100000

/* The mount options Linux shows for per-mount flags f:
 * "rw|ro[,nosuid][,nodev][,noexec]" */
static const char *mnt_opts(uint32_t f)
{
	static const char *const o[16] = { "rw", "ro", "rw,nosuid", "ro,nosuid", "rw,nodev",
		"ro,nodev", "rw,nosuid,nodev", "ro,nosuid,nodev", "rw,noexec", "ro,noexec",
		"rw,nosuid,noexec", "ro,nosuid,noexec", "rw,nodev,noexec", "ro,nodev,noexec",
		"rw,nosuid,nodev,noexec", "ro,nosuid,nodev,noexec" };
	return o[f & 15];
}

/* /proc/PID/mountinfo: one line per mount of the process's namespace, root
 * first: mount id, parent id, major:minor, root, mount point, options,
 * optional fields ("shared:N" for a mount made shared), "-", type, source,
 * super options.  Ids are 20 + the file system's device. */
void vfs_mountinfo_format(struct sbuf *out, int pid)
{
	struct mnt_line list[32];
	struct mnt_table *t;
	struct ns *ref;
	struct inode *root;
	int n = mount_lines(pid, list, 32, &t, &ref, &root);
	if (n < 0)
		return;
	char *path = kmalloc(FS_PATH_MAX, 0);
	for (int i = 0; i < n; i++) {
		struct mnt_line *l = &list[i];
		const char *src = l->covered || l->dev != root_sb->dev ? l->type : "rootfs";
		char shared[24] = "";
		if (l->propagation == MS_SHARED_FLAG)
			ksnprintf(shared, sizeof(shared), " shared:%u", l->dev);
		if (!l->covered)
			sbuf_printf(out, "%u 1 0:%u / / %s,relatime%s - %s %s %s\n", 20 + l->dev, l->dev,
				    mnt_opts(l->flags), shared, l->type, src,
				    l->flags & MS_RDONLY ? "ro" : "rw");
		else if (path && path_of_in(t, root, l->covered, path, FS_PATH_MAX) >= 0)
			sbuf_printf(out, "%u %u 0:%u / %s %s,relatime%s - %s %s %s\n", 20 + l->dev,
				    20 + l->pdev, l->dev, path, mnt_opts(l->flags), shared, l->type, src,
				    l->flags & MS_RDONLY ? "ro" : "rw");
		vnode_put(l->covered);
	}
	kfree(path);
	vnode_put(root);
	ns_put(ref);
}

/* /proc/mounts: one line per mounted file system, root first (fstab format). */
/* ustat(2): the free blocks (pages) and inodes of the mounted file system
 * whose st_dev is dev, counted as statfs counts them; -EINVAL if no file
 * system mounted has that device. */
int vfs_ustat(uint32_t dev, uint64_t *bfree, uint64_t *ffree)
{
	int r = -EINVAL;
	lock_read(&ns_lock);
	struct superblock *sb = root_sb && root_sb->dev == dev ? root_sb : mounts;
	for (; sb; sb = sb->next) {
		if (sb->dev != dev)
			continue;
		uint64_t max = READ_ONCE(sb->max_pages), used = READ_ONCE(sb->data_pages);
		*bfree = max ? (used < max ? max - used : 0) : page_free_count();
		*ffree = VFS_STATFS_FILES - READ_ONCE(sb->ninodes);
		r = 0;
		break;
	}
	lock_done(&ns_lock);
	return r;
}

void vfs_mounts_format(struct sbuf *out, int pid)
{
	struct mnt_line list[32];
	struct mnt_table *t;
	struct ns *ref;
	struct inode *root;
	int n = mount_lines(pid, list, 32, &t, &ref, &root);
	if (n < 0)
		return;
	char *path = kmalloc(FS_PATH_MAX, 0);
	for (int i = 0; i < n; i++) {
		struct mnt_line *l = &list[i];
		if (!l->covered)
			sbuf_printf(out, "%s / %s %s 0 0\n",
				    l->dev == root_sb->dev ? "rootfs" : l->type, l->type, mnt_opts(l->flags));
		else if (path && path_of_in(t, root, l->covered, path, FS_PATH_MAX) >= 0)
			sbuf_printf(out, "%s %s %s %s 0 0\n", l->type, path, l->type, mnt_opts(l->flags));
		vnode_put(l->covered);
	}
	kfree(path);
	vnode_put(root);
	ns_put(ref);
}
