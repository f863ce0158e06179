/*
 * Capabilities for the tests: <linux/capability.h>'s ABI (not in musl's
 * headers) and the three sets as 64-bit masks.
 */
#ifndef CAPUTIL_H
#define CAPUTIL_H

#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define _LINUX_CAPABILITY_VERSION_1 0x19980330u
#define _LINUX_CAPABILITY_VERSION_2 0x20071026u
#define _LINUX_CAPABILITY_VERSION_3 0x20080522u
struct __user_cap_header_struct {
	uint32_t version;
	int pid;
};
struct __user_cap_data_struct {
	uint32_t effective, permitted, inheritable;
};

#define CAP_CHOWN 0
#define CAP_DAC_OVERRIDE 1
#define CAP_DAC_READ_SEARCH 2
#define CAP_FOWNER 3
#define CAP_FSETID 4
#define CAP_KILL 5
#define CAP_SETGID 6
#define CAP_SETUID 7
#define CAP_SETPCAP 8
#define CAP_IPC_LOCK 14
#define CAP_IPC_OWNER 15
#define CAP_SYS_NICE 23
#define CAP_MKNOD 27
#define CAP(c) (1ULL << (c))

/* A process's effective, permitted and inheritable sets. */
struct sets {
	uint64_t eff, prm, inh;
};

/* capget of pid (0: the caller): 0, or -1 with errno. */
static inline int get_sets(pid_t pid, struct sets *s)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, pid };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) != 0)
		return -1;
	s->eff = d[0].effective | (uint64_t)d[1].effective << 32;
	s->prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	s->inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

/* capset of the caller: 0, or -1 with errno. */
static inline int set_sets(const struct sets *s)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = {
		{ (uint32_t)s->eff, (uint32_t)s->prm, (uint32_t)s->inh },
		{ (uint32_t)(s->eff >> 32), (uint32_t)(s->prm >> 32), (uint32_t)(s->inh >> 32) },
	};
	return (int)syscall(SYS_capset, &h, d);
}

#endif
