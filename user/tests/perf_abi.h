/*
 * perf_event_open(2) ABI for the perf_* tests (include/uapi/linux/perf_event.h
 * is not in musl's headers): the attr, the constants and a few helpers.
 */
#ifndef PERF_ABI_H
#define PERF_ABI_H

#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_perf_event_open
#define SYS_perf_event_open 298
#endif

enum { T_HARDWARE, T_SOFTWARE, T_TRACEPOINT, T_HW_CACHE, T_RAW, T_BREAKPOINT };
enum {
	SW_CPU_CLOCK, SW_TASK_CLOCK, SW_PAGE_FAULTS, SW_CONTEXT_SWITCHES, SW_CPU_MIGRATIONS,
	SW_PAGE_FAULTS_MIN, SW_PAGE_FAULTS_MAJ, SW_ALIGNMENT_FAULTS, SW_EMULATION_FAULTS,
	SW_DUMMY, SW_BPF_OUTPUT, SW_CGROUP_SWITCHES, SW_MAX,
};

#define S_IP        (1u << 0)
#define S_TID       (1u << 1)
#define S_TIME      (1u << 2)
#define S_ADDR      (1u << 3)
#define S_READ      (1u << 4)
#define S_CALLCHAIN (1u << 5)
#define S_ID        (1u << 6)
#define S_CPU       (1u << 7)
#define S_PERIOD    (1u << 8)
#define S_STREAM_ID (1u << 9)

#define F_TIME_ENABLED (1u << 0)
#define F_TIME_RUNNING (1u << 1)
#define F_ID           (1u << 2)
#define F_GROUP        (1u << 3)
#define F_LOST         (1u << 4)

#define A_DISABLED       (1ULL << 0)
#define A_INHERIT        (1ULL << 1)
#define A_EXCLUDE_USER   (1ULL << 4)
#define A_EXCLUDE_KERNEL (1ULL << 5)
#define A_EXCLUDE_HV     (1ULL << 6)
#define A_MMAP           (1ULL << 8)
#define A_COMM           (1ULL << 9)
#define A_FREQ           (1ULL << 10)
#define A_ENABLE_ON_EXEC (1ULL << 12)
#define A_TASK           (1ULL << 13)
#define A_WATERMARK      (1ULL << 14)
#define A_SAMPLE_ID_ALL  (1ULL << 18)

#define FLAG_FD_NO_GROUP (1u << 0)
#define FLAG_FD_OUTPUT   (1u << 1)
#define FLAG_PID_CGROUP  (1u << 2)
#define FLAG_FD_CLOEXEC  (1u << 3)

#define IOC_ENABLE     0x2400
#define IOC_DISABLE    0x2401
#define IOC_REFRESH    0x2402
#define IOC_RESET      0x2403
#define IOC_PERIOD     0x40082404
#define IOC_SET_OUTPUT 0x2405
#define IOC_ID         0x80082407
#define IOC_FLAG_GROUP 1

#define REC_MMAP   1
#define REC_LOST   2
#define REC_COMM   3
#define REC_EXIT   4
#define REC_FORK   7
#define REC_SAMPLE 9
#define CONTEXT_USER ((uint64_t)-512)

#define ATTR_SIZE_VER0 64
#define ATTR_SIZE_VER5 112
#define ATTR_SIZE_VER8 136

struct pattr {
	uint32_t type, size;
	uint64_t config;
	uint64_t sample_period;
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags;
	uint32_t wakeup_events;
	uint32_t bp_type;
	uint64_t config1, config2;
	uint64_t branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack, rsvd2;
	uint32_t aux_sample_size, aux_action;
	uint64_t sig_data, config3;
};

/* struct perf_event_mmap_page: the fields the tests use. */
struct pmmap {
	uint32_t version, compat_version, lock, index;
	int64_t offset;
	uint64_t time_enabled, time_running, capabilities;
	uint16_t pmc_width, time_shift;
	uint32_t time_mult;
	uint64_t time_offset, time_zero;
	uint32_t size, rsvd1;
	uint64_t time_cycles, time_mask;
	uint8_t rsvd[116 * 8];
	volatile uint64_t data_head, data_tail, data_offset, data_size;
};

struct prec {
	uint32_t type;
	uint16_t misc, size;
};

static inline long perf_open(struct pattr *a, int pid, int cpu, int group, unsigned long flags)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
}

/* A software event counting for user and kernel (root) or user only. */
static inline void pattr_sw(struct pattr *a, uint64_t config, int user_only)
{
	memset(a, 0, sizeof(*a));
	a->type = T_SOFTWARE;
	a->size = sizeof(*a);
	a->config = config;
	if (user_only)
		a->flags |= A_EXCLUDE_KERNEL | A_EXCLUDE_HV;
}

static inline uint64_t perf_read1(int fd)
{
	uint64_t v = ~0ULL;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		return ~0ULL;
	return v;
}

static inline void perf_spin_ms(unsigned ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t end = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + ms * 1000000ULL;
	for (;;) {
		for (volatile int i = 0; i < 10000; i++)
			;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec >= end)
			break;
	}
}

#endif
