/*
 * The key retention service (keys.h; Linux keyrings(7)): add_key(2),
 * request_key(2), keyctl(2).
 *
 * A key has a random positive serial, a type ("keyring", "user", "logon"),
 * a description, an owner uid and gid, a permission mask (possessor, user,
 * group, other: six bits each) and a payload: bytes for user and logon
 * keys, a list of referenced links for a keyring.  A key is possessed
 * when it can be reached, through searchable keys, from the caller's
 * thread, process or session keyring (or, with no session keyring, its
 * user-session keyring); the possessor bits then add to the others.
 *
 * Every key counts against its owner's quota (keys and bytes: the
 * description, the payload, 4 bytes per link of a keyring), root's quotas
 * being separate (/proc/sys/kernel/keys/).  Revoked keys keep their links
 * (their payload is gone); invalidated keys are unlinked from every keyring
 * at once (the sweep Linux's garbage collector makes); expired keys stay
 * linked until unlinked.  request_key finds existing keys only: there is
 * no /sbin/request-key upcall, so a missing key is ENOKEY.
 *
 * Lock key: (k) keys_lock, [I] immutable after creation.  The lock is
 * held across a whole operation but never across a user copy: arguments
 * are copied in first, results copied out after it is dropped.  Under it
 * only kmalloc/kfree.
 */
#include "kernel.h"
#include "errno.h"
#include "keys.h"
#include "kmem.h"
#include "lock.h"
#include "proc.h"
#include "random.h"
#include "sbuf.h"
#include "syscall.h"
#include "timekeep.h"
#include "usercopy.h"
#include "vfs.h"

enum { KT_KEYRING, KT_USER, KT_LOGON, KT_NTYPES };
static const char *const type_names[KT_NTYPES] = { "keyring", "user", "logon" };

#define KEY_TYPE_MAX 32              /* a type name with its NUL */
#define KEY_DESC_MAX 4096            /* a description with its NUL */
#define USER_PAYLOAD_MAX 32767
#define ADD_PAYLOAD_MAX (1024 * 1024 - 1)
#define UPDATE_PAYLOAD_MAX 4096
#define LINK_BYTES 4                 /* quota per keyring link (Linux KEYQUOTA_LINK_BYTES) */
#define SEARCH_DEPTH 6               /* nested keyrings searched */
#define NSERIAL_HASH 256
#define GID_NONE 0xffffffffu

/* Permissions (Linux values). */
#define KEY_POS_VIEW 0x01000000u
#define KEY_POS_READ 0x02000000u
#define KEY_POS_WRITE 0x04000000u
#define KEY_POS_SEARCH 0x08000000u
#define KEY_POS_LINK 0x10000000u
#define KEY_POS_SETATTR 0x20000000u
#define KEY_POS_ALL 0x3f000000u
#define KEY_USR_VIEW 0x00010000u
#define KEY_USR_READ 0x00020000u
#define KEY_USR_ALL 0x003f0000u
#define KEY_PERM_ALL 0x3f3f3f3fu
enum { NEED_VIEW = 1, NEED_READ = 2, NEED_WRITE = 4, NEED_SEARCH = 8, NEED_LINK = 0x10,
       NEED_SETATTR = 0x20 };

/* Special ids. */
enum { SPEC_THREAD = -1, SPEC_PROCESS = -2, SPEC_SESSION = -3, SPEC_USER = -4,
       SPEC_USER_SESSION = -5, SPEC_GROUP = -6, SPEC_REQKEY_AUTH = -7, SPEC_REQUESTOR = -8 };

/* Key flags (k). */
#define KF_INSTANTIATED 0x01
#define KF_REVOKED 0x02
#define KF_INVALID 0x04
#define KF_INQUOTA 0x08
#define KF_UIDRING 0x10          /* a user or user-session keyring */

struct key_user {
	uint32_t uid;                /* [I] */
	int nkeys, nikeys;           /* (k) keys owned, of them instantiated */
	int qnkeys;                  /* (k) keys charged to the quota */
	uint64_t qnbytes;            /* (k) bytes charged */
	struct key *uid_ring;        /* (k) its user keyring, not referenced (cleared at free) */
	struct key *uid_ses;         /* (k) its user-session keyring, likewise */
	struct key_user *next;       /* (k) */
};

struct key {
	int32_t serial;              /* [I] */
	int type;                    /* [I] KT_* */
	int usage;                   /* (k) references: links, holders, the creator's */
	uint32_t uid, gid, perm;     /* (k) */
	uint32_t flags;              /* (k) KF_* */
	uint64_t expiry;             /* (k) monotonic ns, 0: never */
	char *desc;                  /* [I] kmalloc'd */
	uint32_t desclen;            /* [I] */
	uint32_t quotalen;           /* (k) bytes charged to user */
	struct key_user *user;       /* (k) the owner's quota record */
	char *data;                  /* (k) user/logon payload (kmalloc), NULL when revoked */
	uint32_t datalen;            /* (k) payload bytes; a keyring: LINK_BYTES per link */
	struct key **links;          /* (k) a keyring's keys, each referenced */
	int nlinks, cap;             /* (k) */
	struct key *hnext;           /* (k) serial hash chain */
	struct key *dnext;           /* (k) the free worklist */
};

static struct simple_lock keys_lock = SIMPLE_LOCK_INIT(LC_KEYS);
static struct key *serial_hash[NSERIAL_HASH];   /* (k) */
static struct key_user *key_users;              /* (k) */

volatile int key_quota_maxkeys = 200;
volatile int key_quota_maxbytes = 20000;
volatile int key_quota_root_maxkeys = 1000000;
volatile int key_quota_root_maxbytes = 25000000;
volatile int key_gc_delay = 300;
volatile int key_persistent_expiry = 259200;

/* ---- keys, quotas, references ---- */

static struct key *key_find_locked(int32_t serial)
{
	for (struct key *k = serial_hash[(uint32_t)serial % NSERIAL_HASH]; k; k = k->hnext)
		if (k->serial == serial)
			return k;
	return NULL;
}

/* uid's quota record, made if missing: NULL when out of memory.  keys_lock held. */
static struct key_user *key_user_get_locked(uint32_t uid)
{
	for (struct key_user *u = key_users; u; u = u->next)
		if (u->uid == uid)
			return u;
	struct key_user *u = kzalloc(sizeof(*u));
	if (!u)
		return NULL;
	u->uid = uid;
	u->next = key_users;
	key_users = u;
	return u;
}

/* Frees u once it owns no key.  keys_lock held. */
static void key_user_drop_locked(struct key_user *u)
{
	if (u->nkeys > 0)
		return;
	for (struct key_user **pp = &key_users; *pp; pp = &(*pp)->next)
		if (*pp == u) {
			*pp = u->next;
			break;
		}
	kfree(u);
}

/* May u be charged dkeys more keys and dbytes more bytes?  keys_lock held. */
static bool quota_fits_locked(struct key_user *u, int dkeys, int64_t dbytes)
{
	bool root = u->uid == 0;
	int64_t maxk = root ? READ_ONCE(key_quota_root_maxkeys) : READ_ONCE(key_quota_maxkeys);
	int64_t maxb = root ? READ_ONCE(key_quota_root_maxbytes) : READ_ONCE(key_quota_maxbytes);
	return (int64_t)u->qnkeys + dkeys <= maxk && (int64_t)u->qnbytes + dbytes <= maxb;
}

/* Charges k for len payload bytes in place of what it had (Linux
 * key_payload_reserve): 0 or -EDQUOT.  keys_lock held. */
static int key_reserve_locked(struct key *k, uint32_t len)
{
	int64_t delta = (int64_t)(k->desclen + len) - k->quotalen;
	if (!(k->flags & KF_INQUOTA))
		return 0;
	if (delta > 0 && !quota_fits_locked(k->user, 0, delta))
		return -EDQUOT;
	k->user->qnbytes += delta;
	k->quotalen = k->desclen + len;
	return 0;
}

static bool key_expired(const struct key *k)
{
	return k->expiry && time_monotonic_ns() >= k->expiry;
}

/* 0, or why k cannot be used: invalidated, revoked, expired. */
static int key_state_err(const struct key *k)
{
	if (k->flags & KF_INVALID)
		return -ENOKEY;
	if (k->flags & KF_REVOKED)
		return -EKEYREVOKED;
	if (key_expired(k))
		return -EKEYEXPIRED;
	return 0;
}

/* A fresh serial: random, positive, at least 3, unused.  keys_lock held. */
static int32_t serial_new_locked(void)
{
	for (;;) {
		uint32_t r;
		random_bytes(&r, sizeof(r));
		int32_t s = (int32_t)(r & 0x7fffffff);
		if (s >= 3 && !key_find_locked(s))
			return s;
	}
}

static void hash_remove_locked(struct key *k)
{
	for (struct key **pp = &serial_hash[(uint32_t)k->serial % NSERIAL_HASH]; *pp;
	     pp = &(*pp)->hnext)
		if (*pp == k) {
			*pp = k->hnext;
			return;
		}
}

/* Clears the quota registry's pointers to k (a user keyring).  keys_lock held. */
static void registry_forget_locked(struct key *k)
{
	for (struct key_user *u = key_users; u; u = u->next) {
		if (u->uid_ring == k)
			u->uid_ring = NULL;
		if (u->uid_ses == k)
			u->uid_ses = NULL;
	}
}

/* Frees k (usage 0) and whatever only its links kept alive.  keys_lock held. */
static void key_destroy_locked(struct key *k)
{
	struct key *work = k;
	k->dnext = NULL;
	while ((k = work) != NULL) {
		work = k->dnext;
		for (int i = 0; i < k->nlinks; i++) {
			struct key *l = k->links[i];
			if (--l->usage == 0) {
				l->dnext = work;
				work = l;
			}
		}
		hash_remove_locked(k);
		if (k->flags & KF_UIDRING)
			registry_forget_locked(k);
		struct key_user *u = k->user;
		if (k->flags & KF_INQUOTA) {
			u->qnkeys--;
			u->qnbytes -= k->quotalen;
		}
		u->nkeys--;
		if (k->flags & KF_INSTANTIATED)
			u->nikeys--;
		key_user_drop_locked(u);
		kfree(k->links);
		kfree(k->data);
		kfree(k->desc);
		kfree(k);
	}
}

static void key_get_locked(struct key *k)
{
	k->usage++;
}

/* Drops a reference (k may be NULL).  keys_lock held. */
static void key_put_locked(struct key *k)
{
	if (k && --k->usage == 0)
		key_destroy_locked(k);
}

/*
 * A new key (one reference, the caller's), charged to uid: description
 * desc (copied), no payload yet.  NULL with *err -ENOMEM or -EDQUOT.
 * keys_lock held.
 */
static struct key *key_alloc_locked(int type, const char *desc, uint32_t uid, uint32_t gid,
				    uint32_t perm, int *err)
{
	struct key_user *u = key_user_get_locked(uid);
	size_t dl = strlen(desc);
	struct key *k = u ? kzalloc(sizeof(*k)) : NULL;
	char *d = k ? kmalloc(dl + 1, 0) : NULL;
	*err = -ENOMEM;
	if (d && !quota_fits_locked(u, 1, (int64_t)dl))
		*err = -EDQUOT;
	else if (d)
		*err = 0;
	if (*err) {
		kfree(d);
		kfree(k);
		if (u)
			key_user_drop_locked(u);
		return NULL;
	}
	memcpy(d, desc, dl + 1);
	k->desc = d;
	k->desclen = (uint32_t)dl;
	k->type = type;
	k->usage = 1;
	k->uid = uid;
	k->gid = gid;
	k->perm = perm;
	k->user = u;
	k->flags = KF_INQUOTA;
	k->quotalen = (uint32_t)dl;
	u->nkeys++;
	u->qnkeys++;
	u->qnbytes += dl;
	k->serial = serial_new_locked();
	struct key **b = &serial_hash[(uint32_t)k->serial % NSERIAL_HASH];
	k->hnext = *b;
	*b = k;
	return k;
}

static void key_mark_instantiated_locked(struct key *k)
{
	if (!(k->flags & KF_INSTANTIATED)) {
		k->flags |= KF_INSTANTIATED;
		k->user->nikeys++;
	}
}

/* Gives user/logon key k the payload buf (len bytes, kmalloc'd; taken on
 * success): 0 or -EDQUOT.  keys_lock held. */
static int key_set_payload_locked(struct key *k, char *buf, uint32_t len)
{
	int r = key_reserve_locked(k, len);
	if (r < 0)
		return r;
	kfree(k->data);
	k->data = buf;
	k->datalen = len;
	key_mark_instantiated_locked(k);
	return 0;
}

/* ---- credentials and permissions ---- */

static uint32_t cur_fsuid(void) { return READ_ONCE(curproc()->cred.fsuid); }
static uint32_t cur_fsgid(void) { return READ_ONCE(curproc()->cred.fsgid); }

/* Does the caller hold every permission in need (NEED_*) on k, with the
 * possessor bits if poss?  No capability overrides (as Linux).  keys_lock held. */
static bool key_perm_locked(const struct key *k, bool poss, uint32_t need)
{
	uint32_t kp;
	if (k->uid == cur_fsuid())
		kp = k->perm >> 16;
	else if (k->gid != GID_NONE && vfs_in_group(k->gid, false))
		kp = k->perm >> 8;
	else
		kp = k->perm;
	if (poss)
		kp |= k->perm >> 24;
	return (kp & need & 0x3f) == need;
}

/* ---- keyrings ---- */

static int link_index(const struct key *ring, const struct key *k)
{
	for (int i = 0; i < ring->nlinks; i++)
		if (ring->links[i] == k)
			return i;
	return -1;
}

/* The link of ring with k's type and description (Linux's index key), or -1. */
static int link_same_name(const struct key *ring, const struct key *k)
{
	for (int i = 0; i < ring->nlinks; i++) {
		const struct key *l = ring->links[i];
		if (l->type == k->type && l->desclen == k->desclen && !strcmp(l->desc, k->desc))
			return i;
	}
	return -1;
}

/* Would linking keyring k into ring make a cycle (-EDEADLK) or a nest
 * deeper than the searches go (-ELOOP)?  0 if not.  keys_lock held. */
static int cycle_check_locked(const struct key *k, const struct key *ring, int depth)
{
	if (k == ring)
		return -EDEADLK;
	if (depth >= SEARCH_DEPTH)
		return -ELOOP;
	for (int i = 0; i < k->nlinks; i++) {
		const struct key *l = k->links[i];
		int r = l->type == KT_KEYRING ? cycle_check_locked(l, ring, depth + 1) : 0;
		if (r)
			return r;
	}
	return 0;
}

/* Room for one more link in ring: 0, -ENOMEM or -EDQUOT.  keys_lock held. */
static int ring_grow_locked(struct key *ring)
{
	int r = key_reserve_locked(ring, ring->datalen + LINK_BYTES);
	if (r < 0)
		return r;
	if (ring->nlinks == ring->cap) {
		int cap = ring->cap ? ring->cap * 2 : 8;
		struct key **n = kmalloc(sizeof(*n) * (size_t)cap, 0);
		if (!n) {
			key_reserve_locked(ring, ring->datalen);
			return -ENOMEM;
		}
		if (ring->nlinks)
			memcpy(n, ring->links, sizeof(*n) * (size_t)ring->nlinks);
		kfree(ring->links);
		ring->links = n;
		ring->cap = cap;
	}
	ring->datalen += LINK_BYTES;
	return 0;
}

/*
 * Links k into keyring ring (Linux key_link): nothing if it is there; a
 * link with k's type and description is replaced.  0, -ENOTDIR, -EDEADLK,
 * -ELOOP, -EDQUOT, -ENOMEM.  keys_lock held.
 */
static int keyring_link_locked(struct key *ring, struct key *k)
{
	if (ring->type != KT_KEYRING)
		return -ENOTDIR;
	if (link_index(ring, k) >= 0)
		return 0;
	if (k->type == KT_KEYRING) {
		int r = cycle_check_locked(k, ring, 0);
		if (r)
			return r;
	}
	key_get_locked(k);
	int i = link_same_name(ring, k);
	if (i >= 0) {
		struct key *old = ring->links[i];
		ring->links[i] = k;
		key_put_locked(old);
		return 0;
	}
	int r = ring_grow_locked(ring);
	if (r < 0) {
		k->usage--;                /* the caller holds another */
		return r;
	}
	ring->links[ring->nlinks++] = k;
	return 0;
}

/* Removes link i of ring, dropping its reference.  keys_lock held. */
static void ring_remove_at_locked(struct key *ring, int i)
{
	struct key *k = ring->links[i];
	ring->links[i] = ring->links[--ring->nlinks];
	ring->datalen -= LINK_BYTES;
	key_reserve_locked(ring, ring->datalen);
	key_put_locked(k);
}

/* 0, -ENOTDIR, -ENOENT (k not linked).  keys_lock held. */
static int keyring_unlink_locked(struct key *ring, struct key *k)
{
	if (ring->type != KT_KEYRING)
		return -ENOTDIR;
	int i = link_index(ring, k);
	if (i < 0)
		return -ENOENT;
	ring_remove_at_locked(ring, i);
	return 0;
}

/* Drops every link of keyring ring.  The caller holds a reference to ring. */
static void keyring_clear_locked(struct key *ring)
{
	while (ring->nlinks > 0)
		ring_remove_at_locked(ring, ring->nlinks - 1);
}

/* Unlinks k from every keyring (invalidation's sweep).  The caller holds a
 * reference to k.  keys_lock held. */
static void unlink_everywhere_locked(struct key *k)
{
	for (int b = 0; b < NSERIAL_HASH; b++)
		for (struct key *r = serial_hash[b]; r; r = r->hnext) {
			int i;
			while (r->type == KT_KEYRING && (i = link_index(r, k)) >= 0)
				ring_remove_at_locked(r, i);
		}
}

/* ---- searching ---- */

struct ksearch {
	int type;                    /* KT_*, or -1: by serial */
	const char *desc;            /* by type: the description */
	const struct key *target;    /* by serial: the key */
	bool state;                  /* revoked and expired keys give their error */
	bool skip_expired;           /* expired keys are passed over silently */
	bool poss;                   /* the keyrings searched are possessed */
	struct key *found;
	int err;                     /* why a match was refused (0: none met yet) */
};

/* A match was refused for err: kept unless a weightier one (a key's state
 * over a permission) was noted before. */
static void note_err(struct ksearch *s, int err)
{
	int rank_new = err == -EACCES ? 1 : 2, rank_old = !s->err ? 0 : s->err == -EACCES ? 1 : 2;
	if (rank_new >= rank_old)
		s->err = err;
}

static bool key_matches(const struct key *k, const struct ksearch *s)
{
	if (s->type < 0)
		return k == s->target;
	return k->type == s->type && !strcmp(k->desc, s->desc);
}

/* k matches s: is it usable (searchable, valid when s->state)?  keys_lock held. */
static bool key_accept_locked(struct key *k, struct ksearch *s)
{
	if (k->flags & KF_INVALID)
		return false;
	int e = s->state ? key_state_err(k) : 0;
	if (e == -EKEYEXPIRED && s->skip_expired)
		return false;
	if (e) {
		note_err(s, e);
		return false;
	}
	if (!key_perm_locked(k, s->poss, NEED_SEARCH)) {
		note_err(s, -EACCES);
		return false;
	}
	s->found = k;
	return true;
}

/* Searches keyring ring (at nesting depth) and the keyrings below it:
 * the keys directly in it first, then each nested keyring.  keys_lock held. */
static bool search_ring_locked(struct key *ring, struct ksearch *s, int depth)
{
	if (ring->type != KT_KEYRING || !key_perm_locked(ring, s->poss, NEED_SEARCH)) {
		note_err(s, -EACCES);
		return false;
	}
	if (depth == 0 && key_matches(ring, s) && key_accept_locked(ring, s))
		return true;
	for (int i = 0; i < ring->nlinks; i++)
		if (key_matches(ring->links[i], s) && key_accept_locked(ring->links[i], s))
			return true;
	if (depth + 1 >= SEARCH_DEPTH)
		return false;
	for (int i = 0; i < ring->nlinks; i++) {
		struct key *l = ring->links[i];
		if (l->type == KT_KEYRING && !(l->flags & (KF_REVOKED | KF_INVALID)) &&
		    key_perm_locked(l, s->poss, NEED_SEARCH) && search_ring_locked(l, s, depth + 1))
			return true;
	}
	return false;
}

/* The caller's user keyrings held (which: 0 user, 1 user-session), or NULL. */
static struct key **held_uid_ring(struct proc *p, int which)
{
	return which ? &p->key_uid_ses : &p->key_uid;
}

/*
 * Searches the caller's thread, process and session keyrings (or, with no
 * session keyring, the user-session keyring it holds).  Not found, s->err
 * is as Linux's search_cred_keyrings_rcu has it: ENOKEY if one of them
 * held no match at all, else the reason a match was refused.  keys_lock held.
 */
static bool search_process_locked(struct ksearch *s)
{
	struct proc *p = curproc();
	struct key *roots[3] = { curthread()->key_thread, p->key_process, p->key_session };
	if (!roots[2])
		roots[2] = *held_uid_ring(p, 1);
	s->poss = true;
	bool none = false;
	int err = 0;
	for (int i = 0; i < 3; i++) {
		if (!roots[i])
			continue;
		s->err = 0;
		if (search_ring_locked(roots[i], s, 0))
			return true;
		if (s->err)
			err = s->err;
		else
			none = true;
	}
	s->err = none || !err ? -ENOKEY : err;
	return false;
}

/* Is k possessed by the caller?  keys_lock held. */
static bool possessed_locked(struct key *k)
{
	struct ksearch s = { .type = -1, .target = k };
	return search_process_locked(&s);
}

/* ---- the special keyrings ---- */

/* A new keyring owned by the caller (one reference).  keys_lock held. */
static struct key *keyring_new_locked(const char *desc, uint32_t uid, uint32_t gid,
				      uint32_t perm, int *err)
{
	struct key *k = key_alloc_locked(KT_KEYRING, desc, uid, gid, perm, err);
	if (k)
		key_mark_instantiated_locked(k);
	return k;
}

/* Sets *slot (a keyring pointer of a process or thread) to a new keyring
 * named desc unless it has one.  0 or -errno.  keys_lock held. */
static int install_ring_locked(struct key **slot, const char *desc, uint32_t perm)
{
	if (*slot)
		return 0;
	int err;
	struct key *k = keyring_new_locked(desc, cur_fsuid(), cur_fsgid(), perm, &err);
	if (!k)
		return err;
	*slot = k;
	return 0;
}

/* The caller's user (which 0) or user-session (1) keyring, found in the
 * quota registry or made, and held by its process from now on (so the
 * same one comes back while a process of the user holds it).  keys_lock held. */
static struct key *uid_ring_locked(int which, int *err)
{
	struct proc *p = curproc();
	uint32_t uid = READ_ONCE(p->cred.ruid);
	struct key **held = held_uid_ring(p, which);
	if (*held && (*held)->uid == uid && !((*held)->flags & (KF_REVOKED | KF_INVALID)))
		return *held;
	struct key_user *u = key_user_get_locked(uid);
	if (!u) {
		*err = -ENOMEM;
		return NULL;
	}
	struct key **reg = which ? &u->uid_ses : &u->uid_ring;
	struct key *k = *reg;
	if (k && !(k->flags & (KF_REVOKED | KF_INVALID))) {
		key_get_locked(k);
	} else {
		char name[32];
		ksnprintf(name, sizeof(name), which ? "_uid_ses.%u" : "_uid.%u", uid);
		k = keyring_new_locked(name, uid, GID_NONE, (KEY_POS_ALL & ~KEY_POS_SETATTR) | KEY_USR_ALL, err);
		if (!k)
			return NULL;     /* key_alloc_locked dropped u if it was new */
		k->flags |= KF_UIDRING;
		*reg = k;
		if (which) {
			struct key *ur = uid_ring_locked(0, err);   /* linked into the session one */
			if (ur)
				keyring_link_locked(k, ur);
		}
	}
	struct key *old = *held;
	*held = k;
	key_put_locked(old);
	return k;
}

/* Sets p's session keyring to k (referenced by the caller, taken). */
static void session_set_locked(struct proc *p, struct key *k)
{
	struct key *old = p->key_session;
	p->key_session = k;
	key_put_locked(old);
}

#define LK_CREATE 0x1        /* make a missing thread/process/session keyring */
#define LK_UNLINK 0x2        /* no state check (unlinking a revoked or expired key) */

/* The keyring a special id names for the caller: NULL with *err.  keys_lock held. */
static struct key *special_locked(int32_t id, int lflags, int *err)
{
	struct proc *p = curproc();
	struct thread *t = curthread();
	bool create = lflags & LK_CREATE;
	*err = -ENOKEY;
	switch (id) {
	case SPEC_THREAD:
		if (create && (*err = install_ring_locked(&t->key_thread, "_tid", KEY_POS_ALL | KEY_USR_VIEW)))
			return NULL;
		return t->key_thread;
	case SPEC_PROCESS:
		if (create && (*err = install_ring_locked(&p->key_process, "_pid", KEY_POS_ALL | KEY_USR_VIEW)))
			return NULL;
		return p->key_process;
	case SPEC_SESSION:
		if (!p->key_session && create) {
			if ((*err = install_ring_locked(&p->key_session, "_ses",
							KEY_POS_ALL | KEY_USR_VIEW | KEY_USR_READ)))
				return NULL;
		} else if (!p->key_session) {
			struct key *us = uid_ring_locked(1, err);
			if (!us)
				return NULL;
			key_get_locked(us);
			session_set_locked(p, us);
		}
		return p->key_session;
	case SPEC_USER:
		return uid_ring_locked(0, err);
	case SPEC_USER_SESSION:
		return uid_ring_locked(1, err);
	case SPEC_REQKEY_AUTH:
	case SPEC_REQUESTOR:
		return NULL;             /* no request in progress: ENOKEY */
	default:
		*err = -EINVAL;          /* the group keyring and unknown ids */
		return NULL;
	}
}

/*
 * The key id names for the caller (Linux lookup_user_key): special ids
 * (lflags LK_CREATE makes missing ones), or a serial.  Unless LK_UNLINK,
 * an invalidated, revoked or expired key fails; then the caller must hold
 * the permissions need.  *poss: whether it is possessed.  NULL with *err.
 * keys_lock held.
 */
static struct key *lookup_locked(int32_t id, int lflags, uint32_t need, bool *poss, int *err)
{
	struct key *k;
	bool p = true;
	if (id < 0) {
		k = special_locked(id, lflags, err);
	} else {
		k = id > 0 ? key_find_locked(id) : NULL;
		*err = id > 0 ? -ENOKEY : -EINVAL;
		if (k)
			p = possessed_locked(k);
	}
	if (!k)
		return NULL;
	int e = (lflags & LK_UNLINK) ? 0 : key_state_err(k);
	if (!e && need && !key_perm_locked(k, p, need))
		e = -EACCES;
	if (e) {
		*err = e;
		return NULL;
	}
	if (poss)
		*poss = p;
	return k;
}

/* ---- copying arguments in ---- */

/* The key type name at u: its index (KT_*; KT_NTYPES: a type we do not
 * have), or -EFAULT, -EINVAL (empty or 32 bytes or more), -EPERM (a name
 * starting with '.'). */
static int type_in(uint64_t u)
{
	char buf[KEY_TYPE_MAX];
	size_t len;
	int r = copyinstr(buf, (const void *)u, sizeof(buf), &len);
	if (r == -ENAMETOOLONG)
		return -EINVAL;
	if (r < 0)
		return r;
	if (buf[0] == '\0')
		return -EINVAL;
	if (buf[0] == '.')
		return -EPERM;
	for (int i = 0; i < KT_NTYPES; i++)
		if (!strcmp(buf, type_names[i]))
			return i;
	return KT_NTYPES;
}

/* The string at u (at most max bytes with its NUL) into a kmalloc'd *out:
 * 0, -EFAULT, -EINVAL (too long), -ENOMEM.  The caller kfrees *out. */
static int str_in(uint64_t u, size_t max, char **out)
{
	char *buf = kmalloc(max, 0);
	*out = NULL;
	if (!buf)
		return -ENOMEM;
	int r = copyinstr(buf, (const void *)u, max, NULL);
	if (r < 0) {
		kfree(buf);
		return r == -ENAMETOOLONG ? -EINVAL : r;
	}
	*out = buf;
	return 0;
}

/* len bytes at u into a kmalloc'd *out (NULL if len is 0): 0, -EFAULT, -ENOMEM. */
static int payload_in(uint64_t u, size_t len, char **out)
{
	*out = NULL;
	if (len == 0)
		return 0;
	char *buf = kmalloc(len, 0);
	if (!buf)
		return -ENOMEM;
	if (copyin(buf, (const void *)u, len) < 0) {
		kfree(buf);
		return -EFAULT;
	}
	*out = buf;
	return 0;
}

/* Is this payload/description acceptable for a new key of type? (Linux's
 * preparse and vet_description): 0 or -EINVAL. */
static int key_args_check(int type, const char *desc, size_t plen)
{
	if (!desc || !desc[0])
		return -EINVAL;
	if (type == KT_KEYRING)
		return plen ? -EINVAL : 0;
	if (plen == 0 || plen > USER_PAYLOAD_MAX)
		return -EINVAL;
	if (type == KT_LOGON) {
		const char *c = strchr(desc, ':');
		if (!c || c == desc)
			return -EINVAL;
	}
	return 0;
}

/* ---- add_key ---- */

struct add_args {
	int type;
	char *desc;                  /* NULL: none given */
	char *payload;               /* kmalloc'd, taken by the key */
	size_t plen;
	int32_t ring;
};

/* Updates the user/logon key of ring named like a's in place: its serial,
 * 0 if there is none, or -errno.  keys_lock held. */
static int add_update_locked(struct key *ring, bool poss, struct add_args *a)
{
	for (int i = 0; i < ring->nlinks; i++) {
		struct key *k = ring->links[i];
		if (k->type != a->type || strcmp(k->desc, a->desc) || (k->flags & (KF_REVOKED | KF_INVALID)))
			continue;
		if (!key_perm_locked(k, poss, NEED_WRITE))
			return -EACCES;
		int r = key_set_payload_locked(k, a->payload, (uint32_t)a->plen);
		if (r < 0)
			return r;
		a->payload = NULL;
		return k->serial;
	}
	return 0;
}

/* A new key from a, linked into ring: its serial or -errno.  keys_lock held. */
static int add_new_locked(struct key *ring, struct add_args *a)
{
	uint32_t perm = KEY_POS_VIEW | KEY_POS_SEARCH | KEY_POS_LINK | KEY_POS_SETATTR |
			KEY_POS_WRITE | KEY_USR_VIEW;
	if (a->type != KT_LOGON)
		perm |= KEY_POS_READ;
	int err;
	struct key *k = key_alloc_locked(a->type, a->desc, cur_fsuid(), cur_fsgid(), perm, &err);
	if (!k)
		return err;
	if (a->type == KT_KEYRING) {
		key_mark_instantiated_locked(k);
	} else if ((err = key_set_payload_locked(k, a->payload, (uint32_t)a->plen)) == 0) {
		a->payload = NULL;
	}
	if (err == 0)
		err = keyring_link_locked(ring, k);
	int serial = k->serial;
	key_put_locked(k);           /* the keyring's link keeps it */
	return err ? err : serial;
}

/* add_key once the arguments are in: the key's serial or -errno. */
static int add_key_locked(struct add_args *a)
{
	bool poss;
	int err;
	struct key *ring = lookup_locked(a->ring, LK_CREATE, NEED_WRITE, &poss, &err);
	if (!ring)
		return err;
	if (a->type == KT_NTYPES)
		return -ENODEV;
	if (ring->type != KT_KEYRING)
		return -ENOTDIR;
	err = key_args_check(a->type, a->desc, a->plen);
	if (err)
		return err;
	if (a->type != KT_KEYRING && (err = add_update_locked(ring, poss, a)) != 0)
		return err;
	return add_new_locked(ring, a);
}

SYSCALL(248, add_key)
{
	struct add_args a = { .plen = a3, .ring = (int32_t)a4 };
	if (a3 > ADD_PAYLOAD_MAX)
		return -EINVAL;
	a.type = type_in(a0);
	if (a.type < 0)
		return a.type;
	int r = a1 ? str_in(a1, KEY_DESC_MAX, &a.desc) : 0;
	if (!r && a.desc && a.desc[0] == '.' && a.type == KT_KEYRING)
		r = -EPERM;
	if (!r)
		r = payload_in(a2, a3, &a.payload);
	if (!r) {
		simple_lock(&keys_lock);
		r = add_key_locked(&a);
		simple_unlock(&keys_lock);
	}
	kfree(a.payload);
	kfree(a.desc);
	return r;
}

/* ---- request_key ---- */

/* Searches the caller's keyrings for (type, desc), linking what it finds
 * into destination keyring dest (0: none).  keys_lock held. */
static int request_locked(int type, const char *desc, int32_t dest)
{
	struct key *d = NULL;
	int err;
	if (dest && !(d = lookup_locked(dest, LK_CREATE, NEED_WRITE, NULL, &err)))
		return err;
	if (type == KT_NTYPES)
		return -ENOKEY;
	struct ksearch s = { .type = type, .desc = desc, .state = true, .skip_expired = true };
	if (!search_process_locked(&s))
		return s.err;            /* no upcall: nothing is constructed */
	if (d && (err = keyring_link_locked(d, s.found)) < 0)
		return err;
	return s.found->serial;
}

SYSCALL(249, request_key)
{
	int type = type_in(a0);
	if (type < 0)
		return type;
	char *desc = NULL, *callout = NULL;
	int r = str_in(a1, KEY_DESC_MAX, &desc);
	if (!r && a2)
		r = str_in(a2, 4096, &callout);
	if (!r) {
		simple_lock(&keys_lock);
		r = request_locked(type, desc, (int32_t)a3);
		simple_unlock(&keys_lock);
	}
	kfree(callout);
	kfree(desc);
	return r;
}

/* ---- keyctl ---- */

enum {
	KEYCTL_GET_KEYRING_ID = 0, KEYCTL_JOIN_SESSION_KEYRING = 1, KEYCTL_UPDATE = 2,
	KEYCTL_REVOKE = 3, KEYCTL_CHOWN = 4, KEYCTL_SETPERM = 5, KEYCTL_DESCRIBE = 6,
	KEYCTL_CLEAR = 7, KEYCTL_LINK = 8, KEYCTL_UNLINK = 9, KEYCTL_SEARCH = 10,
	KEYCTL_READ = 11, KEYCTL_INSTANTIATE = 12, KEYCTL_NEGATE = 13,
	KEYCTL_SET_REQKEY_KEYRING = 14, KEYCTL_SET_TIMEOUT = 15, KEYCTL_ASSUME_AUTHORITY = 16,
	KEYCTL_GET_SECURITY = 17, KEYCTL_SESSION_TO_PARENT = 18, KEYCTL_REJECT = 19,
	KEYCTL_INSTANTIATE_IOV = 20, KEYCTL_INVALIDATE = 21, KEYCTL_GET_PERSISTENT = 22,
};

/* Request-key defaults (KEYCTL_SET_REQKEY_KEYRING). */
enum { REQKEY_NO_CHANGE = -1, REQKEY_DEFAULT = 0, REQKEY_THREAD = 1, REQKEY_PROCESS = 2,
       REQKEY_GROUP = 6, REQKEY_REQUESTOR = 7 };

/* Runs fn(a..) under keys_lock. */
#define LOCKED(call) ({                    \
	simple_lock(&keys_lock);               \
	int64_t r_ = (call);                   \
	simple_unlock(&keys_lock);             \
	r_; })

static int64_t kc_get_id_locked(int32_t id, bool create)
{
	int err;
	struct key *k = lookup_locked(id, create ? LK_CREATE : 0, NEED_SEARCH, NULL, &err);
	return k ? k->serial : err;
}

/* A keyring named name the caller may join: not a user keyring, valid,
 * owned by the caller or searchable by it.  keys_lock held. */
static struct key *find_named_ring_locked(const char *name)
{
	for (int b = 0; b < NSERIAL_HASH; b++)
		for (struct key *k = serial_hash[b]; k; k = k->hnext)
			if (k->type == KT_KEYRING && !(k->flags & KF_UIDRING) && !key_state_err(k) &&
			    !strcmp(k->desc, name) && key_perm_locked(k, false, NEED_SEARCH))
				return k;
	return NULL;
}

/* JOIN_SESSION_KEYRING: name NULL makes an anonymous session keyring. */
static int64_t kc_join_locked(const char *name)
{
	struct proc *p = curproc();
	struct key *k = name ? find_named_ring_locked(name) : NULL;
	int err;
	if (k) {
		key_get_locked(k);
	} else {
		k = keyring_new_locked(name ? name : "_ses", cur_fsuid(), cur_fsgid(),
				       KEY_POS_ALL | KEY_USR_VIEW | KEY_USR_READ |
				       (name ? 0x00100000u : 0), &err);
		if (!k)
			return err;
	}
	session_set_locked(p, k);
	return k->serial;
}

static int64_t kc_join(uint64_t uname)
{
	char *name = NULL;
	int r = uname ? str_in(uname, KEY_DESC_MAX, &name) : 0;
	if (!r && name && name[0] == '.')
		r = -EPERM;
	if (!r)
		r = (int)LOCKED(kc_join_locked(name && name[0] ? name : NULL));
	kfree(name);
	return r;
}

/* UPDATE with the payload in buf (plen bytes; taken on success). */
static int64_t kc_update_locked(int32_t id, char **buf, size_t plen)
{
	int err;
	struct key *k = lookup_locked(id, 0, NEED_WRITE, NULL, &err);
	if (!k)
		return err;
	if (k->type == KT_KEYRING)
		return -EOPNOTSUPP;
	if (plen == 0 || plen > USER_PAYLOAD_MAX)
		return -EINVAL;
	err = key_set_payload_locked(k, *buf, (uint32_t)plen);
	if (!err)
		*buf = NULL;
	return err;
}

static int64_t kc_update(int32_t id, uint64_t upayload, size_t plen)
{
	if (plen > UPDATE_PAYLOAD_MAX)
		return -EINVAL;
	char *buf;
	int r = payload_in(upayload, plen, &buf);
	if (!r)
		r = (int)LOCKED(kc_update_locked(id, &buf, plen));
	kfree(buf);
	return r;
}

/* REVOKE: write or setattr permission; the payload (a keyring's links) goes. */
static int64_t kc_revoke_locked(int32_t id)
{
	int err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_WRITE, NULL, &err);
	if (!k && err == -EACCES)
		k = lookup_locked(id, LK_CREATE, NEED_SETATTR, NULL, &err);
	if (!k)
		return err;
	k->flags |= KF_REVOKED;
	key_get_locked(k);
	if (k->type == KT_KEYRING) {
		keyring_clear_locked(k);
	} else {
		kfree(k->data);
		k->data = NULL;
		k->datalen = 0;
		key_reserve_locked(k, 0);
	}
	key_put_locked(k);
	return 0;
}

/* Moves k's charge to uid's quota: 0, -EDQUOT, -ENOMEM.  keys_lock held. */
static int key_move_quota_locked(struct key *k, uint32_t uid)
{
	struct key_user *nu = key_user_get_locked(uid), *ou = k->user;
	if (!nu)
		return -ENOMEM;
	bool q = k->flags & KF_INQUOTA;
	if (q && !quota_fits_locked(nu, 1, k->quotalen)) {
		key_user_drop_locked(nu);
		return -EDQUOT;
	}
	nu->nkeys++;
	ou->nkeys--;
	if (k->flags & KF_INSTANTIATED) {
		nu->nikeys++;
		ou->nikeys--;
	}
	if (q) {
		nu->qnkeys++;
		nu->qnbytes += k->quotalen;
		ou->qnkeys--;
		ou->qnbytes -= k->quotalen;
	}
	k->user = nu;
	key_user_drop_locked(ou);
	return 0;
}

static int64_t kc_chown_locked(int32_t id, uint32_t uid, uint32_t gid)
{
	if (uid == (uint32_t)-1 && gid == (uint32_t)-1)
		return 0;
	int err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_SETATTR, NULL, &err);
	if (!k)
		return err;
	if (!cap_capable(CAP_SYS_ADMIN) && ((uid != (uint32_t)-1 && uid != k->uid) ||
	    (gid != (uint32_t)-1 && gid != k->gid && !vfs_in_group(gid, false))))
		return -EACCES;
	if (uid != (uint32_t)-1 && uid != k->uid) {
		if ((err = key_move_quota_locked(k, uid)) < 0)
			return err;
		k->uid = uid;
	}
	if (gid != (uint32_t)-1)
		k->gid = gid;
	return 0;
}

static int64_t kc_setperm_locked(int32_t id, uint32_t perm)
{
	if (perm & ~KEY_PERM_ALL)
		return -EINVAL;
	int err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_SETATTR, NULL, &err);
	if (!k)
		return err;
	if (k->uid != cur_fsuid() && !cap_capable(CAP_SYS_ADMIN))
		return -EACCES;
	k->perm = perm;
	return 0;
}

/* The text DESCRIBE returns for k ("type;uid;gid;perm;description"),
 * kmalloc'd into *out: its length with the NUL, or -ENOMEM. */
static int describe_text_locked(const struct key *k, char **out)
{
	size_t n = k->desclen + 64;
	char *b = kmalloc(n, 0);
	*out = b;
	if (!b)
		return -ENOMEM;
	int gid = k->gid == GID_NONE ? 65534 : (int)k->gid;
	return ksnprintf(b, n, "%s;%d;%d;%08x;%s", type_names[k->type], (int)k->uid, gid,
			k->perm, k->desc) + 1;
}

/* Copies the len bytes of buf out to (ubuf, ulen) as DESCRIBE and READ
 * do: all of them if they fit, else nothing; returns len (or -EFAULT, or
 * len itself when it is an error). */
static int64_t text_out(uint64_t ubuf, size_t ulen, const char *buf, int len)
{
	if (len < 0)
		return len;
	if (ubuf && len > 0 && (size_t)len <= ulen && copyout((void *)ubuf, buf, (size_t)len) < 0)
		return -EFAULT;
	return len;
}

static int64_t kc_describe(int32_t id, uint64_t ubuf, size_t ulen)
{
	char *text = NULL;
	int err;
	simple_lock(&keys_lock);
	struct key *k = lookup_locked(id, 0, NEED_VIEW, NULL, &err);
	int len = k ? describe_text_locked(k, &text) : err;
	simple_unlock(&keys_lock);
	int64_t r = text_out(ubuf, ulen, text, len);
	kfree(text);
	return r;
}

static int64_t kc_clear_locked(int32_t id)
{
	int err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_WRITE, NULL, &err);
	if (!k)
		return err;
	if (k->type != KT_KEYRING)
		return -ENOTDIR;
	key_get_locked(k);
	keyring_clear_locked(k);
	key_put_locked(k);
	return 0;
}

static int64_t kc_link_locked(int32_t id, int32_t ringid)
{
	int err;
	struct key *ring = lookup_locked(ringid, LK_CREATE, NEED_WRITE, NULL, &err);
	if (!ring)
		return err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_LINK, NULL, &err);
	if (!k)
		return err;
	return keyring_link_locked(ring, k);
}

static int64_t kc_unlink_locked(int32_t id, int32_t ringid)
{
	int err;
	struct key *ring = lookup_locked(ringid, 0, NEED_WRITE, NULL, &err);
	if (!ring)
		return err;
	struct key *k = lookup_locked(id, LK_UNLINK, 0, NULL, &err);
	if (!k)
		return err;
	return keyring_unlink_locked(ring, k);
}

/* SEARCH keyring ringid for (type, desc), linking the key into dest (0: none). */
static int64_t kc_search_locked(int32_t ringid, int type, const char *desc, int32_t dest)
{
	bool poss;
	int err;
	struct key *ring = lookup_locked(ringid, 0, NEED_SEARCH, &poss, &err);
	if (!ring)
		return err;
	if (ring->type != KT_KEYRING)
		return -ENOTDIR;
	struct key *d = NULL;
	if (dest && !(d = lookup_locked(dest, LK_CREATE, NEED_WRITE, NULL, &err)))
		return err;
	if (type == KT_NTYPES)
		return -ENOKEY;
	struct ksearch s = { .type = type, .desc = desc, .state = true, .poss = poss };
	if (!search_ring_locked(ring, &s, 0))
		return s.err ? s.err : -ENOKEY;
	if (d) {
		if (!key_perm_locked(s.found, poss, NEED_LINK))
			return -EACCES;
		if ((err = keyring_link_locked(d, s.found)) < 0)
			return err;
	}
	return s.found->serial;
}

static int64_t kc_search(int32_t ringid, uint64_t utype, uint64_t udesc, int32_t dest)
{
	int type = type_in(utype);
	if (type < 0)
		return type;
	char *desc;
	int r = str_in(udesc, KEY_DESC_MAX, &desc);
	if (!r)
		r = (int)LOCKED(kc_search_locked(ringid, type, desc, dest));
	kfree(desc);
	return r;
}

/* k's payload as READ returns it (a keyring: its serials), kmalloc'd into
 * *out: its length or -errno.  keys_lock held. */
static int read_payload_locked(const struct key *k, char **out)
{
	size_t n = k->type == KT_KEYRING ? sizeof(int32_t) * (size_t)k->nlinks : k->datalen;
	char *b = kmalloc(n ? n : 1, 0);
	*out = b;
	if (!b)
		return -ENOMEM;
	if (k->type != KT_KEYRING) {
		memcpy(b, k->data, n);
		return (int)n;
	}
	for (int i = 0; i < k->nlinks; i++)
		memcpy(b + 4 * i, &k->links[i]->serial, sizeof(int32_t));
	return (int)n;
}

/* READ: read permission, or possession (which needs search permission);
 * the key's state is checked after the permissions, as Linux does. */
static int read_locked(int32_t id, char **out)
{
	bool poss;
	int err;
	struct key *k = lookup_locked(id, LK_UNLINK, 0, &poss, &err);
	if (!k)
		return err;
	if (!key_perm_locked(k, poss, NEED_READ) && !poss)
		return -EACCES;
	if (k->type == KT_LOGON)
		return -EOPNOTSUPP;
	if ((err = key_state_err(k)) < 0)
		return err;
	return read_payload_locked(k, out);
}

static int64_t kc_read(int32_t id, uint64_t ubuf, size_t ulen)
{
	char *data = NULL;
	simple_lock(&keys_lock);
	int len = read_locked(id, &data);
	simple_unlock(&keys_lock);
	int64_t r = text_out(ubuf, ulen, data, len);
	kfree(data);
	return r;
}

static int64_t kc_reqkey_locked(int def)
{
	struct proc *p = curproc();
	int old = p->key_reqdef, err = 0;
	if (def == REQKEY_NO_CHANGE)
		return old;
	if (def < REQKEY_DEFAULT || def > REQKEY_REQUESTOR || def == REQKEY_GROUP)
		return -EINVAL;
	if (def == REQKEY_THREAD)
		err = install_ring_locked(&curthread()->key_thread, "_tid", KEY_POS_ALL | KEY_USR_VIEW);
	else if (def == REQKEY_PROCESS)
		err = install_ring_locked(&p->key_process, "_pid", KEY_POS_ALL | KEY_USR_VIEW);
	if (err)
		return err;
	p->key_reqdef = def;
	return old;
}

static int64_t kc_timeout_locked(int32_t id, uint32_t secs)
{
	int err;
	struct key *k = lookup_locked(id, LK_CREATE, NEED_SETATTR, NULL, &err);
	if (!k)
		return err;
	if (k->flags & (KF_REVOKED | KF_INVALID))
		return key_state_err(k);
	k->expiry = secs ? time_monotonic_ns() + (uint64_t)secs * 1000000000ull : 0;
	return 0;
}

static int64_t kc_security(int32_t id, uint64_t ubuf, size_t ulen)
{
	int err;
	simple_lock(&keys_lock);
	struct key *k = lookup_locked(id, 0, NEED_VIEW, NULL, &err);
	simple_unlock(&keys_lock);
	if (!k)
		return err;
	if (ubuf && ulen > 0 && copyout((void *)ubuf, "", 1) < 0)
		return -EFAULT;
	return 1;                    /* no security module: an empty label */
}

/* May the caller give parent (referenced) its session keyring?  Linux's
 * rules: not init, single-threaded, the caller's effective ids in every
 * one of the parent's.  0 or -EPERM. */
static int parent_ok(struct proc *parent)
{
	struct cred *me = &curproc()->cred;
	simple_lock(&parent->lock);
	struct cred pc = parent->cred;
	simple_unlock(&parent->lock);
	if (parent->pid <= 1 || READ_ONCE(parent->nthreads) != 1)
		return -EPERM;
	if (pc.ruid != me->euid || pc.euid != me->euid || pc.suid != me->euid ||
	    pc.rgid != me->egid || pc.egid != me->egid || pc.sgid != me->egid)
		return -EPERM;
	return 0;
}

/* SESSION_TO_PARENT: the parent's session keyring becomes ours (at once). */
static int64_t kc_to_parent(void)
{
	simple_lock(&proctree_lock);
	struct proc *parent = curproc()->parent;
	if (parent)
		proc_ref(parent);
	simple_unlock(&proctree_lock);
	if (!parent)
		return -EPERM;
	int r = parent_ok(parent);
	simple_lock(&keys_lock);
	int err;
	struct key *s = lookup_locked(SPEC_SESSION, 0, NEED_LINK, NULL, &err);
	if (!s)
		r = err;
	else if (!r && s->uid != READ_ONCE(curproc()->cred.euid))
		r = -EPERM;
	struct key *ps = parent->key_session;
	if (!r && s != ps && ps && ps->uid != READ_ONCE(curproc()->cred.euid))
		r = -EPERM;
	if (!r && s != ps && !parent->key_exited) {
		key_get_locked(s);
		session_set_locked(parent, s);
	}
	simple_unlock(&keys_lock);
	proc_unref(parent);
	return r;
}

static int64_t kc_invalidate_locked(int32_t id)
{
	int err;
	struct key *k = lookup_locked(id, 0, NEED_SEARCH, NULL, &err);
	if (!k)
		return err;
	k->flags |= KF_INVALID;
	key_get_locked(k);
	unlink_everywhere_locked(k);
	key_put_locked(k);
	return 0;
}

SYSCALL(250, keyctl)
{
	int32_t id = (int32_t)a1;
	switch (a0) {
	case KEYCTL_GET_KEYRING_ID: return LOCKED(kc_get_id_locked(id, a2 != 0));
	case KEYCTL_JOIN_SESSION_KEYRING: return kc_join(a1);
	case KEYCTL_UPDATE: return kc_update(id, a2, a3);
	case KEYCTL_REVOKE: return LOCKED(kc_revoke_locked(id));
	case KEYCTL_CHOWN: return LOCKED(kc_chown_locked(id, (uint32_t)a2, (uint32_t)a3));
	case KEYCTL_SETPERM: return LOCKED(kc_setperm_locked(id, (uint32_t)a2));
	case KEYCTL_DESCRIBE: return kc_describe(id, a2, a3);
	case KEYCTL_CLEAR: return LOCKED(kc_clear_locked(id));
	case KEYCTL_LINK: return LOCKED(kc_link_locked(id, (int32_t)a2));
	case KEYCTL_UNLINK: return LOCKED(kc_unlink_locked(id, (int32_t)a2));
	case KEYCTL_SEARCH: return kc_search(id, a2, a3, (int32_t)a4);
	case KEYCTL_READ: return kc_read(id, a2, a3);
	case KEYCTL_INSTANTIATE:
	case KEYCTL_INSTANTIATE_IOV:
	case KEYCTL_NEGATE:
	case KEYCTL_REJECT:
		return -EPERM;           /* no key is under construction */
	case KEYCTL_SET_REQKEY_KEYRING: return LOCKED(kc_reqkey_locked((int)a1));
	case KEYCTL_SET_TIMEOUT: return LOCKED(kc_timeout_locked(id, (uint32_t)a2));
	case KEYCTL_ASSUME_AUTHORITY: return id < 0 ? -EINVAL : id == 0 ? 0 : -ENOKEY;
	case KEYCTL_GET_SECURITY: return kc_security(id, a2, a3);
	case KEYCTL_SESSION_TO_PARENT: return kc_to_parent();
	case KEYCTL_INVALIDATE: return LOCKED(kc_invalidate_locked(id));
	default:
		return -EOPNOTSUPP;      /* GET_PERSISTENT (no persistent keyrings), DH, PKEY, ... */
	}
}

/* ---- processes and threads ---- */

void keys_fork(struct proc *child, struct proc *parent)
{
	simple_lock(&keys_lock);
	struct key *held[3] = { parent->key_session, parent->key_uid, parent->key_uid_ses };
	for (int i = 0; i < 3; i++)
		if (held[i])
			key_get_locked(held[i]);
	child->key_session = held[0];
	child->key_uid = held[1];
	child->key_uid_ses = held[2];
	child->key_reqdef = parent->key_reqdef;
	simple_unlock(&keys_lock);
}

void keys_thread_clone(struct thread *t, struct thread *parent)
{
	if (!READ_ONCE(parent->key_thread))   /* the caller is parent: set by itself only */
		return;
	simple_lock(&keys_lock);
	install_ring_locked(&t->key_thread, "_tid", KEY_POS_ALL | KEY_USR_VIEW);   /* best effort */
	simple_unlock(&keys_lock);
}

void keys_exec(struct proc *p, struct thread *t)
{
	simple_lock(&keys_lock);
	key_put_locked(t->key_thread);
	t->key_thread = NULL;
	key_put_locked(p->key_process);
	p->key_process = NULL;
	simple_unlock(&keys_lock);
}

void keys_thread_exit(struct thread *t)
{
	if (!READ_ONCE(t->key_thread))  /* only the thread itself sets it */
		return;
	simple_lock(&keys_lock);
	key_put_locked(t->key_thread);
	t->key_thread = NULL;
	simple_unlock(&keys_lock);
}

void keys_proc_exit(struct proc *p)
{
	simple_lock(&keys_lock);
	p->key_exited = true;        /* SESSION_TO_PARENT installs nothing now */
	struct key **slots[4] = { &p->key_session, &p->key_process, &p->key_uid, &p->key_uid_ses };
	for (int i = 0; i < 4; i++) {
		key_put_locked(*slots[i]);
		*slots[i] = NULL;
	}
	simple_unlock(&keys_lock);
}

/* ---- /proc ---- */

/* The expiry column of /proc/keys. */
static void format_expiry(struct sbuf *sb, const struct key *k)
{
	uint64_t now = time_monotonic_ns();
	if (!k->expiry || now >= k->expiry) {
		sbuf_printf(sb, "%4s ", k->expiry ? "expd" : "perm");
		return;
	}
	uint64_t t = (k->expiry - now) / 1000000000ull;
	static const struct { uint64_t lim, div; char c; } u[] = {
		{ 60, 1, 's' }, { 3600, 60, 'm' }, { 86400, 3600, 'h' }, { 604800, 86400, 'd' },
		{ ~0ull, 604800, 'w' },
	};
	int i = 0;
	while (t >= u[i].lim)
		i++;
	char x[24];
	ksnprintf(x, sizeof(x), "%llu%c", (unsigned long long)(t / u[i].div), u[i].c);
	sbuf_printf(sb, "%4s ", x);
}

static void format_key(struct sbuf *sb, const struct key *k)
{
	int gid = k->gid == GID_NONE ? 65534 : (int)k->gid;
	sbuf_printf(sb, "%08x %c%c%c%c%c%c%c %5d ", k->serial,
		    (k->flags & KF_INSTANTIATED) ? 'I' : '-', (k->flags & KF_REVOKED) ? 'R' : '-',
		    '-', (k->flags & KF_INQUOTA) ? 'Q' : '-', '-', '-',
		    (k->flags & KF_INVALID) ? 'i' : '-', k->usage);
	format_expiry(sb, k);
	sbuf_printf(sb, "%08x %5d %5d %-9.9s %s", k->perm, (int)k->uid, gid, type_names[k->type],
		    k->desc);
	if (k->type == KT_KEYRING && k->nlinks == 0)
		sbuf_printf(sb, ": empty\n");
	else if (k->type == KT_KEYRING)
		sbuf_printf(sb, ": %d\n", k->nlinks);
	else if (k->flags & KF_REVOKED)
		sbuf_printf(sb, "\n");
	else
		sbuf_printf(sb, ": %u\n", k->datalen);
}

void keys_format(struct sbuf *sb)
{
	simple_lock(&keys_lock);
	for (int b = 0; b < NSERIAL_HASH; b++)
		for (struct key *k = serial_hash[b]; k; k = k->hnext)
			if (key_perm_locked(k, false, NEED_VIEW))
				format_key(sb, k);
	simple_unlock(&keys_lock);
}

void key_users_format(struct sbuf *sb)
{
	simple_lock(&keys_lock);
	for (struct key_user *u = key_users; u; u = u->next) {
		bool root = u->uid == 0;
		sbuf_printf(sb, "%5u: %5d %d/%d %d/%d %llu/%d\n", u->uid, u->nkeys, u->nkeys, u->nikeys,
			    u->qnkeys, root ? key_quota_root_maxkeys : key_quota_maxkeys,
			    (unsigned long long)u->qnbytes,
			    root ? key_quota_root_maxbytes : key_quota_maxbytes);
	}
	simple_unlock(&keys_lock);
}
