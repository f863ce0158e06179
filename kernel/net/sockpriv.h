/*
 * Private to kernel/net: the socket engine's structures, shared by unix.c
 * (the engine and AF_UNIX names) and inet.c (AF_INET and AF_INET6 on the
 * loopback: addresses, the port table, IP and TCP options).
 *
 * An internet socket is a usock like any other: a TCP connection is a pair
 * of stream sockets, a UDP socket a datagram socket whose messages are
 * routed by port instead of by a peer pointer.  Nothing leaves the machine:
 * the one interface is the loopback (127.0.0.0/8, ::1).
 */
#ifndef CONCERTO_NET_SOCKPRIV_H
#define CONCERTO_NET_SOCKPRIV_H

#include "lock.h"
#include "net.h"
#include "poll.h"
#include "waitq.h"

struct fasync;
struct inode;

/* An internet end point: an IPv6 address (an IPv4 one mapped as
 * ::ffff:a.b.c.d, the IPv4 wildcard as ::ffff:0.0.0.0) and a port in host
 * order. */
struct usock;

#define INET_NOPTS 48
#define INET_MC_MAX 20           /* groups a socket joins (Linux: igmp_max_memberships) */

struct inet_ep {
	uint8_t a[16];
	uint16_t port;
};

/* The internet part of a socket.  Lock key: (n) the name table lock, (s)
 * the socket's lock. */
struct inet_sock {
	struct inet_ep bound;            /* (n) as bound (address may be a wildcard) */
	struct inet_ep local;            /* (n) getsockname: bound, or the source
					  * chosen at connect for a wildcard */
	bool in_ports;                   /* (n) in the port table */
	struct usock *port_next;         /* (n) port table chain */
	struct inet_ep dst;              /* (s) UDP: the connected destination */
	bool dst_set;                    /* (s) UDP connected */
	bool v6only;                     /* (s) IPV6_V6ONLY */
	bool hdrincl;                    /* (s) raw: IP_HDRINCL */
	uint32_t icmp_filter;            /* (s) raw ICMP: ICMP_FILTER (types dropped) */
	uint32_t icmp6_filter[8];        /* (s) raw ICMPv6: ICMP6_FILTER (types dropped) */
	bool nb_pending;                 /* (s) a non-blocking connect answered
					  * EINPROGRESS; the next connect reports */
	int opt[INET_NOPTS];             /* (s) IP, IPv6, TCP, UDP integer options
					  * (inet.c's table opt_defs) */
	uint32_t mc_addr;                /* (s) IP_MULTICAST_IF's address (network order) */
	int mc_index;                    /* (s) IP_/IPV6_MULTICAST_IF's interface (0: none) */
	int mc_ngroups;                  /* (s) groups joined (on lo, the one interface) */
	uint8_t mc_groups[INET_MC_MAX][16];   /* (s) their addresses (IPv4 mapped) */
};

#define UNIX_BUF_DEFAULT 212992          /* Linux's wmem_default/rmem_default */
#define UNIX_BUF_MAX     (2 * 212992)
#define UNIX_BUF_MIN     4608
#define STREAM_CHUNK     65536           /* bytes per stream message */
#define DGRAM_QLEN       512             /* messages queued on a datagram socket */

enum { US_UNCONNECTED, US_LISTEN, US_CONNECTING, US_CONNECTED };
#define RCV_SHUT  1
#define SEND_SHUT 2

/* A message in a receive queue.  Lock key: (s) the queue's socket lock;
 * [I] set before it is queued. */
struct umsg {
	struct umsg *next;               /* (s) */
	size_t len;                      /* [I] data bytes */
	size_t off;                      /* (s)+io: bytes already read (stream) */
	struct file **fds;               /* (n)+(s) SCM_RIGHTS, NULL once taken */
	int nfds;                        /* (n)+(s) */
	struct kucred cred;              /* [I] the sender's */
	struct ksockaddr from;           /* [I] the sender's address */
	/* [I] internet datagrams: what IP-level control messages tell */
	uint64_t stamp_ns;               /* queued at (realtime): SO_TIMESTAMP */
	struct inet_ep to;               /* its destination: IP_PKTINFO */
	uint8_t ttl, tos;                /* IP_TTL / IPV6_HOPLIMIT, IP_TOS / IPV6_TCLASS */
	char data[];
};

/*
 * Lock key: (s) lock, (n) the name table lock, (io) io lock held to remove
 * from the queue's head, [a] atomic, [I] immutable.  Fields read without
 * the lock for sleeping (READ_ONCE) are re-checked under the waitq lock
 * after every change is followed by a wakeup.
 */
struct usock {
	struct complex_lock io;          /* readers, across the copy out */
	struct simple_lock lock;
	struct waitq rwait;              /* readers (data) and acceptors (one woken) */
	struct waitq wwait;              /* writers to this socket (room), connectors */
	struct poll_head ph;
	struct fasync *fasync;           /* (fasync lock) O_ASYNC files of it (fown.h) */
	volatile uint64_t refcnt;        /* [a] file + peers + listener queue */
	int type;                        /* [I] */
	struct netns *net;               /* [I] its network namespace (referenced) */
	volatile int state;              /* (s) US_* */
	volatile int shut;               /* (s) RCV_SHUT, SEND_SHUT */
	volatile bool dead;              /* (s) released */
	int err;                         /* (s) SO_ERROR */
	struct usock *peer;              /* (s) referenced */
	struct umsg *qhead, *qtail;      /* (s) receive queue */
	volatile size_t qbytes;          /* (s) data bytes queued */
	volatile int qlen;               /* (s) messages queued */
	struct usock *acc_head, *acc_tail; /* (s) listener: embryos */
	struct usock *acc_next;          /* (s of the listener) */
	volatile int nacc;               /* (s) embryos queued */
	int backlog;                     /* (s) */
	bool passcred;                   /* (s) SO_PASSCRED */
	uint64_t oflags;                 /* (s) the generic flag options: bit SO_x set */
	int rcvlowat;                    /* (s) SO_RCVLOWAT */
	int mark;                        /* (s) SO_MARK */
	bool bound_lo;                   /* (s) SO_BINDTODEVICE "lo" */
	int priority;                    /* (s) SO_PRIORITY */
	int linger;                      /* (s) SO_LINGER seconds, with bit SO_LINGER */
	int sndbuf, rcvbuf;              /* (s) */
	uint64_t rcvtimeo, sndtimeo;     /* (s) ns, 0: none */
	struct kucred peercred;          /* (s) SO_PEERCRED */
	/* TCP urgent data (MSG_OOB): the byte, and the mark's position in the
	 * stream of bytes read (rcv_total) */
	uint64_t rcv_total;              /* (s)+io stream bytes taken by reads */
	uint64_t urg_mark;               /* (s) */
	bool urg_mark_set;               /* (s) */
	bool urg_valid;                  /* (s) urg_byte waits for recv(MSG_OOB) */
	char urg_byte;                   /* (s) */
	struct kucred cred;              /* (s) at listen / connect */
	struct ksockaddr *addr;          /* (n) bound (or a listener's, accepted) */
	bool in_table;                   /* (n) the name table names it */
	struct inode *bound_ip;          /* (n) path name's inode (referenced) */
	struct file *file;               /* (n) its file (NULL: embryo) */
	volatile uint32_t inflight;      /* (n)+(s of the queue) refs of file in queues */
	struct usock *all_next, *all_prev; /* (n) all sockets */
	bool gc_cand, gc_mark;           /* (n) collector */
	/* AF_INET and AF_INET6 (inet.c); family AF_UNIX leaves them zero */
	int family;                      /* [I] AF_UNIX, AF_INET, AF_INET6 */
	int protocol;                    /* [I] IPPROTO_TCP, IPPROTO_UDP (inet) */
	struct inet_sock in;             /* see struct inet_sock */
	int utype;                       /* [I] the type socket(2) gave, if not type */
	struct {                         /* AF_NETLINK (netlink.c) */
		bool bound;              /* (n) */
		int32_t port;            /* (n) port id */
		uint32_t groups;         /* (n) multicast groups joined at bind */
	} nl;
};


/* The name table lock (class unix_names): AF_UNIX names, the port table,
 * every socket's address and file, the list of all sockets. */
extern struct simple_lock names_lock;

void usock_ref(struct usock *s);
void usock_unref(struct usock *s);
/* A new socket of the type (on the list of all sockets) in network
 * namespace net (NULL: the caller's), or NULL. */
struct usock *usock_new(int type, struct netns *net);
/* Wake the sleepers of wq (all, or one) and the pollers of s. */
void usock_wake(struct usock *s, struct waitq *wq, bool one, uint32_t events);
/* One interruptible sleep on wq (its lock held) until the deadline (0:
 * none): 0, -EINTR, -EAGAIN. */
int usock_sleep_locked(struct waitq *wq, uint64_t deadline);
uint64_t usock_deadline(uint64_t timeo);

/* ---- inet.c ---- */
bool inet_family(int family);
void inet_init_sock(struct usock *s);
int inet_bind(struct usock *s, const struct ksockaddr *a);
/* Give s an ephemeral port if it has none.  0 or -EAGAIN. */
int inet_autobind(struct usock *s);
/* listen(2)'s part: bind if unbound, check no other listener conflicts. */
int inet_listen_check(struct usock *s);
/* A destination: 0 with *ep (a wildcard made the loopback), or -errno. */
int inet_dest(struct usock *s, const struct ksockaddr *a, struct inet_ep *ep);
/* The listener in net for a connection to ep (referenced), or NULL. */
struct usock *inet_find_listener(struct netns *net, const struct inet_ep *ep);
/* The datagram socket of protocol (UDP, UDP-Lite) in net that receives at
 * ep from src (referenced), or NULL. */
struct usock *inet_find_dgram(struct netns *net, int protocol, const struct inet_ep *ep,
			     const struct inet_ep *src);
/* The source end point of s for destination dst (names lock held). */
void inet_source_locked(struct usock *s, const struct inet_ep *dst, struct inet_ep *out);
/* Set the local name of a connected client or an accepted socket. */
void inet_set_local(struct usock *s, const struct inet_ep *ep);
/* ep as a sockaddr of family (AF_INET or AF_INET6). */
void inet_name(int family, const struct inet_ep *ep, struct ksockaddr *a);
void inet_unbind_locked(struct usock *s);
int inet_getname(struct usock *s, bool peer, struct ksockaddr *a);
ssize_t inet_udp_send(struct usock *s, struct kmsg *km, bool nonblock);
/* The IP-level control messages of a datagram send: 0 or -EINVAL; the
 * TTL / hop limit and TOS / class they give in *ttl, *tos. */
int inet_send_cmsgs(const struct kmsg *km, bool v4, int *ttl, int *tos);
/* The value of an integer IP/IPv6/TCP/UDP option of s; s locked. */
int inet_opt_locked(struct usock *s, int level, int opt);

/* ---- raw.c ---- */
ssize_t raw_send(struct usock *s, struct kmsg *km);
/* A raw socket's own options: 0 with *r the result, 1 if not one of them. */
int raw_setsockopt(struct usock *s, int level, int opt, const void *val, uint32_t len, int *r);
int raw_getsockopt(struct usock *s, int level, int opt, void *val, uint32_t *len, int *r);
int inet_udp_connect(struct usock *s, const struct ksockaddr *a);

/* ---- netlink.c ---- */
int netlink_bind(struct usock *s, const struct ksockaddr *a);
int netlink_connect(struct usock *s, const struct ksockaddr *a);
int netlink_getname(struct usock *s, bool peer, struct ksockaddr *a);
ssize_t netlink_send(struct usock *s, struct kmsg *km);

/* unix.c helpers for inet.c and netlink.c */
/* The first of the list of all sockets (names lock held). */
struct usock *usock_all_locked(void);
/* A message of len bytes copied from kernel memory p: NULL and *err. */
struct umsg *usock_build_kernel(const void *p, size_t len, int *err);
struct umsg *usock_build(struct usock *s, struct kmsg *km, size_t len, int *err);
/* Queue m on datagram socket r unless full or gone: true if queued. */
bool usock_enqueue_dgram(struct usock *r, struct umsg *m);
void umsg_free(struct umsg *m);
/* inet.c: the IP-level control messages of a datagram m received on s
 * (SO_TIMESTAMP(NS), IP_PKTINFO, IP_TTL, IP_TOS, IPV6_PKTINFO,
 * IPV6_HOPLIMIT, IPV6_TCLASS as asked): 0 or -EFAULT. */
int inet_put_cmsgs(struct usock *s, struct kmsg *km, const struct umsg *m);
/* inet.c: whether a datagram of len bytes fits in r's buffer (r locked). */
bool inet_dgram_room_locked(struct usock *r, size_t len);

#endif
