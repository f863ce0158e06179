/*
 * Network namespaces' state (net.h struct netns): lo's up flag and the
 * per-namespace sysctls.  The struct ns that names a network namespace
 * (ns.c) holds one reference; every socket made in it holds another, so
 * a namespace's sockets keep it after its last process left.  Everything
 * else per namespace (ports, abstract names, raw and netlink sockets,
 * /proc/net) is found by comparing a socket's net with the caller's.
 */
#include "kernel.h"
#include "atomic.h"
#include "kmem.h"
#include "net.h"
#include "ns.h"

#define SOMAXCONN_DEFAULT 4096

static struct netns init_netns = { .refcnt = 1, .lo_up = 1, .somaxconn = SOMAXCONN_DEFAULT };

struct netns *netns_init(void)
{
	return &init_netns;
}

struct netns *netns_new(void)
{
	struct netns *n = kzalloc(sizeof(*n));
	if (!n)
		return NULL;
	n->refcnt = 1;
	n->lo_up = 0;                       /* Linux: a new namespace's lo is down */
	n->somaxconn = SOMAXCONN_DEFAULT;
	return n;
}

void netns_ref(struct netns *n)
{
	fetch_and_add(&n->refcnt, 1);
}

void netns_put(struct netns *n)
{
	if (!n || fetch_and_add(&n->refcnt, -1UL) != 1)
		return;
	KASSERT(n != &init_netns);
	ns_put(n->owner);       /* a user namespace: its end takes no lock */
	kfree(n);
}

uint32_t netns_lo_flags(struct netns *n)
{
	return READ_ONCE(n->lo_up) ? LO_IFF : IFF_LOOPBACK;
}
