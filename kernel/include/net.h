/*
 * Sockets (kernel/net): the generic layer (socket.c: the system calls,
 * msghdr and control-message marshalling) and the one family, AF_UNIX
 * (unix.c).  Linux x86_64 numbers and layouts.
 *
 * A socket is an open file whose priv is the family's socket (struct usock
 * for AF_UNIX); sock_of() finds it.  The system calls copy the user's
 * msghdr into a struct kmsg (iovecs, name, the descriptors and credentials
 * of the control messages) and hand it to unix.c; unix.c copies the data
 * with the user iovecs itself (kiov_*), never holding a simple lock across
 * a copy.
 *
 * Lock order (the ranks are in lockclass.h): unix_io (a socket's readers,
 * across the copy out) < unix_names (the name table and the list of all
 * sockets for the descriptor collector) < unix_sock (one socket's state and
 * queue; never two at once) < ... < fdtable < pollhead < waitq.
 */
#ifndef CONCERTO_NET_H
#define CONCERTO_NET_H

#include "types.h"

struct file;

#define AF_UNSPEC 0
#define AF_UNIX   1
#define AF_INET   2
#define AF_INET6  10
#define AF_NETLINK 16
#define AF_MAX    46

/* The one network device, lo (socket.c's ioctls, netlink.c, inet.c). */
#define LO_INDEX        1
#define LO_MTU          65536
#define IFF_UP          0x1
#define IFF_LOOPBACK    0x8
#define IFF_RUNNING     0x40
#define LO_IFF          0x49    /* IFF_UP | IFF_LOOPBACK | IFF_RUNNING: lo when up */
#define IFF_LOWER_UP    0x10000

/*
 * A network namespace's state (netns.c): what a struct ns of type NS_NET
 * holds (ns->net; the initial one is static).  Its lo device is up (with
 * 127.0.0.1/8 and ::1) or down (no address: binding to a loopback address
 * is EADDRNOTAVAIL, sending to one ENETUNREACH); a new namespace's lo
 * starts down, as Linux's.  Sockets, the port table entries and abstract
 * AF_UNIX names are tagged with the netns of the socket (usock->net,
 * referenced): a socket stays in the namespace it was made in.
 *
 * refcnt counts the struct ns holding it and every socket in it; the last
 * put frees it (only kfree: any lock may be held).  Lock key: [a] atomic.
 */
struct ns;
struct netns {
	volatile uint64_t refcnt;        /* [a] its struct ns + its sockets */
	struct ns *owner;                /* [I] the user namespace owning it (referenced;
					  * NULL: the initial one) */
	volatile uint32_t lo_up;         /* [a] lo is IFF_UP */
	volatile int somaxconn;          /* [a] /proc/sys/net/core/somaxconn */
};
/* A new netns (lo down), or NULL. */
struct netns *netns_new(void);
void netns_ref(struct netns *n);
void netns_put(struct netns *n);
/* The initial namespace's (never freed). */
struct netns *netns_init(void);
/* The caller's network namespace, referenced (netns_put); ns.c. */
struct netns *netns_cur(void);
/* Has the caller cap over n (in the user namespace owning it: Linux's
 * ns_capable(net->user_ns, cap))?  ns.c. */
bool netns_capable(struct netns *n, int cap);
/* lo's interface flags (IFF_*) in n. */
uint32_t netns_lo_flags(struct netns *n);
#define ARPHRD_LOOPBACK 772

#define IPPROTO_IP     0
#define IPPROTO_ICMP   1
#define IPPROTO_TCP    6
#define IPPROTO_UDP    17
#define IPPROTO_IPV6   41
#define IPPROTO_UDPLITE 136
#define IPPROTO_ICMPV6 58

#define SOL_RAW        255
#define ICMP_FILTER    1

/* IPPROTO_IP options */
#define IP_TOS          1
#define IP_TTL          2
#define IP_HDRINCL      3
#define IP_RECVOPTS     6
#define IP_RETOPTS      7
#define IP_PKTINFO      8
#define IP_MTU_DISCOVER 10
#define IP_RECVERR      11
#define IP_RECVTTL      12
#define IP_RECVTOS      13
#define IP_MTU          14
#define IP_FREEBIND     15
#define IP_TRANSPARENT  19
#define IP_RECVORIGDSTADDR 20
#define IP_BIND_ADDRESS_NO_PORT 24
#define IP_MULTICAST_IF   32
#define IP_MULTICAST_TTL  33
#define IP_MULTICAST_LOOP 34
#define IP_ADD_MEMBERSHIP 35
#define IP_DROP_MEMBERSHIP 36
#define IPV6_JOIN_GROUP   20
#define IPV6_LEAVE_GROUP  21
/* IPPROTO_IPV6 options */
#define IPV6_UNICAST_HOPS   16
#define IPV6_MULTICAST_IF   17
#define IPV6_MULTICAST_HOPS 18
#define IPV6_MULTICAST_LOOP 19
#define IPV6_MTU_DISCOVER   23
#define IPV6_MTU            24
#define IPV6_RECVERR        25
#define IPV6_V6ONLY         26
#define IPV6_RECVPKTINFO    49
#define IPV6_RECVHOPLIMIT   51
#define IPV6_RECVTCLASS     66
#define IPV6_TCLASS         67
/* IPPROTO_TCP options */
#define TCP_NODELAY       1
#define TCP_MAXSEG        2
#define TCP_CORK          3
#define TCP_KEEPIDLE      4
#define TCP_KEEPINTVL     5
#define TCP_KEEPCNT       6
#define TCP_SYNCNT        7
#define TCP_LINGER2       8
#define TCP_DEFER_ACCEPT  9
#define TCP_WINDOW_CLAMP  10
#define TCP_INFO          11
#define TCP_QUICKACK      12
#define TCP_CONGESTION    13
#define TCP_USER_TIMEOUT  18
#define TCP_FASTOPEN      23
#define TCP_NOTSENT_LOWAT 25
#define TCP_FASTOPEN_CONNECT 30
/* IPPROTO_UDP options (IPPROTO_UDPLITE's too: one name space, as Linux) */
#define UDP_CORK    1
#define UDPLITE_SEND_CSCOV 10
#define UDPLITE_RECV_CSCOV 11
#define UDP_SEGMENT 103
#define UDP_GRO     104

#define SOCK_STREAM    1
#define SOCK_DGRAM     2
#define SOCK_RAW       3
#define SOCK_SEQPACKET 5
#define SOCK_TYPE_MASK 0xf
#define SOCK_NONBLOCK  04000
#define SOCK_CLOEXEC   02000000

#define SOL_SOCKET 1

#define SO_DEBUG      1
#define SO_REUSEADDR  2
#define SO_TYPE       3
#define SO_ERROR      4
#define SO_DONTROUTE  5
#define SO_BROADCAST  6
#define SO_SNDBUF     7
#define SO_RCVBUF     8
#define SO_KEEPALIVE  9
#define SO_OOBINLINE  10
#define SO_PRIORITY   12
#define SO_LINGER     13
#define SO_REUSEPORT  15
#define SO_PASSCRED   16
#define SO_PEERCRED   17
#define SO_RCVLOWAT   18
#define SO_SNDLOWAT   19
#define SO_RCVTIMEO   20
#define SO_SNDTIMEO   21
#define SO_BINDTODEVICE 25
#define SO_TIMESTAMP  29
#define SO_ACCEPTCONN 30
#define SO_SNDBUFFORCE 32
#define SO_RCVBUFFORCE 33
#define SO_TIMESTAMPNS 35
#define SO_MARK       36
#define SO_PROTOCOL   38
#define SO_DOMAIN     39

#define SCM_RIGHTS      1
#define SCM_CREDENTIALS 2
#define SCM_MAX_FD      253

#define MSG_OOB          0x1
#define MSG_PEEK         0x2
#define MSG_CTRUNC       0x8
#define MSG_TRUNC        0x20
#define MSG_DONTWAIT     0x40
#define MSG_EOR          0x80
#define MSG_WAITALL      0x100
#define MSG_ERRQUEUE     0x2000
#define MSG_NOSIGNAL     0x4000
#define MSG_WAITFORONE   0x10000
#define MSG_CMSG_CLOEXEC 0x40000000

#define SHUT_RD   0
#define SHUT_WR   1
#define SHUT_RDWR 2

#define UNIX_PATH_MAX 108
#define SUN_LEN_MAX   (2 + UNIX_PATH_MAX)      /* sizeof(struct sockaddr_un) */
#define SOCKADDR_MAX  128                      /* sizeof(struct sockaddr_storage) */

/* struct ucred (SO_PEERCRED, SCM_CREDENTIALS). */
struct kucred {
	int32_t pid;
	uint32_t uid, gid;
};

/* A socket address in kernel memory. */
struct ksockaddr {
	uint32_t len;                    /* bytes used (0: none) */
	char b[SOCKADDR_MAX];
};

/* Iterator over a user iovec array (kernel copy of the vector). */
struct kiovec {
	uint64_t base, len;
};
struct kiov {
	struct kiovec *v;
	size_t n, i;                     /* entries, current entry */
	size_t off;                      /* bytes done in entry i */
	size_t left;                     /* bytes left in all */
	bool kernel;                     /* the bases are kernel addresses (sendfile, splice) */
};
/* Copy up to k bytes between the iterator's user memory and buf, advancing
 * it: 0 or -EFAULT (the iterator then stands where the fault was). */
int kiov_copyin(struct kiov *it, void *buf, size_t k);
int kiov_copyout(struct kiov *it, const void *buf, size_t k);

/* One message: what sendmsg gives and recvmsg fills. */
struct kmsg {
	struct kiov iov;
	struct ksockaddr name;           /* send: destination; recv: the source */
	int flags;                       /* MSG_* of the call */
	/* send: the control messages, parsed */
	struct file **fds;               /* SCM_RIGHTS (referenced) */
	int nfds;
	bool has_cred;                   /* SCM_CREDENTIALS given */
	struct kucred cred;
	void *ctl;                       /* the control data (a kernel copy), for */
	uint64_t ctllen;                 /* the levels a family reads: sock_cmsg_next */
	/* recv: results */
	int oflags;                      /* MSG_TRUNC, MSG_CTRUNC for msg_flags */
	uint64_t control, controllen;    /* user control buffer */
	uint64_t controlused;            /* bytes of it filled */
};

/* ---- socket.c ---- */
extern const struct file_ops sock_fops;
/* The control message of a send at *off (0 first) in m->ctl: its level,
 * type, data and length; *off moves past it.  false after the last. */
bool sock_cmsg_next(const struct kmsg *m, uint64_t *off, int *level, int *type,
		    const void **data, size_t *dlen);
/* The socket of an open file, or NULL (not a socket). */
void *sock_of(struct file *f);
/* Ready to deliver a peer's signal: SIGPIPE to the calling thread. */
void sock_sigpipe(void);
/* Write the control messages: creds (if cred) and the descriptors (installed
 * here; those that do not fit are closed, MSG_CTRUNC).  Consumes the file
 * references.  0 or -errno. */
int sock_put_cmsgs(struct kmsg *m, const struct kucred *cred, struct file **fds, int nfds);
/* One control message of any level into m's control buffer: 0 (MSG_CTRUNC
 * set if it did not fit whole) or -EFAULT. */
int sock_put_cmsg(struct kmsg *m, int level, int type, const void *data, size_t dlen);

/* ---- unix.c (AF_UNIX) ---- */
struct usock;
int unix_create(int type, int protocol, struct usock **out);
int unix_pair(struct usock *a, struct usock *b);
void unix_release(struct usock *s);
/* O_ASYNC on or off for socket file f (fown.h): 0 or -ENOMEM. */
int unix_fasync(struct usock *s, struct file *f, int fd, bool on);
int unix_bind(struct usock *s, const struct ksockaddr *a);
int unix_listen(struct usock *s, int backlog);
int unix_connect(struct usock *s, const struct ksockaddr *a, bool nonblock);
/* A connection from listener s (new socket in *out): 0 or -errno. */
int unix_accept(struct usock *s, bool nonblock, struct usock **out);
int unix_shutdown(struct usock *s, int how);
int unix_getname(struct usock *s, bool peer, struct ksockaddr *a);
ssize_t unix_sendmsg(struct usock *s, struct kmsg *m, bool nonblock);
ssize_t unix_recvmsg(struct usock *s, struct kmsg *m, bool nonblock);
int unix_getsockopt(struct usock *s, int opt, void *val, uint32_t *len);
int unix_setsockopt(struct usock *s, int opt, const void *val, uint32_t len);
int unix_poll(struct usock *s);
struct poll_head *unix_poll_head(struct usock *s);
/* The file of socket s is made (socket, socketpair, accept). */
void unix_set_file(struct usock *s, struct file *f);
int unix_type(struct usock *s);
/* The network namespace s lives in (referenced by s). */
struct netns *unix_net(struct usock *s);
int unix_family(struct usock *s);
/* file_ops.unref_hint: a reference to a unix socket file went (not the
 * last): descriptors in flight may have become garbage. */
void unix_gc_hint(void);
/* The bytes waiting (FIONREAD) */
int unix_inq(struct usock *s);
/* SIOCATMARK: 1 if the next byte read is at the urgent mark. */
int unix_atmark(struct usock *s);

/* ---- inet.c (AF_INET, AF_INET6 on the loopback; the engine of unix.c) ---- */
int inet_create(int family, int type, int protocol, struct usock **out);
int inet_setsockopt(struct usock *s, int level, int opt, const void *val, uint32_t len);
int inet_getsockopt(struct usock *s, int level, int opt, void *val, uint32_t *len);

/* ---- netlink.c (AF_NETLINK, NETLINK_ROUTE) ---- */
#define SOL_NETLINK 270
int netlink_create(int type, int protocol, struct usock **out);
int netlink_setsockopt(struct usock *s, int opt, const void *val, uint32_t len);
int netlink_getsockopt(struct usock *s, int opt, void *val, uint32_t *len);

/* /proc/net (procfs.c): the loopback device's files and the socket tables. */
struct sbuf;
void net_proc_dev(struct sbuf *sb);
void net_proc_if_inet6(struct sbuf *sb);
void net_proc_route(struct sbuf *sb);
void inet_proc_format(struct sbuf *sb, bool tcp, bool v6);
/* /proc/net/igmp, igmp6: lo's multicast groups (v6: igmp6) */
void inet_proc_igmp(struct sbuf *sb, bool v6);
void unix_proc_format(struct sbuf *sb);

/* socket.c, for sys_file.c: a socket file's stat mode (false if not a
 * socket), readv/writev on it. */
struct file;
bool sock_stat_mode(struct file *f, uint32_t *mode);
ssize_t sock_rwv(struct file *f, uint64_t uiov, uint64_t cnt, bool write);

#endif
