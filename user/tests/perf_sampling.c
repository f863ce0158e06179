#define _GNU_SOURCE
/* perf_event_open(2) sampling: the mmap ring buffer, PERF_RECORD_SAMPLE
 * fields and callchains, LOST, FORK/EXIT/COMM records, poll, the O_ASYNC
 * overflow signal, REFRESH, SET_OUTPUT, CPU-wide sampling. */
#include "utest.h"
#include "perf_abi.h"
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>

#define DATA_PAGES 8
#define ST_ALL (S_IP | S_TID | S_TIME | S_CPU | S_PERIOD | S_ID | S_STREAM_ID | S_CALLCHAIN)

extern char __executable_start[], etext[];

struct ring {
	int fd;
	struct pmmap *up;
	char *data;
	size_t pages;
	uint64_t size;
};

static int ring_open(struct ring *r, struct pattr *a, int pid, int cpu, size_t data_pages)
{
	r->fd = (int)perf_open(a, pid, cpu, -1, FLAG_FD_CLOEXEC);
	if (r->fd < 0)
		return -1;
	long pg = sysconf(_SC_PAGESIZE);
	r->pages = 1 + data_pages;
	void *m = mmap(NULL, r->pages * (size_t)pg, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (m == MAP_FAILED) {
		close(r->fd);
		return -1;
	}
	r->up = m;
	r->data = (char *)m + pg;
	r->size = data_pages * (uint64_t)pg;
	return 0;
}

static void ring_close(struct ring *r)
{
	munmap(r->up, r->pages * (size_t)sysconf(_SC_PAGESIZE));
	close(r->fd);
}

/* Copies the next record (up to max bytes) out of the ring and consumes it;
 * its size, or 0 if the ring is empty. */
static size_t ring_next(struct ring *r, void *out, size_t max)
{
	uint64_t head = __atomic_load_n(&r->up->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->up->data_tail;
	if (tail == head)
		return 0;
	struct prec h;
	for (size_t i = 0; i < sizeof(h); i++)
		((char *)&h)[i] = r->data[(tail + i) % r->size];
	size_t n = h.size < max ? h.size : max;
	for (size_t i = 0; i < n; i++)
		((char *)out)[i] = r->data[(tail + i) % r->size];
	__atomic_store_n(&r->up->data_tail, tail + h.size, __ATOMIC_RELEASE);
	return h.size ? h.size : 8;
}

struct sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id, stream_id;
	uint32_t cpu, res;
	uint64_t period;
	uint64_t nr;
	uint64_t ips[];
};

static uint32_t rec_type(const uint64_t *buf)
{
	return (uint32_t)buf[0];                 /* the header's type: its low half */
}

static volatile uint64_t sink;

static __attribute__((noinline)) void spin_here(unsigned ms)
{
	uint64_t end = ut_now_ns() + ms * 1000000ULL;
	while (ut_now_ns() < end)
		for (int i = 0; i < 20000; i++)
			sink += (uint64_t)i;
}

static void sampling_attr(struct pattr *a, uint64_t config, uint64_t st)
{
	pattr_sw(a, config, 1);
	a->sample_period = 1000000;                  /* 1 ms */
	a->sample_type = st;
	a->wakeup_events = 1;
}

UT_TEST(samples_carry_ip_tid_time_cpu_period_id_callchain)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, ST_ALL);
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	T_EXPECT_EQ(r.up->data_offset, (uint64_t)sysconf(_SC_PAGESIZE));
	T_EXPECT_EQ(r.up->data_size, r.size);
	uint64_t id = 0;
	T_OK(ioctl(r.fd, IOC_ID, &id));
	uint64_t buf[512];
	int samples = 0, in_text = 0, chains = 0, bad = 0;
	uint64_t last_time = 0;
	uint64_t end = ut_now_ns() + 3000ULL * 1000000ULL;
	while (samples < 10 && ut_now_ns() < end) {
		spin_here(20);
		size_t n;
		while ((n = ring_next(&r, buf, sizeof(buf))) != 0) {
			struct prec *h = (struct prec *)buf;
			if (h->type != REC_SAMPLE)
				continue;
			struct sample *s = (struct sample *)(h + 1);
			samples++;
			if (s->pid != (uint32_t)getpid() || s->tid != (uint32_t)syscall(SYS_gettid))
				bad |= 1;
			if (s->id != id || s->stream_id != id)
				bad |= 2;
			if (s->cpu >= 1024 || s->period < 1000000)
				bad |= 4;
			if (s->time < last_time)
				bad |= 8;
			last_time = s->time;
			if (s->ip >= (uint64_t)__executable_start && s->ip < (uint64_t)etext)
				in_text++;
			if (s->nr >= 2 && s->nr < 200) {
				uint64_t i = 0;
				while (i < s->nr && s->ips[i] != CONTEXT_USER)
					i++;
				if (i + 1 < s->nr && s->ips[i + 1] == s->ip)
					chains++;
			}
		}
	}
	T_EXPECT(samples >= 10);
	T_EXPECT_EQ(bad, 0);
	T_EXPECT(in_text * 2 >= samples);             /* mostly in spin_here */
	T_EXPECT(chains * 2 >= samples);              /* user context, starting at the ip */
	ut_diag("%d samples, %d in the program text, %d user callchains", samples, in_text, chains);
	ring_close(&r);
}

UT_TEST(frequency_mode_samples)
{
	struct pattr a;
	sampling_attr(&a, SW_CPU_CLOCK, S_IP | S_PERIOD);
	a.flags |= A_FREQ;
	a.sample_period = 200;                       /* sample_freq, Hz */
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	int samples = 0;
	uint64_t buf[64];
	uint64_t end = ut_now_ns() + 3000ULL * 1000000ULL;
	while (samples < 3 && ut_now_ns() < end) {
		spin_here(20);
		while (ring_next(&r, buf, sizeof(buf)))
			samples += rec_type(buf) == REC_SAMPLE;
	}
	T_EXPECT(samples >= 3);
	ring_close(&r);
}

UT_TEST(poll_reports_pollin_at_wakeup_and_pollhup_without_buffer)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_IP);
	a.wakeup_events = 2;
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	struct pollfd p = { r.fd, POLLIN, 0 };
	int got = 0;
	uint64_t end = ut_now_ns() + 3000ULL * 1000000ULL;
	while (!got && ut_now_ns() < end) {
		spin_here(10);
		p.revents = 0;
		if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
			got = 1;
	}
	T_EXPECT(got);
	ring_close(&r);
	/* A counting event (no buffer): POLLHUP, as Linux. */
	pattr_sw(&a, SW_TASK_CLOCK, 1);
	int fd = T_OK(perf_open(&a, 0, -1, -1, 0));
	p.fd = fd;
	p.revents = 0;
	T_EXPECT_EQ(poll(&p, 1, 0), 1);
	T_EXPECT(p.revents & POLLHUP);
	close(fd);
}

static volatile int spin_stop;
static volatile int spin_tid;

static void *spinner(void *arg)
{
	(void)arg;
	spin_tid = (int)syscall(SYS_gettid);
	uint64_t end = ut_now_ns() + 5000ULL * 1000000ULL;
	while (!spin_stop && ut_now_ns() < end)
		sink++;
	return NULL;
}

UT_TEST(blocking_poll_and_epoll_wake_at_a_sample_of_another_thread)
{
	spin_stop = 0;
	spin_tid = 0;
	pthread_t th;
	T_ASSERT(pthread_create(&th, NULL, spinner, NULL) == 0);
	while (!spin_tid)
		sched_yield();
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_IP | S_TID);
	struct ring r;
	T_ASSERT(ring_open(&r, &a, spin_tid, -1, DATA_PAGES) == 0);
	struct pollfd p = { r.fd, POLLIN, 0 };
	T_EXPECT_EQ(poll(&p, 1, 3000), 1);
	T_EXPECT(p.revents & POLLIN);
	uint64_t buf[64];
	while (ring_next(&r, buf, sizeof(buf)))
		;
	int ep = T_OK(epoll_create1(EPOLL_CLOEXEC));
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 7 };
	T_OK(epoll_ctl(ep, EPOLL_CTL_ADD, r.fd, &e));
	struct epoll_event out;
	T_EXPECT_EQ(epoll_wait(ep, &out, 1, 3000), 1);
	T_EXPECT_EQ(out.data.u64, 7);
	spin_stop = 1;
	pthread_join(th, NULL);
	/* Its thread is gone: POLLHUP. */
	p.revents = 0;
	T_EXPECT_EQ(poll(&p, 1, 1000), 1);
	T_EXPECT(p.revents & POLLHUP);
	close(ep);
	ring_close(&r);
}

UT_TEST(full_buffer_counts_lost_records)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, ST_ALL);
	a.read_format = F_LOST;
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, 1) == 0);
	uint64_t v[2] = { 0, 0 };
	uint64_t end = ut_now_ns() + 8000ULL * 1000000ULL;
	while (ut_now_ns() < end) {
		spin_here(20);
		if (read(r.fd, v, sizeof(v)) == 16 && v[1] > 0)
			break;
	}
	T_EXPECT(v[1] > 0);
	/* Consume everything; the next record written is a LOST one. */
	uint64_t buf[512];
	while (ring_next(&r, buf, sizeof(buf)))
		;
	int lost = 0;
	end = ut_now_ns() + 3000ULL * 1000000ULL;
	while (!lost && ut_now_ns() < end) {
		spin_here(10);
		size_t n;
		while ((n = ring_next(&r, buf, sizeof(buf))) != 0)
			if (rec_type(buf) == REC_LOST && buf[2] > 0)
				lost = 1;
	}
	T_EXPECT(lost);
	ring_close(&r);
}

static volatile int sigs, hup_sigs;

static void on_sig(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sigs++;
	if (si->si_code == POLL_HUP)
		hup_sigs++;
}

UT_TEST(overflow_signal_through_fasync_and_refresh_limit)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGRTMIN + 1, &sa, NULL);
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_IP);
	a.flags |= A_DISABLED;
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	T_OK(fcntl(r.fd, F_SETOWN, getpid()));
	T_OK(fcntl(r.fd, F_SETSIG, SIGRTMIN + 1));
	T_OK(fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) | O_ASYNC));
	sigs = hup_sigs = 0;
	T_OK(ioctl(r.fd, IOC_REFRESH, 3));           /* three overflows, then off */
	uint64_t end = ut_now_ns() + 4000ULL * 1000000ULL;
	while (!hup_sigs && ut_now_ns() < end)
		spin_here(10);
	T_EXPECT(sigs >= 1);
	T_EXPECT_EQ(hup_sigs, 1);
	/* Disabled now: no more samples arrive. */
	uint64_t buf[64];
	while (ring_next(&r, buf, sizeof(buf)))
		;
	int later = 0;
	spin_here(60);
	while (ring_next(&r, buf, sizeof(buf)))
		later += rec_type(buf) == REC_SAMPLE;
	T_EXPECT_EQ(later, 0);
	ring_close(&r);
	signal(SIGRTMIN + 1, SIG_DFL);
}

static int fork_spin_child(void *arg)
{
	(void)arg;
	spin_here(80);
	return 0;
}

UT_TEST(inherited_sampling_writes_fork_exit_and_child_samples)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_TID | S_ID | S_STREAM_ID);
	a.flags |= A_INHERIT | A_TASK | A_COMM | A_SAMPLE_ID_ALL;
	struct ring r;
	/* Linux maps no inherited per-task buffer: per task and CPU. */
	T_EXPECT(ring_open(&r, &a, 0, -1, DATA_PAGES) < 0);
	T_EXPECT_EQ(errno, EINVAL);
	cpu_set_t set, old;
	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	T_OK(sched_setaffinity(0, sizeof(set), &set));
	T_ASSERT(ring_open(&r, &a, 0, 0, DATA_PAGES) == 0);
	uint64_t id = 0;
	T_OK(ioctl(r.fd, IOC_ID, &id));
	pid_t pid = fork();
	T_ASSERT(pid >= 0);
	if (pid == 0)
		_exit(fork_spin_child(NULL));
	int st;
	waitpid(pid, &st, 0);
	T_EXPECT(UT_CHILD_OK(st));
	int fork_rec = 0, exit_rec = 0, child_samples = 0, bad_ids = 0;
	uint64_t buf[512];
	while (ring_next(&r, buf, sizeof(buf))) {
		struct prec *h = (struct prec *)buf;
		uint32_t *w = (uint32_t *)(h + 1);
		if (h->type == REC_FORK && w[0] == (uint32_t)pid && w[1] == (uint32_t)getpid() &&
		    w[2] == (uint32_t)pid && w[3] == (uint32_t)getpid())
			fork_rec++;
		if (h->type == REC_EXIT && w[0] == (uint32_t)pid && w[1] == (uint32_t)getpid())
			exit_rec++;
		if (h->type == REC_SAMPLE && w[0] == (uint32_t)pid) {
			child_samples++;
			uint64_t *q = (uint64_t *)(w + 2);
			/* ID: the parent event's (Linux's primary id). */
			if (q[0] != id) {
				if (!bad_ids)
					ut_diag("id %llu stream %llu parent %llu", (unsigned long long)q[0],
						(unsigned long long)q[1], (unsigned long long)id);
				bad_ids++;
			}
		}
	}
	T_EXPECT_EQ(fork_rec, 1);
	T_EXPECT_EQ(exit_rec, 1);
	T_EXPECT(child_samples >= 1);
	T_EXPECT_EQ(bad_ids, 0);
	ring_close(&r);
	sched_setaffinity(0, sizeof(old), &old);
}

UT_TEST(set_output_redirects_records_to_another_buffer)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_ID);
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	sampling_attr(&a, SW_CPU_CLOCK, S_ID);
	int fd2 = T_OK(perf_open(&a, 0, -1, -1, 0));
	T_ASSERT(fd2 >= 0);
	T_OK(ioctl(fd2, IOC_SET_OUTPUT, r.fd));
	uint64_t id1 = 0, id2 = 0;
	ioctl(r.fd, IOC_ID, &id1);
	ioctl(fd2, IOC_ID, &id2);
	int n1 = 0, n2 = 0;
	uint64_t buf[64];
	uint64_t end = ut_now_ns() + 3000ULL * 1000000ULL;
	while ((n1 < 2 || n2 < 2) && ut_now_ns() < end) {
		spin_here(10);
		while (ring_next(&r, buf, sizeof(buf))) {
			if (rec_type(buf) != REC_SAMPLE)
				continue;
			n1 += buf[1] == id1;
			n2 += buf[1] == id2;
		}
	}
	T_EXPECT(n1 >= 2);
	T_EXPECT(n2 >= 2);
	/* The redirected event cannot map a buffer of its own. */
	long pg = sysconf(_SC_PAGESIZE);
	T_EXPECT(mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, 0) == MAP_FAILED);
	T_OK(ioctl(fd2, IOC_SET_OUTPUT, -1L));
	close(fd2);
	ring_close(&r);
}

UT_TEST(cpu_wide_sampling_reports_that_cpu)
{
	if (geteuid() != 0) {
		ut_skip("CPU-wide events need root (CAP_PERFMON) at paranoid > 0");
		return;
	}
	cpu_set_t set, old;
	sched_getaffinity(0, sizeof(old), &old);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	T_OK(sched_setaffinity(0, sizeof(set), &set));
	struct pattr a;
	sampling_attr(&a, SW_CPU_CLOCK, S_CPU | S_TID);
	struct ring r;
	T_ASSERT(ring_open(&r, &a, -1, 0, DATA_PAGES) == 0);
	int samples = 0, wrong = 0, mine = 0;
	uint64_t buf[64];
	uint64_t end = ut_now_ns() + 3000ULL * 1000000ULL;
	while (mine < 2 && ut_now_ns() < end) {
		spin_here(10);
		while (ring_next(&r, buf, sizeof(buf))) {
			if (rec_type(buf) != REC_SAMPLE)
				continue;
			samples++;
			uint32_t *w = (uint32_t *)(buf + 1);
			wrong += w[2] != 0;
			mine += w[0] == (uint32_t)getpid();
		}
	}
	T_EXPECT(mine >= 2);
	T_EXPECT_EQ(wrong, 0);
	ring_close(&r);
	sched_setaffinity(0, sizeof(old), &old);
}

/* Finds the MMAP (v1) or MMAP2 record of addr in r; its file name in name. */
static int find_mmap(struct ring *r, int type, uint64_t addr, uint64_t *len, uint32_t *prot,
		     char *name, size_t nmax)
{
	uint64_t buf[128];
	int found = 0;
	while (ring_next(r, buf, sizeof(buf))) {
		if (rec_type(buf) != (uint32_t)type || buf[2] != addr)
			continue;
		*len = buf[3];
		const char *fn = (const char *)&buf[5];
		if (type == 10) {
			*prot = (uint32_t)buf[8];
			fn = (const char *)&buf[9];
		}
		size_t i = 0;
		for (; i + 1 < nmax && fn[i] && (const char *)&buf[128] > fn + i; i++)
			name[i] = fn[i];
		name[i] = 0;
		found++;
	}
	return found;
}

UT_TEST(mmap_of_an_executable_file_writes_mmap_records)
{
	for (int v2 = 0; v2 < 2; v2++) {
		struct pattr a;
		sampling_attr(&a, SW_DUMMY, S_IP);
		a.sample_period = 0;
		a.flags |= v2 ? (A_MMAP | (1ULL << 23)) : A_MMAP;
		struct ring r;
		T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
		int fd = T_OK(open("/proc/self/exe", O_RDONLY));
		void *x = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		void *d = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
		T_ASSERT(x != MAP_FAILED && d != MAP_FAILED);
		uint64_t len = 0;
		uint32_t prot = 0;
		char name[256] = "";
		T_EXPECT_EQ(find_mmap(&r, v2 ? 10 : 1, (uint64_t)x, &len, &prot, name, sizeof(name)), 1);
		T_EXPECT_EQ(len, 4096);
		if (v2)
			T_EXPECT_EQ(prot, PROT_READ | PROT_EXEC);
		T_EXPECT(strstr(name, "perf_sampling") != NULL || strstr(name, "exe") != NULL);
		/* Data mappings only with mmap_data. */
		T_EXPECT_EQ(find_mmap(&r, v2 ? 10 : 1, (uint64_t)d, &len, &prot, name, sizeof(name)), 0);
		munmap(x, 4096);
		munmap(d, 4096);
		close(fd);
		ring_close(&r);
	}
}

UT_TEST(comm_record_at_rename_with_sample_id_all)
{
	struct pattr a;
	sampling_attr(&a, SW_DUMMY, S_TID);
	a.sample_period = 0;
	a.flags |= A_COMM | A_SAMPLE_ID_ALL | (1ULL << 24);    /* comm_exec */
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	char old[16] = "";
	prctl(PR_GET_NAME, old, 0, 0, 0);
	T_OK(prctl(PR_SET_NAME, "perf-renamed", 0, 0, 0));
	uint64_t buf[64];
	int found = 0;
	while (ring_next(&r, buf, sizeof(buf))) {
		if (rec_type(buf) != REC_COMM)
			continue;
		uint32_t *w = (uint32_t *)(buf + 1);
		char name[17] = { 0 };
		memcpy(name, buf + 2, 16);
		uint16_t misc = (uint16_t)(buf[0] >> 32);
		if (w[0] == (uint32_t)getpid() && w[1] == (uint32_t)syscall(SYS_gettid) &&
		    strcmp(name, "perf-renamed") == 0 && !(misc & (1 << 13)))
			found++;
		/* sample_id_all: the TID trailer. */
		if (w[6] != (uint32_t)getpid())
			found = -100;
	}
	T_EXPECT_EQ(found, 1);
	prctl(PR_SET_NAME, old, 0, 0, 0);
	ring_close(&r);
}

UT_TEST(second_mapping_shares_the_buffer)
{
	struct pattr a;
	sampling_attr(&a, SW_TASK_CLOCK, S_IP);
	struct ring r;
	T_ASSERT(ring_open(&r, &a, 0, -1, DATA_PAGES) == 0);
	long pg = sysconf(_SC_PAGESIZE);
	struct pmmap *m2 = mmap(NULL, (size_t)pg * (1 + DATA_PAGES), PROT_READ | PROT_WRITE,
				MAP_SHARED, r.fd, 0);
	T_ASSERT(m2 != MAP_FAILED);
	spin_here(30);
	T_EXPECT_EQ(m2->data_head, r.up->data_head);
	/* Another size: refused. */
	T_EXPECT(mmap(NULL, (size_t)pg * 3, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0) == MAP_FAILED);
	munmap(m2, (size_t)pg * (1 + DATA_PAGES));
	ring_close(&r);
}

UT_MAIN
