/*
 * The socket layer (net.h): the socket system calls with Linux x86_64
 * numbers and errors, the socket file (read, write, poll, close), and the
 * user's msghdr, iovecs and control messages.  The families are AF_UNIX
 * (unix.c) and AF_INET and AF_INET6 on the loopback (inet.c, on unix.c's
 * engine); every other gives EAFNOSUPPORT.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "kmem.h"
#include "net.h"
#include "ns.h"
#include "poll.h"
#include "proc.h"
#include "signal.h"
#include "syscall.h"
#include "thread.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"

#define UIO_MAXIOV 1024
#define MAX_RW     0x7ffff000UL

static void kmsg_free(struct kmsg *m);

/* ---- the socket file ---- */

void *sock_of(struct file *f)
{
	return f && f->fops == &sock_fops ? f->priv : NULL;
}

void sock_sigpipe(void)
{
	struct proc *p = curproc();
	signal_send_thread(p, curthread(), SIGPIPE, 0, p->pid);
}

static bool nonblocking(struct file *f, int flags)
{
	return (READ_ONCE(f->flags) & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* A kmsg over one user buffer. */
static void kmsg_one(struct kmsg *m, struct kiovec *v, void *ubuf, size_t n, int flags)
{
	memset(m, 0, sizeof(*m));
	v->base = (uint64_t)ubuf;
	v->len = n;
	m->iov.v = v;
	m->iov.n = 1;
	m->iov.left = n;
	m->flags = flags;
}

static ssize_t sock_read(struct file *f, void *ubuf, size_t n, uint64_t *off __unused)
{
	struct kmsg m;
	struct kiovec v;
	if (n == 0)
		return 0;                        /* Linux: read(2) of nothing */
	kmsg_one(&m, &v, ubuf, n, 0);
	return unix_recvmsg(f->priv, &m, nonblocking(f, 0));
}

static ssize_t sock_write(struct file *f, const void *ubuf, size_t n, uint64_t *off __unused)
{
	struct kmsg m;
	struct kiovec v;
	kmsg_one(&m, &v, (void *)ubuf, n, 0);
	return unix_sendmsg(f->priv, &m, nonblocking(f, 0));
}

/* The kernel-buffer forms, for sendfile and splice (splice.c): the
 * socket's own blocking mode, as Linux's sendfile to a socket. */
static ssize_t sock_kread(struct file *f, void *buf, size_t n, uint64_t *off __unused)
{
	struct kmsg m;
	struct kiovec v;
	if (n == 0)
		return 0;
	kmsg_one(&m, &v, buf, n, 0);
	m.iov.kernel = true;
	return unix_recvmsg(f->priv, &m, nonblocking(f, 0));
}

static ssize_t sock_kwrite(struct file *f, const void *buf, size_t n, uint64_t *off __unused)
{
	struct kmsg m;
	struct kiovec v;
	kmsg_one(&m, &v, (void *)buf, n, 0);
	m.iov.kernel = true;
	return unix_sendmsg(f->priv, &m, nonblocking(f, 0));
}

static int sock_poll(struct file *f)
{
	return unix_poll(f->priv);
}

static struct poll_head *sock_poll_head(struct file *f)
{
	return unix_poll_head(f->priv);
}

#define FIONREAD   0x541B
#define SIOCOUTQ   0x5411                /* TIOCOUTQ */
#define SIOCATMARK 0x8905

static int put_int(uint64_t arg, int v)
{
	return copyout((void *)arg, &v, sizeof(v)) < 0 ? -EFAULT : 0;
}

/* ---- network device ioctls: the one device, lo ---- */

#define SIOCGIFNAME    0x8910
#define SIOCGIFCONF    0x8912
#define SIOCGIFFLAGS   0x8913
#define SIOCSIFFLAGS   0x8914
#define SIOCGIFADDR    0x8915
#define SIOCGIFDSTADDR 0x8917
#define SIOCGIFBRDADDR 0x8919
#define SIOCGIFNETMASK 0x891b
#define SIOCGIFMETRIC  0x891d
#define SIOCGIFMTU     0x8921
#define SIOCGIFHWADDR  0x8927
#define SIOCGIFINDEX   0x8933
#define SIOCGIFTXQLEN  0x8942
#define SIOCGIFMAP     0x8970

#define IFNAMSIZ   16

struct kifreq {
	char name[IFNAMSIZ];
	union {
		uint8_t addr[16];        /* struct sockaddr */
		int ival;                /* flags (short), index, mtu, metric, qlen */
		uint8_t map[24];
	} u;
};

struct kifconf {
	int32_t len, pad;
	uint64_t buf;
};

/* An IPv4 sockaddr in r's union. */
static void ifr_addr(struct kifreq *r, uint32_t host_addr)
{
	memset(r->u.map, 0, sizeof(r->u.map));
	r->u.addr[0] = AF_INET;
	uint32_t be = __builtin_bswap32(host_addr);
	memcpy(r->u.addr + 4, &be, 4);
}

static int ifconf(struct netns *net, uint64_t arg)
{
	struct kifconf c;
	if (copyin(&c, (void *)arg, sizeof(c)))
		return -EFAULT;
	int n = 0;
	if (!READ_ONCE(net->lo_up)) {
		n = 0;                           /* lo has no address while down */
	} else if (c.buf && c.len >= (int)sizeof(struct kifreq)) {
		struct kifreq r;
		memset(&r, 0, sizeof(r));
		memcpy(r.name, "lo", 3);
		ifr_addr(&r, 0x7f000001);
		if (copyout((void *)c.buf, &r, sizeof(r)))
			return -EFAULT;
		n = 1;
	} else if (!c.buf) {
		n = 1;                           /* the size needed */
	}
	c.len = n * (int)sizeof(struct kifreq);
	return copyout((void *)arg, &c, sizeof(c)) ? -EFAULT : 0;
}

/* The device ioctls Linux answers on any socket (netdevice(7)), for the
 * lo of the socket's network namespace net: -ENOTTY if cmd is not one of
 * them. */
static int netdev_ioctl(struct netns *net, uint64_t cmd, uint64_t arg)
{
	if (cmd == SIOCGIFCONF)
		return ifconf(net, arg);
	if (cmd != SIOCGIFNAME && cmd != SIOCGIFFLAGS && cmd != SIOCSIFFLAGS &&
	    cmd != SIOCGIFADDR && cmd != SIOCGIFDSTADDR && cmd != SIOCGIFBRDADDR &&
	    cmd != SIOCGIFNETMASK && cmd != SIOCGIFMETRIC && cmd != SIOCGIFMTU &&
	    cmd != SIOCGIFHWADDR && cmd != SIOCGIFINDEX && cmd != SIOCGIFTXQLEN &&
	    cmd != SIOCGIFMAP)
		return -ENOTTY;
	struct kifreq r;
	if (copyin(&r, (void *)arg, sizeof(r)))
		return -EFAULT;
	if (cmd == SIOCGIFNAME) {
		if (r.u.ival != LO_INDEX)
			return -ENODEV;
		memset(r.name, 0, sizeof(r.name));
		memcpy(r.name, "lo", 3);
		return copyout((void *)arg, &r, sizeof(r)) ? -EFAULT : 0;
	}
	r.name[IFNAMSIZ - 1] = 0;
	if (strcmp(r.name, "lo"))
		return -ENODEV;
	int flags = (int16_t)r.u.ival;
	memset(&r.u, 0, sizeof(r.u));
	bool up = READ_ONCE(net->lo_up);
	switch (cmd) {
	case SIOCGIFFLAGS:
		r.u.ival = (int)netns_lo_flags(net);
		break;
	case SIOCSIFFLAGS:
		/* IFF_UP is the one flag that changes: lo up or down (CAP_NET_ADMIN
		 * over the socket's network namespace) */
		if (!netns_capable(net, CAP_NET_ADMIN))
			return -EPERM;
		WRITE_ONCE(net->lo_up, (flags & IFF_UP) ? 1u : 0u);
		return 0;
	case SIOCGIFADDR:
		if (!up)
			return -EADDRNOTAVAIL;
		ifr_addr(&r, 0x7f000001);
		break;
	case SIOCGIFNETMASK:
		if (!up)
			return -EADDRNOTAVAIL;
		ifr_addr(&r, 0xff000000);
		break;
	case SIOCGIFDSTADDR:
	case SIOCGIFBRDADDR:
		ifr_addr(&r, 0);
		break;
	case SIOCGIFMTU:
		r.u.ival = LO_MTU;
		break;
	case SIOCGIFHWADDR:
		r.u.addr[0] = ARPHRD_LOOPBACK & 0xff;
		r.u.addr[1] = ARPHRD_LOOPBACK >> 8;
		break;
	case SIOCGIFINDEX:
		r.u.ival = LO_INDEX;
		break;
	case SIOCGIFTXQLEN:
		r.u.ival = 1000;
		break;
	}
	return copyout((void *)arg, &r, sizeof(r)) ? -EFAULT : 0;
}

static int sock_ioctl(struct file *f, uint64_t cmd, uint64_t arg)
{
	if (cmd == FIONREAD)
		return put_int(arg, unix_inq(f->priv));
	if (cmd == SIOCATMARK)
		return put_int(arg, unix_atmark(f->priv));
	if (cmd == SIOCOUTQ)
		return put_int(arg, 0);          /* nothing waits to be sent */
	return netdev_ioctl(unix_net(f->priv), cmd, arg);
}

static int sock_fasync(struct file *f, int fd, bool on)
{
	return unix_fasync(f->priv, f, fd, on);
}

static void sock_release(struct file *f)
{
	unix_fasync(f->priv, f, -1, false);   /* off the O_ASYNC list */
	unix_release(f->priv);
}

const struct file_ops sock_fops = {
	.read = sock_read, .write = sock_write, .kread = sock_kread, .kwrite = sock_kwrite,
	.poll = sock_poll,
	.poll_head = sock_poll_head, .ioctl = sock_ioctl, .release = sock_release,
	.fasync = sock_fasync,
	.unref_hint = unix_gc_hint,
};

/* The socket behind descriptor fd (its file referenced in *fp). */
static int sock_get(int fd, struct file **fp, struct usock **sp)
{
	struct file *f = fd_get(fd);
	if (!f)
		return -EBADF;
	if (f->fops != &sock_fops) {
		file_unref(f);
		return -ENOTSOCK;
	}
	*fp = f;
	*sp = f->priv;
	return 0;
}

/* A file for socket s and a descriptor: the descriptor or -errno (s is
 * released on failure). */
static int sock_install(struct usock *s, int flags)
{
	struct file *f = file_alloc(&sock_fops, O_RDWR | (flags & SOCK_NONBLOCK ? O_NONBLOCK : 0));
	if (!f) {
		unix_release(s);
		return -ENOMEM;
	}
	f->priv = s;
	unix_set_file(s, f);
	return fd_install(f, 0, flags & SOCK_CLOEXEC);
}

/* ---- iovecs ---- */

/* Moves k bytes between buf and the user's iovecs at it's position: out
 * copies buf to the user, else the user's bytes into buf.  0 or -EFAULT. */
static int kiov_copy(struct kiov *it, char *b, size_t k, bool out)
{
	while (k) {
		struct kiovec *v = &it->v[it->i];
		size_t c = MIN(k, v->len - it->off);
		char *u = (char *)v->base + it->off;
		if (c && it->kernel) {
			if (out)
				memcpy(u, b, c);
			else
				memcpy(b, u, c);
		} else if (c && (out ? copyout(u, b, c) : copyin(b, u, c))) {
			return -EFAULT;
		}
		b += c;
		k -= c;
		it->off += c;
		it->left -= c;
		if (it->off == v->len) {
			it->i++;
			it->off = 0;
		}
	}
	return 0;
}

int kiov_copyin(struct kiov *it, void *buf, size_t k)
{
	return kiov_copy(it, buf, k, false);
}

int kiov_copyout(struct kiov *it, const void *buf, size_t k)
{
	return kiov_copy(it, (char *)buf, k, true);   /* only read when out */
}

/* Copy the user's iovec array (kmalloc'd into it->v): 0 or -errno. */
static int iov_in(struct kiov *it, uint64_t uiov, uint64_t n)
{
	memset(it, 0, sizeof(*it));
	if (n > UIO_MAXIOV)
		return -EMSGSIZE;
	it->v = kmalloc(MAX(n, 1) * sizeof(struct kiovec), 0);
	if (!it->v)
		return -ENOMEM;
	if (n && copyin(it->v, (void *)uiov, n * sizeof(struct kiovec))) {
		kfree(it->v);
		it->v = NULL;
		return -EFAULT;
	}
	uint64_t sum = 0;
	size_t used = 0;
	for (uint64_t i = 0; i < n; i++) {
		if ((int64_t)it->v[i].len < 0) {
			kfree(it->v);
			it->v = NULL;
			return -EINVAL;
		}
		uint64_t l = MIN(it->v[i].len, MAX_RW - sum);
		if (l && !user_range_ok((void *)it->v[i].base, l)) {
			kfree(it->v);
			it->v = NULL;
			return -EFAULT;
		}
		it->v[i].len = l;
		sum += l;
		if (l)
			it->v[used++] = it->v[i];
	}
	it->n = used;
	it->left = sum;
	return 0;
}

/* readv/writev on socket f: one message (a datagram stays whole). */
ssize_t sock_rwv(struct file *f, uint64_t uiov, uint64_t cnt, bool write)
{
	struct kmsg km;
	memset(&km, 0, sizeof(km));
	int r = iov_in(&km.iov, uiov, cnt);
	if (r)
		return r == -EMSGSIZE ? -EINVAL : r;
	ssize_t n;
	if (!write && km.iov.left == 0)
		n = 0;
	else
		n = write ? unix_sendmsg(f->priv, &km, nonblocking(f, 0)) :
			    unix_recvmsg(f->priv, &km, nonblocking(f, 0));
	kmsg_free(&km);
	return n;
}

/* ---- addresses ---- */

/* A user sockaddr in: 0 or -errno.  len 0 gives an empty address. */
static int addr_in(struct ksockaddr *a, uint64_t uaddr, uint64_t len)
{
	a->len = 0;
	if (len == 0)
		return 0;
	if ((int)len < 0 || len > SOCKADDR_MAX)
		return -EINVAL;
	if (copyin(a->b, (void *)uaddr, len))
		return -EFAULT;
	a->len = (uint32_t)len;
	return 0;
}

/* A unix address for bind/connect: family AF_UNIX, 2 < len: 0 or -EINVAL. */
static int addr_check_unix(const struct ksockaddr *a, bool bind)
{
	if (a->len < 2 || a->len > SUN_LEN_MAX || a->b[0] != AF_UNIX || a->b[1] != 0)
		return -EINVAL;
	if (a->len == 2 && !bind)
		return -EINVAL;
	return 0;
}

/* Copy a out to (uaddr, ulen): the length stored is the full length, the
 * bytes copied at most the buffer's.  0 or -errno. */
static int addr_out(const struct ksockaddr *a, uint64_t uaddr, uint64_t ulen)
{
	if (!ulen)
		return 0;
	int32_t have;
	if (copyin(&have, (void *)ulen, sizeof(have)))
		return -EFAULT;
	if (have < 0)
		return -EINVAL;
	uint32_t n = MIN((uint32_t)have, a->len);
	if (n && copyout((void *)uaddr, a->b, n))
		return -EFAULT;
	if (copyout((void *)ulen, &a->len, sizeof(a->len)))
		return -EFAULT;
	return 0;
}

/* ---- socket, socketpair ---- */

static int check_family_type(int domain, int type, int *flags)
{
	*flags = type & ~SOCK_TYPE_MASK;
	if (*flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	if (domain < 0 || domain >= AF_MAX)
		return -EAFNOSUPPORT;
	if (domain != AF_UNIX && domain != AF_INET && domain != AF_INET6 && domain != AF_NETLINK)
		return -EAFNOSUPPORT;
	return 0;
}

static int sock_create(int domain, int type, int protocol, struct usock **s)
{
	if (domain == AF_UNIX)
		return unix_create(type, protocol, s);
	if (domain == AF_NETLINK)
		return netlink_create(type, protocol, s);
	return inet_create(domain, type, protocol, s);
}

SYSCALL(41, socket)
{
	int flags;
	int r = check_family_type((int)a0, (int)a1, &flags);
	if (r)
		return r;
	struct usock *s;
	r = sock_create((int)a0, (int)a1 & SOCK_TYPE_MASK, (int)a2, &s);
	if (r)
		return r;
	return sock_install(s, flags);
}

SYSCALL(53, socketpair)
{
	int flags;
	int r = check_family_type((int)a0, (int)a1, &flags);
	if (r)
		return r;
	if ((int)a0 != AF_UNIX)
		return -EOPNOTSUPP;              /* Linux: no pairs of internet sockets */
	struct usock *s1, *s2;
	r = unix_create((int)a1 & SOCK_TYPE_MASK, (int)a2, &s1);
	if (r)
		return r;
	r = unix_create((int)a1 & SOCK_TYPE_MASK, (int)a2, &s2);
	if (r) {
		unix_release(s1);
		return r;
	}
	unix_pair(s1, s2);
	int fd[2];
	fd[0] = sock_install(s1, flags);
	if (fd[0] < 0) {
		unix_release(s2);
		return fd[0];
	}
	fd[1] = sock_install(s2, flags);
	if (fd[1] < 0) {
		fd_close(fd[0]);
		return fd[1];
	}
	if (copyout((void *)a3, fd, sizeof(fd))) {
		fd_close(fd[0]);
		fd_close(fd[1]);
		return -EFAULT;
	}
	return 0;
}

/* ---- bind, listen, connect, accept ---- */

SYSCALL(49, bind)
{
	struct file *f;
	struct usock *s;
	struct ksockaddr a;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	r = addr_in(&a, a1, a2);
	if (r == 0 && unix_family(s) == AF_UNIX)
		r = addr_check_unix(&a, true);
	if (r == 0)
		r = unix_bind(s, &a);
	file_unref(f);
	return r;
}

SYSCALL(50, listen)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	r = unix_listen(s, (int)a1);
	file_unref(f);
	return r;
}

SYSCALL(42, connect)
{
	struct file *f;
	struct usock *s;
	struct ksockaddr a;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	r = addr_in(&a, a1, a2);
	if (r == 0 && a.len < 2)
		r = -EINVAL;
	if (r == 0)
		r = unix_connect(s, &a, nonblocking(f, 0));
	file_unref(f);
	return r;
}

static int64_t do_accept(int fd, uint64_t uaddr, uint64_t ulen, int flags)
{
	if (flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC))
		return -EINVAL;
	struct file *f;
	struct usock *s, *n;
	int r = sock_get(fd, &f, &s);
	if (r)
		return r;
	if (ulen) {
		int32_t have;
		if (copyin(&have, (void *)ulen, sizeof(have))) {
			file_unref(f);
			return -EFAULT;
		}
		if (have < 0) {
			file_unref(f);
			return -EINVAL;
		}
	}
	r = unix_accept(s, nonblocking(f, 0), &n);
	file_unref(f);
	if (r)
		return r;
	struct ksockaddr a;
	unix_getname(n, true, &a);
	int nfd = sock_install(n, flags);
	if (nfd < 0)
		return nfd;
	if (uaddr && addr_out(&a, uaddr, ulen)) {
		/* Linux: the connection is lost, EFAULT */
		fd_close(nfd);
		return -EFAULT;
	}
	return nfd;
}

SYSCALL(43, accept) { return do_accept((int)a0, a1, a2, 0); }
SYSCALL(288, accept4) { return do_accept((int)a0, a1, a2, (int)a3); }

SYSCALL(48, shutdown)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	r = unix_shutdown(s, (int)a1);
	file_unref(f);
	return r;
}

static int64_t do_getname(int fd, uint64_t uaddr, uint64_t ulen, bool peer)
{
	struct file *f;
	struct usock *s;
	int r = sock_get(fd, &f, &s);
	if (r)
		return r;
	struct ksockaddr a;
	r = unix_getname(s, peer, &a);
	file_unref(f);
	if (r)
		return r;
	if (!ulen)
		return -EFAULT;
	return addr_out(&a, uaddr, ulen);
}

SYSCALL(51, getsockname) { return do_getname((int)a0, a1, a2, false); }
SYSCALL(52, getpeername) { return do_getname((int)a0, a1, a2, true); }

/* ---- options ---- */

SYSCALL(54, setsockopt)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	int level = (int)a1, opt = (int)a2;
	uint32_t len = (uint32_t)a4;
	char buf[32];
	bool inet = unix_family(s) != AF_UNIX;
	if (level != SOL_SOCKET && !inet)
		r = -EOPNOTSUPP;                 /* Linux: AF_UNIX has no other level */
	else if ((int)len < 0)
		r = -EINVAL;
	else if (copyin(buf, (void *)a3, MIN(len, sizeof(buf))))
		r = -EFAULT;
	else if (level == SOL_NETLINK && unix_family(s) == AF_NETLINK)
		r = netlink_setsockopt(s, opt, buf, MIN(len, sizeof(buf)));
	else if (level != SOL_SOCKET && unix_family(s) == AF_NETLINK)
		r = -ENOPROTOOPT;
	else if (level != SOL_SOCKET)
		r = inet_setsockopt(s, level, opt, buf, MIN(len, sizeof(buf)));
	else
		r = unix_setsockopt(s, opt, buf, MIN(len, sizeof(buf)));
	file_unref(f);
	return r;
}

SYSCALL(55, getsockopt)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	int level = (int)a1, opt = (int)a2;
	int32_t have;
	char buf[256];                       /* struct tcp_info */
	uint32_t len = 0;
	bool inet = unix_family(s) != AF_UNIX;
	if (level != SOL_SOCKET && !inet)
		r = -EOPNOTSUPP;                 /* Linux: AF_UNIX has no other level */
	else if (copyin(&have, (void *)a4, sizeof(have)))
		r = -EFAULT;
	else if (have < 0)
		r = -EINVAL;
	else if (level == SOL_NETLINK && unix_family(s) == AF_NETLINK)
		r = netlink_getsockopt(s, opt, buf, &len);
	else if (level != SOL_SOCKET && unix_family(s) == AF_NETLINK)
		r = -ENOPROTOOPT;
	else if (level != SOL_SOCKET)
		r = inet_getsockopt(s, level, opt, buf, &len);
	else
		r = unix_getsockopt(s, opt, buf, &len);
	file_unref(f);
	if (r)
		return r;
	len = MIN(len, (uint32_t)have);
	if (copyout((void *)a3, buf, len) || copyout((void *)a4, &len, sizeof(len)))
		return -EFAULT;
	return 0;
}

/* ---- messages ---- */

struct umsghdr {
	uint64_t name;
	uint32_t namelen, pad0;
	uint64_t iov;
	uint64_t iovlen;
	uint64_t control;
	uint64_t controllen;
	int32_t flags, pad1;
};

struct ucmsghdr {
	uint64_t len;
	int32_t level, type;
};

#define CMSG_ALIGN(n) (((n) + 7) & ~7UL)
#define CMSG_HDR 16

static void kmsg_free(struct kmsg *m)
{
	for (int i = 0; i < m->nfds; i++)
		file_unref(m->fds[i]);
	kfree(m->fds);
	m->fds = NULL;
	m->nfds = 0;
	kfree(m->ctl);
	m->ctl = NULL;
	m->ctllen = 0;
	kfree(m->iov.v);
	m->iov.v = NULL;
}

bool sock_cmsg_next(const struct kmsg *m, uint64_t *off, int *level, int *type,
		    const void **data, size_t *dlen)
{
	if (!m->ctl || *off + CMSG_HDR > m->ctllen)
		return false;
	struct ucmsghdr h;
	memcpy(&h, (char *)m->ctl + *off, sizeof(h));   /* checked by cmsgs_in */
	*level = h.level;
	*type = h.type;
	*data = (char *)m->ctl + *off + CMSG_HDR;
	*dlen = h.len - CMSG_HDR;
	*off += CMSG_ALIGN(h.len);
	return true;
}

/* Parse the control messages of a send: descriptors (referenced) and
 * credentials; the data is kept in m->ctl for the other levels, which
 * the family's send reads or (as Linux) ignores.  0 or -errno. */
static int cmsgs_in(struct kmsg *m, uint64_t uctl, uint64_t len)
{
	if (!len)
		return 0;
	if (len > 65536)
		return -ENOBUFS;
	char *buf = kmalloc(len, 0);
	if (!buf)
		return -ENOMEM;
	int r = 0;
	if (copyin(buf, (void *)uctl, len)) {
		r = -EFAULT;
		goto out;
	}
	for (uint64_t off = 0; off + CMSG_HDR <= len;) {
		struct ucmsghdr h;
		memcpy(&h, buf + off, sizeof(h));
		if (h.len < CMSG_HDR || h.len > len - off) {
			r = -EINVAL;
			goto out;
		}
		size_t dlen = h.len - CMSG_HDR;
		const char *d = buf + off + CMSG_HDR;
		if (h.level != SOL_SOCKET) {
			/* not the socket layer's */
		} else if (h.type == SCM_RIGHTS) {
			/* Several SCM_RIGHTS messages add up, SCM_MAX_FD in
			 * all; an empty one is nothing (Linux). */
			int n = (int)(dlen / sizeof(int));
			if (m->nfds + n > SCM_MAX_FD) {
				r = -EINVAL;
				goto out;
			}
			if (n && !m->fds)
				m->fds = kmalloc(sizeof(struct file *) * SCM_MAX_FD, 0);
			if (n && !m->fds) {
				r = -ENOMEM;
				goto out;
			}
			for (int i = 0; i < n; i++) {
				int fd;
				memcpy(&fd, d + i * sizeof(int), sizeof(int));
				struct file *f = fd_get(fd);
				if (!f) {
					r = -EBADF;
					goto out;
				}
				m->fds[m->nfds++] = f;
			}
		} else if (h.type == SCM_CREDENTIALS) {
			if (dlen != sizeof(struct kucred)) {
				r = -EINVAL;
				goto out;
			}
			memcpy(&m->cred, d, sizeof(m->cred));
			m->has_cred = true;
		} else {
			r = -EINVAL;
			goto out;
		}
		off += CMSG_ALIGN(h.len);
	}
	if (r == 0) {
		m->ctl = buf;
		m->ctllen = len;
		return 0;
	}
out:
	kfree(buf);
	return r;
}

/* One control message out at m->controlused: 0, or 1 if it did not fit
 * whole (MSG_CTRUNC set, nothing or a part written), -EFAULT. */
static int cmsg_put_level(struct kmsg *m, int level, int type, const void *data, size_t dlen,
			  size_t *fit)
{
	uint64_t room = m->controllen > m->controlused ? m->controllen - m->controlused : 0;
	size_t clen = CMSG_HDR + dlen;
	*fit = dlen;
	if (room < CMSG_HDR) {
		m->oflags |= MSG_CTRUNC;
		*fit = 0;
		return 1;
	}
	if (room < clen) {
		m->oflags |= MSG_CTRUNC;
		*fit = room - CMSG_HDR;
		clen = room;
	}
	struct ucmsghdr h = { clen, level, type };
	uint64_t at = m->control + m->controlused;
	if (copyout((void *)at, &h, sizeof(h)) || copyout((void *)(at + CMSG_HDR), data, clen - CMSG_HDR))
		return -EFAULT;
	m->controlused += MIN(CMSG_ALIGN(clen), room);
	return *fit < dlen;
}

static int cmsg_put(struct kmsg *m, int type, const void *data, size_t dlen, size_t *fit)
{
	return cmsg_put_level(m, SOL_SOCKET, type, data, dlen, fit);
}

int sock_put_cmsg(struct kmsg *m, int level, int type, const void *data, size_t dlen)
{
	size_t fit;
	int r = cmsg_put_level(m, level, type, data, dlen, &fit);
	return r < 0 ? r : 0;
}

int sock_put_cmsgs(struct kmsg *m, const struct kucred *cred, struct file **fds, int nfds)
{
	int r = 0;
	size_t fit;
	if (cred && (r = cmsg_put(m, SCM_CREDENTIALS, cred, sizeof(*cred), &fit)) < 0)
		goto out;
	r = 0;
	if (nfds) {
		int *nums = kmalloc(sizeof(int) * (size_t)nfds, 0);
		if (!nums) {
			r = -ENOMEM;
			goto out;
		}
		uint64_t room = m->controllen > m->controlused ? m->controllen - m->controlused : 0;
		int n = room > CMSG_HDR ? (int)MIN((room - CMSG_HDR) / sizeof(int), (uint64_t)nfds) : 0;
		int got = 0;
		for (; got < n; got++) {
			int fd = fd_install(fds[got], 0, m->flags & MSG_CMSG_CLOEXEC);
			fds[got] = NULL;
			if (fd < 0)
				break;
			nums[got] = fd;
		}
		if (got < nfds)
			m->oflags |= MSG_CTRUNC;
		if (got) {
			r = cmsg_put(m, SCM_RIGHTS, nums, sizeof(int) * (size_t)got, &fit);
			if (r > 0)
				r = 0;
		}
		kfree(nums);
	}
out:
	for (int i = 0; i < nfds; i++)
		if (fds[i])
			file_unref(fds[i]);
	kfree(fds);
	return r < 0 ? r : 0;
}

/* A user msghdr in: iovecs, name, control. */
static int msghdr_in(struct kmsg *km, const struct umsghdr *h, bool send)
{
	int r = iov_in(&km->iov, h->iov, h->iovlen);
	if (r)
		return r;
	if (send) {
		r = addr_in(&km->name, h->name, h->name ? h->namelen : 0);
		if (r == 0)
			r = cmsgs_in(km, h->control, h->controllen);
	} else {
		km->control = h->control;
		km->controllen = h->control ? h->controllen : 0;
	}
	if (r)
		kmsg_free(km);
	return r;
}

static ssize_t send_one(struct file *f, const struct umsghdr *h, int flags)
{
	struct kmsg km;
	memset(&km, 0, sizeof(km));
	km.flags = flags;
	int r = msghdr_in(&km, h, true);
	if (r)
		return r;
	ssize_t n = unix_sendmsg(f->priv, &km, nonblocking(f, flags));
	kmsg_free(&km);
	return n;
}

/* Receive one message for user header h at uh (namelen, controllen and
 * flags written back). */
static ssize_t recv_one(struct file *f, struct umsghdr *h, uint64_t uh, int flags)
{
	struct kmsg km;
	memset(&km, 0, sizeof(km));
	km.flags = flags;
	int r = msghdr_in(&km, h, false);
	if (r)
		return r;
	ssize_t n = unix_recvmsg(f->priv, &km, nonblocking(f, flags));
	kmsg_free(&km);
	if (n < 0)
		return n;
	struct umsghdr o = *h;
	o.namelen = h->name ? MIN(h->namelen, km.name.len) : 0;
	if (h->name && o.namelen && copyout((void *)h->name, km.name.b, o.namelen))
		return -EFAULT;
	if (h->name)
		o.namelen = km.name.len;
	o.controllen = km.controlused;
	/* Linux hands back MSG_CMSG_CLOEXEC in msg_flags when it was asked for */
	o.flags = km.oflags | (flags & MSG_CMSG_CLOEXEC);
	if (uh && copyout((void *)uh, &o, sizeof(o)))
		return -EFAULT;
	*h = o;
	return n;
}

#define SEND_FLAGS (MSG_OOB | MSG_DONTWAIT | MSG_EOR | MSG_NOSIGNAL | 0x4 | 0x8000 | 0x800)

SYSCALL(44, sendto)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	struct umsghdr h = { .name = a4, .namelen = (uint32_t)a5, .iovlen = 1 };
	struct kiovec v = { a1, a2 };
	struct kmsg km;
	memset(&km, 0, sizeof(km));
	km.flags = (int)a3;
	if (!user_range_ok((void *)a1, a2)) {
		file_unref(f);
		return -EFAULT;
	}
	km.iov.v = &v;
	km.iov.n = 1;
	km.iov.left = v.len = MIN(a2, MAX_RW);
	r = addr_in(&km.name, h.name, h.name ? h.namelen : 0);
	ssize_t n = r ? r : unix_sendmsg(s, &km, nonblocking(f, (int)a3));
	file_unref(f);
	return n;
}

SYSCALL(45, recvfrom)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	if (!user_range_ok((void *)a1, a2)) {
		file_unref(f);
		return -EFAULT;
	}
	struct kiovec v = { a1, MIN(a2, MAX_RW) };
	struct kmsg km;
	memset(&km, 0, sizeof(km));
	km.flags = (int)a3;
	km.iov.v = &v;
	km.iov.n = 1;
	km.iov.left = v.len;
	ssize_t n = unix_recvmsg(s, &km, nonblocking(f, (int)a3));
	file_unref(f);
	if (n >= 0 && a4) {
		r = addr_out(&km.name, a4, a5);
		if (r)
			return r;
	}
	return n;
}

SYSCALL(46, sendmsg)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	struct umsghdr h;
	ssize_t n = copyin(&h, (void *)a1, sizeof(h)) ? -EFAULT : send_one(f, &h, (int)a2);
	file_unref(f);
	return n;
}

SYSCALL(47, recvmsg)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	struct umsghdr h;
	ssize_t n = copyin(&h, (void *)a1, sizeof(h)) ? -EFAULT : recv_one(f, &h, a1, (int)a2);
	file_unref(f);
	return n;
}

struct ummsghdr {
	struct umsghdr hdr;
	uint32_t len, pad;
};

SYSCALL(307, sendmmsg)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	uint64_t vlen = MIN((uint32_t)a2, UIO_MAXIOV);
	int64_t done = 0;
	ssize_t err = 0;
	for (uint64_t i = 0; i < vlen; i++) {
		struct ummsghdr mh;
		uint64_t at = a1 + i * sizeof(mh);
		if (copyin(&mh, (void *)at, sizeof(mh))) {
			err = -EFAULT;
			break;
		}
		ssize_t n = send_one(f, &mh.hdr, (int)a3);
		if (n < 0) {
			err = n;
			break;
		}
		uint32_t len = (uint32_t)n;
		if (copyout((void *)(at + offsetof(struct ummsghdr, len)), &len, sizeof(len))) {
			err = -EFAULT;
			break;
		}
		done++;
	}
	file_unref(f);
	return done ? done : err;
}

SYSCALL(299, recvmmsg)
{
	struct file *f;
	struct usock *s;
	int r = sock_get((int)a0, &f, &s);
	if (r)
		return r;
	uint64_t deadline = 0;
	if (a4) {
		int64_t ns;                     /* clamped: a huge timeout never wraps */
		r = timeout_from_user_timespec(a4, &ns);
		if (r) {
			file_unref(f);
			return r;
		}
		deadline = time_monotonic_ns() + (uint64_t)ns;
	}
	uint64_t vlen = MIN((uint32_t)a2, UIO_MAXIOV);
	int flags = (int)a3;
	int64_t done = 0;
	ssize_t err = 0;
	for (uint64_t i = 0; i < vlen; i++) {
		struct ummsghdr mh;
		uint64_t at = a1 + i * sizeof(mh);
		if (copyin(&mh, (void *)at, sizeof(mh))) {
			err = -EFAULT;
			break;
		}
		ssize_t n = recv_one(f, &mh.hdr, at, flags & ~MSG_WAITFORONE);
		if (n < 0) {
			err = n;
			break;
		}
		uint32_t len = (uint32_t)n;
		if (copyout((void *)(at + offsetof(struct ummsghdr, len)), &len, sizeof(len))) {
			err = -EFAULT;
			break;
		}
		done++;
		if (flags & MSG_WAITFORONE)
			flags |= MSG_DONTWAIT;
		if (deadline && time_monotonic_ns() >= deadline)
			break;
	}
	file_unref(f);
	return done ? done : err;
}

/* A socket's stat (fstat): S_IFSOCK, like Linux's sockfs inodes. */
bool sock_stat_mode(struct file *f, uint32_t *mode)
{
	if (!sock_of(f))
		return false;
	*mode = S_IFSOCK | 0777;
	return true;
}
