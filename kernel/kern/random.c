/*
 * The kernel's random numbers: getrandom(2), /dev/random,
 * /dev/urandom and AT_RANDOM.
 *
 * One ChaCha20 generator per CPU (RFC 8439's block function, written from
 * the RFC), keyed at boot from RDSEED or RDRAND when the CPU has them and
 * from the jitter of the time-stamp counter always.  A request takes
 * blocks from the running CPU's generator with interrupts off (no lock:
 * the state is per CPU), and when it is done the generator takes a new key
 * from its own output ("fast key erasure"), so what was handed out cannot
 * be recomputed from the state afterwards.  Every key change also mixes in
 * a fresh TSC reading.
 */
#include "kernel.h"
#include "cpu.h"
#include "errno.h"
#include "random.h"
#include "signal.h"
#include "syscall.h"
#include "usercopy.h"
#include "x86.h"

struct rng {
	uint32_t key[8];
	uint64_t counter;
	uint32_t nonce[2];
	bool seeded;
} __cacheline_aligned;

static struct rng rngs[NCPU_MAX];     /* per CPU, touched with interrupts off */

static inline uint32_t rotl(uint32_t v, int c)
{
	return (v << c) | (v >> (32 - c));
}

#define QR(a, b, c, d)                               \
	do {                                         \
		a += b; d ^= a; d = rotl(d, 16);     \
		c += d; b ^= c; b = rotl(b, 12);     \
		a += b; d ^= a; d = rotl(d, 8);      \
		c += d; b ^= c; b = rotl(b, 7);      \
	} while (0)

/* One 64-byte ChaCha20 block of (key, counter, nonce). */
static void chacha20_block(const uint32_t key[8], uint64_t counter, const uint32_t nonce[2],
			   uint32_t out[16])
{
	uint32_t x[16] = {
		0x61707865, 0x3320646e, 0x79622d32, 0x6b206574,
		key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
		(uint32_t)counter, (uint32_t)(counter >> 32), nonce[0], nonce[1],
	};
	uint32_t in[16];
	memcpy(in, x, sizeof(in));
	for (int i = 0; i < 10; i++) {
		QR(x[0], x[4], x[8], x[12]);
		QR(x[1], x[5], x[9], x[13]);
		QR(x[2], x[6], x[10], x[14]);
		QR(x[3], x[7], x[11], x[15]);
		QR(x[0], x[5], x[10], x[15]);
		QR(x[1], x[6], x[11], x[12]);
		QR(x[2], x[7], x[8], x[13]);
		QR(x[3], x[4], x[9], x[14]);
	}
	for (int i = 0; i < 16; i++)
		out[i] = x[i] + in[i];
}

/* A hardware random word (RDSEED, else RDRAND) in *v; false if none. */
static bool hw_random(uint64_t *v)
{
	uint32_t a, b, c, d;
	cpuid(7, 0, &a, &b, &c, &d);
	bool rdseed = b & (1u << 18);
	cpuid(1, 0, &a, &b, &c, &d);
	bool rdrand = c & (1u << 30);
	for (int tries = 0; tries < 10; tries++) {
		unsigned char ok = 0;
		if (rdseed)
			__asm__ __volatile__("rdseed %0; setc %1" : "=r"(*v), "=qm"(ok));
		else if (rdrand)
			__asm__ __volatile__("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok));
		else
			return false;
		if (ok)
			return true;
	}
	return false;
}

/* Timing jitter: the low bits of TSC differences around tiny delays. */
static uint64_t tsc_jitter(void)
{
	uint64_t acc = 0;
	for (int i = 0; i < 64; i++) {
		uint64_t t0 = rdtsc();
		for (volatile int k = 0; k < (int)(t0 & 15); k++)
			;
		acc = (acc << 1 | acc >> 63) ^ (rdtsc() - t0) ^ t0;
	}
	return acc;
}

/* Keys CPU c's generator (interrupts off, on CPU c). */
static void seed_locked(struct rng *r, int c)
{
	KASSERT(!intr_enabled());
	for (int i = 0; i < 8; i += 2) {
		uint64_t v = 0;
		if (!hw_random(&v))
			v = 0;
		v ^= tsc_jitter() * 0x9e3779b97f4a7c15ULL;
		r->key[i] ^= (uint32_t)v;
		r->key[i + 1] ^= (uint32_t)(v >> 32);
	}
	r->nonce[0] = (uint32_t)c;
	r->nonce[1] = (uint32_t)rdtsc();
	r->counter = 0;
	r->seeded = true;
}

/* New key from the generator's own output, plus a TSC reading. */
static void rekey_locked(struct rng *r)
{
	KASSERT(!intr_enabled());
	uint32_t blk[16];
	chacha20_block(r->key, r->counter++, r->nonce, blk);
	memcpy(r->key, blk, sizeof(r->key));
	r->key[0] ^= (uint32_t)rdtsc();
	memset(blk, 0, sizeof(blk));
}

/* Up to 256 bytes into buf from this CPU's generator. */
static void rng_fill(void *buf, size_t n)
{
	KASSERT_OP(n, <=, 256);
	uint64_t s = intr_disable();
	int c = cpu_id();
	struct rng *r = &rngs[c];
	if (!r->seeded)
		seed_locked(r, c);
	uint8_t *p = buf;
	while (n > 0) {
		uint32_t blk[16];
		chacha20_block(r->key, r->counter++, r->nonce, blk);
		size_t k = MIN(n, sizeof(blk));
		memcpy(p, blk, k);
		memset(blk, 0, sizeof(blk));
		p += k;
		n -= k;
	}
	rekey_locked(r);
	intr_restore(s);
}

void random_bytes(void *buf, size_t n)
{
	uint8_t *p = buf;
	while (n > 0) {
		size_t k = MIN(n, (size_t)256);
		rng_fill(p, k);
		p += k;
		n -= k;
	}
}

ssize_t random_read_user(void *ubuf, size_t n)
{
	uint8_t buf[256];
	size_t done = 0;
	n = MIN(n, (size_t)0x7ffff000);
	while (done < n) {
		/* Linux: a signal ends a long read at a page boundary */
		if (done && (((uintptr_t)ubuf + done) & 4095) == 0 && signal_pending())
			break;
		/* never across a page: a fault then stops at its first byte */
		uintptr_t at = (uintptr_t)ubuf + done;
		size_t k = MIN(MIN(n - done, sizeof(buf)), 4096 - (at & 4095));
		rng_fill(buf, k);
		int r = copyout((char *)ubuf + done, buf, k);
		memset(buf, 0, k);
		if (r < 0)
			return done ? (ssize_t)done : -EFAULT;
		done += k;
	}
	return (ssize_t)done;
}

#define GRND_NONBLOCK 1
#define GRND_RANDOM   2
#define GRND_INSECURE 4

/* getrandom(buf, len, flags): the generator is seeded at its first use,
 * so nothing ever blocks. */
SYSCALL(318, getrandom)
{
	unsigned flags = (unsigned)a2;
	if (flags & ~(unsigned)(GRND_NONBLOCK | GRND_RANDOM | GRND_INSECURE))
		return -EINVAL;
	if ((flags & (GRND_INSECURE | GRND_RANDOM)) == (GRND_INSECURE | GRND_RANDOM))
		return -EINVAL;
	if (a1 == 0)
		return 0;
	return random_read_user((void *)a0, a1);
}
