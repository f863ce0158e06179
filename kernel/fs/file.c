/*
 * Open files and descriptor tables (file.h).
 */
#include "kernel.h"
#include "atomic.h"
#include "errno.h"
#include "poll.h"
#include "file.h"
#include "inotify.h"
#include "pipe.h"
#include "flock.h"
#include "tty.h"
#include "kmem.h"
#include "proc.h"
#include "signal.h"
#include "sysctl.h"
#include "usercopy.h"
#include "vfs.h"

/* ---- open files ---- */

struct file *file_alloc(const struct file_ops *fops, int flags)
{
	struct file *f = kzalloc(sizeof(*f));
	if (!f)
		return NULL;
	f->refcnt = 1;
	complex_lock_init(&f->poslock, LC_FILE_POS, 0);
	f->fops = fops;
	f->flags = flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_CLOEXEC);
	int acc = flags & O_ACCMODE;
	f->fmode = (flags & O_PATH) ? 0 :
		   acc == O_RDONLY ? FMODE_READ : acc == O_WRONLY ? FMODE_WRITE :
		   acc == O_RDWR ? FMODE_READ | FMODE_WRITE : 0;
	return f;
}

void file_ref(struct file *f)
{
	fetch_and_add(&f->refcnt, 1);
}

bool file_ref_live(struct file *f)
{
	for (;;) {
		uint64_t c = READ_ONCE(f->refcnt);
		if (c == 0)
			return false;
		if (compare_and_swap(&f->refcnt, c, c + 1))
			return true;
	}
}

void file_unref(struct file *f)
{
	if (!f)
		return;
	void (*hint)(void) = f->fops ? f->fops->unref_hint : NULL;
	if (fetch_and_add(&f->refcnt, -1UL) != 1) {
		if (hint)
			hint();
		return;
	}
	if (READ_ONCE(f->epitems))
		epoll_file_release(f);
	if (f->ip)
		flock_file_release(f);
	if (f->ip && !(f->flags & O_PATH))
		inotify_file(f, f->ip, (f->fmode & FMODE_WRITE) ? IN_CLOSE_WRITE : IN_CLOSE_NOWRITE);
	if (f->fops && f->fops->release)
		f->fops->release(f);
	if (f->ip) {
		if (!(f->flags & O_PATH)) {
			fetch_and_add32(&f->ip->nopen, -1u);
			if (f->fmode & FMODE_WRITE)
				fetch_and_add32(&f->ip->nwrite, -1u);
		}
		fetch_and_add(&f->ip->sb->active, -1UL);
		vnode_put(f->ip);
	}
	kfree(f->path);
	kfree(f);
}

int file_path_of(struct file *f, char *buf, size_t n)
{
	int len;
	if (f->path)
		len = ksnprintf(buf, n, "%s%s", f->path,
				f->ip && READ_ONCE(f->ip->nlink) == 0 ? " (deleted)" : "");
	else if (f->fops && f->fops->anon_name)
		len = ksnprintf(buf, n, "anon_inode:%s", f->fops->anon_name);
	else if (f->fops == &tty_fops && f->priv == &console_tty)
		len = ksnprintf(buf, n, "/dev/console");
	else if (f->ip && S_ISDIR(f->ip->mode) && (len = vfs_path_of(vfs_root(), f->ip, buf, n)) >= 0)
		return len;
	else if (f->ip)
		len = ksnprintf(buf, n, "/");
	else
		len = ksnprintf(buf, n, "pipe:[%llu]", (unsigned long long)((uint64_t)f->priv >> 6));
	return MIN(len, (int)n - 1);
}


uint64_t file_fsize_room(uint64_t pos)
{
	uint64_t lim = READ_ONCE(curproc()->rlim_cur[RLIMIT_FSIZE]);
	if (lim == RLIM_INF)
		return ~0ULL;
	return pos >= lim ? 0 : lim - pos;
}

int file_fsize_efbig(void)
{
	struct proc *cp = curproc();
	signal_send_proc(cp, SIGXFSZ, 0, cp->pid, 0);
	return -EFBIG;
}

/* Regular tmpfs files. */
static ssize_t reg_read(struct file *f, void *ubuf, size_t n, uint64_t *off)
{
	struct inode *ip = f->ip;
	if (ip->ops) {
		char *k = kmalloc(MIN(n, 65536), 0);
		if (!k)
			return -ENOMEM;
		ssize_t r = ip->ops->read ? ip->ops->read(ip, k, MIN(n, 65536), *off) : -EINVAL;
		if (r > 0 && copyout(ubuf, k, r) < 0)
			r = -EFAULT;
		kfree(k);
		if (r > 0)
			*off += r;
		return r;
	}
	lock_read(&ip->lock);
	ssize_t r = tmpfs_read_user(ip, ubuf, n, *off);
	lock_done(&ip->lock);
	if (r > 0)
		*off += r;
	return r;
}

static ssize_t reg_write(struct file *f, const void *ubuf, size_t n, uint64_t *off)
{
	struct inode *ip = f->ip;
	if (ip->ops) {
		char *k = kmalloc(MIN(n, 65536), 0);
		if (!k)
			return -ENOMEM;
		ssize_t r = copyin(k, ubuf, MIN(n, 65536)) < 0 ? -EFAULT :
			    ip->ops->write ? ip->ops->write(ip, k, MIN(n, 65536), *off) : -EINVAL;
		kfree(k);
		if (r > 0)
			*off += r;
		return r;
	}
	lock_write(&ip->lock);
	if (f->flags & O_APPEND)
		*off = ip->size;
	ssize_t r = vfs_seal_check_write(ip, *off, &n);
	uint64_t room = n ? file_fsize_room(*off) : 1;
	if (r == 0)
		r = room == 0 ? file_fsize_efbig() : tmpfs_write_user(ip, ubuf, MIN(n, room), *off);
	lock_done(&ip->lock);
	if (r > 0) {
		*off += r;
		vnode_touch(ip, 6);
		vfs_kill_suid(ip);
	}
	return r;
}

static int reg_poll(struct file *f __unused)
{
	return POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
}

static const struct file_ops reg_fops = {
	.read = reg_read, .write = reg_write, .poll = reg_poll, .poll_head = poll_head_none,
	.seekable = true,
};

static ssize_t dir_read(struct file *f __unused, void *ubuf __unused, size_t n __unused,
			uint64_t *off __unused)
{
	return -EISDIR;
}

static const struct file_ops dir_fops = {
	.read = dir_read, .poll = reg_poll, .poll_head = poll_head_none, .seekable = true,
};

static const struct file_ops path_fops = { .seekable = false };

int file_open_inode(struct inode *ip, int flags, struct file **out)
{
	uint32_t mode = ip->mode;
	const struct file_ops *fops = S_ISDIR(mode) ? &dir_fops : &reg_fops;
	if (flags & O_PATH)
		fops = &path_fops;
	else if (ip->ops && ip->ops->fops)
		fops = ip->ops->fops;
	if (!(flags & O_PATH) && ip->ops && ip->ops->open) {
		int r = ip->ops->open(ip, flags);
		if (r)
			return r;
	}
	struct file *f = file_alloc(fops, flags);
	if (!f)
		return -ENOMEM;
	vnode_ref(ip);
	fetch_and_add(&ip->sb->active, 1);
	f->ip = ip;
	if (!(flags & O_PATH)) {
		fetch_and_add32(&ip->nopen, 1);
		if (f->fmode & FMODE_WRITE)
			fetch_and_add32(&ip->nwrite, 1);
	}
	if (!(flags & O_PATH) && S_ISFIFO(mode) && !ip->ops) {
		int r = fifo_open(ip, f);
		if (r) {
			file_unref(f);
			return r;
		}
	} else if (!(flags & O_PATH) && (S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) ||
				  S_ISSOCK(mode))) {
		int r = S_ISCHR(mode) ? dev_open(ip, f) : -ENXIO;
		if (r) {
			f->fops = NULL;
			file_unref(f);
			return r;
		}
	}
	*out = f;
	return 0;
}

/* ---- descriptor tables ---- */

static struct fdtable *fdt_alloc(void)
{
	struct fdtable *t = kzalloc(sizeof(*t));
	if (!t)
		return NULL;
	simple_lock_init(&t->lock, LC_FDTABLE);
	t->refcnt = 1;
	t->size = FDT_INLINE;
	t->fd = t->fd_inline;
	t->cloexec = t->cloexec_inline;
	return t;
}

static void fdt_free_arrays(struct fdtable *t, struct file **fd, uint64_t *cloexec)
{
	if (fd != t->fd_inline)
		kfree(fd);
	if (cloexec != t->cloexec_inline)
		kfree(cloexec);
}

static void fdt_free(struct fdtable *t)
{
	fdt_free_arrays(t, t->fd, t->cloexec);
	kfree(t);
}

/* The slot count a table grows to for descriptor fd (>= FDT_INLINE, below
 * nr_open): doubling from 128 as Linux's alloc_fdtable, at most nr_open
 * rounded up to 64. */
static int fdt_grown_size(int fd, int nr_open)
{
	int64_t n = 128;
	while (n <= fd)
		n *= 2;
	int64_t cap = ((int64_t)nr_open + 63) & ~63LL;
	return (int)MIN(n, cap);
}

int fdt_expand_locked(struct fdtable *t, int fd)
{
	while (fd >= t->size) {
		int nr_open = READ_ONCE(sysctl_nr_open);
		if (fd >= nr_open)
			return -EMFILE;
		int n = fdt_grown_size(fd, nr_open);
		simple_unlock(&t->lock);
		struct file **nfd = kzalloc((size_t)n * sizeof(*nfd));
		uint64_t *ncl = nfd ? kzalloc((size_t)n / 8) : NULL;
		if (!ncl) {
			kfree(nfd);
			simple_lock(&t->lock);
			return -ENOMEM;
		}
		simple_lock(&t->lock);
		struct file **ofd = nfd;
		uint64_t *ocl = ncl;
		if (n > t->size) {       /* else another thread grew it meanwhile */
			memcpy(nfd, t->fd, (size_t)t->size * sizeof(*nfd));
			memcpy(ncl, t->cloexec, (size_t)t->size / 8);
			ofd = t->fd;
			ocl = t->cloexec;
			t->fd = nfd;
			t->cloexec = ncl;
			t->size = n;
		}
		simple_unlock(&t->lock);
		fdt_free_arrays(t, ofd, ocl);     /* nothing else can see them now */
		simple_lock(&t->lock);
	}
	return 0;
}

struct fdtable *fdtable_new(void)
{
	return fdt_alloc();
}

struct fdtable *fdtable_new_console(void)
{
	struct fdtable *t = fdt_alloc();
	if (!t)
		return NULL;
	struct file *f = console_file();
	if (!f) {
		kfree(t);
		return NULL;
	}
	for (int fd = 0; fd < 3; fd++) {
		file_ref(f);
		t->fd[fd] = f;
	}
	t->next_free = 3;
	t->end = 3;
	file_unref(f);
	return t;
}

/* A copy of the parent's table: its descriptors below end (the used part;
 * the copy's arrays are sized for that, allocated without the parent's
 * lock), close-on-exec bits and next_free. */
struct fdtable *fdtable_fork(struct fdtable *parent)
{
	struct fdtable *t = fdt_alloc();
	if (!t)
		return NULL;
	simple_lock(&parent->lock);
	while (parent->end > t->size) {
		int want = parent->end;
		simple_unlock(&parent->lock);
		int n = fdt_grown_size(want - 1, INT32_MAX);
		struct file **nfd = kzalloc((size_t)n * sizeof(*nfd));
		uint64_t *ncl = nfd ? kzalloc((size_t)n / 8) : NULL;
		if (!ncl) {
			kfree(nfd);
			fdt_free(t);
			return NULL;
		}
		fdt_free_arrays(t, t->fd, t->cloexec);   /* ours alone: no lock */
		t->fd = nfd;
		t->cloexec = ncl;
		t->size = n;
		simple_lock(&parent->lock);      /* end may have grown meanwhile */
	}
	int end = parent->end;
	for (int fd = 0; fd < end; fd++)
		if ((t->fd[fd] = parent->fd[fd])) {
			file_ref(t->fd[fd]);
			t->end = fd + 1;
		}
	/* Whole words: bits at or above end are clear (closed descriptors). */
	memcpy(t->cloexec, parent->cloexec, (size_t)(end + 63) / 64 * 8);
	t->next_free = parent->next_free;
	simple_unlock(&parent->lock);
	return t;
}

void fd_close_hooks(struct file *f, struct fdtable *t)
{
	flock_close(f, t);          /* the table's record locks on the file */
	dnotify_flush(f);           /* the file's dnotify watch */
}

void fdtable_close_all(struct fdtable *t)
{
	if (!t || fetch_and_add(&t->refcnt, -1UL) != 1)
		return;
	for (int fd = 0; fd < t->end; fd++) {    /* the last reference: no lock */
		struct file *f = t->fd[fd];
		t->fd[fd] = NULL;
		fd_close_hooks(f, t);
		file_unref(f);
	}
	vnode_put(t->borrowed);
	fdt_free(t);
}

/* ---- current and root directories, umask ---- */

static struct fs_info *fs_alloc(void)
{
	struct fs_info *fs = kzalloc(sizeof(*fs));
	if (!fs)
		return NULL;
	simple_lock_init(&fs->lock, LC_FS_INFO);
	fs->refcnt = 1;
	fs->umask = 022;
	return fs;
}

struct fs_info *fs_info_new_root(void)
{
	struct fs_info *fs = fs_alloc();
	if (!fs)
		return NULL;
	fs->root = vfs_root();
	vnode_ref(fs->root);
	fs->cwd = fs->root;
	vnode_ref(fs->cwd);
	fetch_and_add(&fs->cwd->sb->active, 1);
	return fs;
}

struct fs_info *fs_info_copy(struct fs_info *from)
{
	struct fs_info *fs = fs_alloc();
	if (!fs)
		return NULL;
	simple_lock(&from->lock);
	fs->cwd = from->cwd;
	fs->root = from->root;
	vnode_ref(fs->cwd);
	vnode_ref(fs->root);
	fetch_and_add(&fs->cwd->sb->active, 1);
	fs->umask = from->umask;
	simple_unlock(&from->lock);
	return fs;
}

void fs_info_ref(struct fs_info *fs)
{
	fetch_and_add(&fs->refcnt, 1);
}

void fs_info_unref(struct fs_info *fs)
{
	if (!fs || fetch_and_add(&fs->refcnt, -1UL) != 1)
		return;
	if (fs->cwd)
		fetch_and_add(&fs->cwd->sb->active, -1UL);
	vnode_put(fs->cwd);
	vnode_put(fs->root);
	kfree(fs);
}

void fs_info_move(struct inode *ip, struct inode *only_if)
{
	struct fs_info *fs = cur_fs();
	vnode_ref(ip);
	vnode_ref(ip);
	fetch_and_add(&ip->sb->active, 1);
	simple_lock(&fs->lock);
	struct inode *oroot = NULL, *ocwd = NULL;
	if (!only_if || fs->root == only_if) {
		oroot = fs->root;
		fs->root = ip;
	}
	if (!only_if || fs->cwd == only_if) {
		ocwd = fs->cwd;
		fs->cwd = ip;
	}
	simple_unlock(&fs->lock);
	if (!oroot)
		vnode_put(ip);
	if (ocwd)
		fetch_and_add(&ocwd->sb->active, -1UL);
	else {
		fetch_and_add(&ip->sb->active, -1UL);
		vnode_put(ip);
	}
	vnode_put(oroot);
	vnode_put(ocwd);
}

struct fs_info *cur_fs(void)
{
	return curproc()->fs;
}

void fdtable_exec(struct fdtable *t)
{
	simple_lock(&t->lock);
	for (int fd = 0; fd < t->end; fd++) {
		if (!(t->cloexec[fd / 64] & (1ULL << (fd % 64))))
			continue;
		struct file *f = t->fd[fd];
		t->fd[fd] = NULL;
		fdt_set_cloexec(t, fd, false);
		if (fd < t->next_free)
			t->next_free = fd;
		simple_unlock(&t->lock);
		fd_close_hooks(f, t);
		file_unref(f);
		simple_lock(&t->lock);
	}
	struct inode *b = t->borrowed;
	t->borrowed = NULL;
	simple_unlock(&t->lock);
	vnode_put(b);
}

struct fdtable *cur_fdt(void)
{
	return curproc()->fdt;
}

struct file *fd_get(int fd)
{
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	struct file *f = fdt_file(t, fd);
	if (f)
		file_ref(f);
	simple_unlock(&t->lock);
	return f;
}

void fd_get_many(const int *fds, size_t stride, size_t n, struct file **out, size_t ostride)
{
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	for (size_t i = 0; i < n; i++) {
		int fd = *(const int *)((const char *)fds + i * stride);
		struct file *f = fdt_file(t, fd);
		if (f)
			file_ref(f);
		*(struct file **)((char *)out + i * ostride) = f;
	}
	simple_unlock(&t->lock);
}

/* The descriptor limit: RLIMIT_NOFILE, at most fs/nr_open (which may have
 * been lowered below a limit set before). */
static int fd_limit(void)
{
	uint64_t l = curproc()->rlim_cur[RLIMIT_NOFILE];
	uint64_t nr = (uint64_t)READ_ONCE(sysctl_nr_open);
	return (int)MIN(l, nr);
}

/* Is a descriptor free (within the limit)?  For open(2), which like
 * Linux's (get_unused_fd_flags first) must fail with EMFILE before it
 * creates or truncates anything.  Another thread of a shared table may
 * still take the last one before fd_install (and growing the table may
 * still fail: ENOMEM then). */
bool fd_has_room(void)
{
	struct fdtable *t = cur_fdt();
	int lim = fd_limit();
	simple_lock(&t->lock);
	int fd = t->next_free;
	while (fd < lim && fd < t->size && t->fd[fd])
		fd++;
	simple_unlock(&t->lock);
	return fd < lim;
}

int fd_install(struct file *f, int min, bool cloexec)
{
	struct fdtable *t = cur_fdt();
	int lim = fd_limit();
	int r;
	simple_lock(&t->lock);
	for (;;) {
		/* Below next_free every descriptor is open: start there. */
		int fd = MAX(min, t->next_free);
		while (fd < lim && fd < t->size && t->fd[fd])
			fd++;
		if (fd >= lim) {
			r = -EMFILE;
			break;
		}
		if (fd < t->size) {
			t->fd[fd] = f;
			if (min <= t->next_free)
				t->next_free = fd + 1;   /* all of [next_free, fd] are open now */
			if (fd >= t->end)
				t->end = fd + 1;
			fdt_set_cloexec(t, fd, cloexec);
			simple_unlock(&t->lock);
			return fd;
		}
		/* Every slot from the start to the end of the table is open:
		 * grow it, then look again (the lock was dropped). */
		r = fdt_expand_locked(t, fd);
		if (r)
			break;
	}
	simple_unlock(&t->lock);
	file_unref(f);
	return r;
}

/* With t->lock held: take fd's file out of the table (NULL if closed). */
static struct file *fd_take_locked(struct fdtable *t, int fd)
{
	struct file *f = fdt_file(t, fd);
	if (!f)
		return NULL;
	t->fd[fd] = NULL;
	fdt_set_cloexec(t, fd, false);
	if (fd < t->next_free)
		t->next_free = fd;
	return f;
}

int fd_close(int fd)
{
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	struct file *f = fd_take_locked(t, fd);
	simple_unlock(&t->lock);
	if (!f)
		return -EBADF;
	fd_close_hooks(f, t);
	file_unref(f);
	return 0;
}

/* CLOSE_RANGE_UNSHARE, unshare(CLONE_FILES): a table of our own if another
 * process shares ours (CLONE_FILES).  Our threads use the new one. */
int fdtable_unshare(void)
{
	struct proc *p = curproc();
	struct fdtable *old = p->fdt;
	if (READ_ONCE(old->refcnt) == 1)
		return 0;
	struct fdtable *n = fdtable_fork(old);
	if (!n)
		return -ENOMEM;
	simple_lock(&p->lock);
	p->fdt = n;
	simple_unlock(&p->lock);
	fdtable_close_all(old);          /* our reference; the sharers keep theirs */
	return 0;
}

/* unshare(CLONE_FS): cwd, root and umask of our own if shared. */
int fs_info_unshare(void)
{
	struct proc *p = curproc();
	struct fs_info *old = p->fs;
	if (READ_ONCE(old->refcnt) == 1)
		return 0;
	struct fs_info *n = fs_info_copy(old);
	if (!n)
		return -ENOMEM;
	simple_lock(&p->lock);
	p->fs = n;
	simple_unlock(&p->lock);
	fs_info_unref(old);
	return 0;
}

int fd_close_range(unsigned first, unsigned last, unsigned flags)
{
	if ((flags & ~(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC)) || first > last)
		return -EINVAL;
	if (flags & CLOSE_RANGE_UNSHARE) {
		int r = fdtable_unshare();
		if (r)
			return r;
	}
	/* Only below the table's end: a range up to ~0U costs no more than
	 * the descriptors in use. */
	struct fdtable *t = cur_fdt();
	simple_lock(&t->lock);
	for (unsigned fd = first; fd <= last && fd < (unsigned)t->end; fd++) {
		if (flags & CLOSE_RANGE_CLOEXEC) {
			if (t->fd[fd])
				fdt_set_cloexec(t, (int)fd, true);
			continue;
		}
		struct file *f = fd_take_locked(t, (int)fd);
		if (!f)
			continue;
		simple_unlock(&t->lock);
		fd_close_hooks(f, t);
		file_unref(f);
		simple_lock(&t->lock);
	}
	simple_unlock(&t->lock);
	return 0;
}

struct inode *cwd_get(void)
{
	struct fs_info *t = cur_fs();
	simple_lock(&t->lock);
	struct inode *ip = t->cwd;
	vnode_ref(ip);
	simple_unlock(&t->lock);
	return ip;
}

struct inode *root_get(void)
{
	struct fs_info *t = cur_fs();
	simple_lock(&t->lock);
	struct inode *ip = t->root;
	vnode_ref(ip);
	simple_unlock(&t->lock);
	return ip;
}
