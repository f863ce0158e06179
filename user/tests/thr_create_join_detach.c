/* thr_create_join_detach: pthread_create/join pass arguments and return
 * values; detached threads run and vanish; 64 threads at once; every thread
 * has its own pthread_self and gettid, all share getpid, and the main
 * thread's tid is the pid; a requested stack size is honoured (a thread can
 * use most of it); each thread's stack and __thread (TLS) variables are its
 * own; /proc/self/task lists every thread with its own comm, and
 * /proc/self/status "Threads:" counts them (where /proc exists). */
#define _GNU_SOURCE
#include "utest.h"
#include "thrutil.h"
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sys/prctl.h>

static void *add_one(void *p)
{
	return (void *)((long)p + 1);
}

UT_TEST(create_join_return_values)
{
	for (long i = 0; i < 20; i++) {
		pthread_t t;
		T_ASSERT(pthread_create(&t, NULL, add_one, (void *)(i * 1000)) == 0);
		void *ret = NULL;
		T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
		T_EXPECT_EQ((long)ret, i * 1000 + 1);
	}
}

static void *exit_with(void *p)
{
	pthread_exit((void *)((long)p * 3));
	return NULL;
}

UT_TEST(pthread_exit_value)
{
	pthread_t t;
	T_ASSERT(pthread_create(&t, NULL, exit_with, (void *)14L) == 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, 42);
}

static volatile int detached_done;
static void *detached_fn(void *p)
{
	(void)p;
	__atomic_fetch_add(&detached_done, 1, __ATOMIC_ACQ_REL);
	return NULL;
}

UT_TEST(detached_threads_run)
{
	detached_done = 0;
	pthread_attr_t a;
	pthread_attr_init(&a);
	T_EXPECT_EQ(pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED), 0);
	for (int i = 0; i < 8; i++) {
		pthread_t t;
		T_ASSERT(pthread_create(&t, &a, detached_fn, NULL) == 0);
	}
	pthread_attr_destroy(&a);
	for (int i = 0; i < 8; i++) {
		pthread_t t;
		T_ASSERT(pthread_create(&t, NULL, detached_fn, NULL) == 0);
		T_EXPECT_EQ(pthread_detach(t), 0);
	}
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(&detached_done, __ATOMIC_ACQUIRE) < 16 &&
	       ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(detached_done, 16);
}

#define NT 64

struct ident {
	pthread_t self;
	pid_t tid, pid;
	int idx;
	volatile int *go;
};

static void *identify(void *p)
{
	struct ident *id = p;
	id->self = pthread_self();
	id->tid = thr_gettid();
	id->pid = getpid();
	/* stay alive until every thread has recorded itself, so that no tid
	 * can be reused by a later thread */
	uint64_t t0 = ut_now_ns();
	while (!__atomic_load_n(id->go, __ATOMIC_ACQUIRE) &&
	       ut_now_ns() - t0 < 10000000000ull)
		ut_sleep_ms(1);
	return (void *)(long)id->idx;
}

UT_TEST(many_threads_distinct_ids_same_pid)
{
	static struct ident ids[NT];
	static pthread_t th[NT];
	volatile int go = 0;
	T_EXPECT_EQ(thr_gettid(), getpid());   /* main thread: tid == pid */
	int made = 0;
	for (int i = 0; i < NT; i++) {
		ids[i] = (struct ident){ .idx = i, .go = &go };
		if (pthread_create(&th[i], NULL, identify, &ids[i]) != 0)
			break;
		made++;
	}
	T_EXPECT_EQ(made, NT);
	/* wait until all have recorded themselves */
	uint64_t t0 = ut_now_ns();
	for (int i = 0; i < made; i++)
		while (!__atomic_load_n(&ids[i].tid, __ATOMIC_ACQUIRE) &&
		       ut_now_ns() - t0 < 10000000000ull)
			ut_sleep_ms(1);
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < made; i++) {
		void *ret;
		T_EXPECT_EQ(thr_join_ms(th[i], &ret, 10000), 0);
		T_EXPECT_EQ((long)ret, i);
	}
	for (int i = 0; i < made; i++) {
		T_EXPECT_EQ(ids[i].pid, getpid());
		T_EXPECT(ids[i].tid > 0 && ids[i].tid != getpid());
		T_EXPECT(pthread_equal(ids[i].self, th[i]));
		T_EXPECT(!pthread_equal(ids[i].self, pthread_self()));
		for (int j = 0; j < i; j++) {
			if (ids[j].tid == ids[i].tid)
				ut_fail_at(__FILE__, __LINE__, "threads %d and %d: same tid %d",
					   j, i, ids[i].tid);
			if (pthread_equal(ids[j].self, ids[i].self))
				ut_fail_at(__FILE__, __LINE__, "threads %d and %d: same pthread_t", j, i);
		}
	}
}

/* Stack size: the attribute is reported back, and the thread can use most
 * of it (a 900 KiB array on a 1 MiB stack, well beyond a default stack of
 * musl's 128 KiB). */
static void *use_stack(void *p)
{
	size_t n = (size_t)(long)p;
	volatile char *buf = __builtin_alloca(n);
	for (size_t i = 0; i < n; i += 512)
		buf[i] = (char)i;
	long sum = 0;
	for (size_t i = 0; i < n; i += 512)
		sum += buf[i] == (char)i;
	pthread_attr_t a;
	size_t got = 0;
	if (pthread_getattr_np(pthread_self(), &a) == 0) {
		pthread_attr_getstacksize(&a, &got);
		pthread_attr_destroy(&a);
	}
	return (void *)(sum == (long)((n + 511) / 512) && got >= 1024 * 1024 ? 1L : 0L);
}

UT_TEST(attr_stack_size)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	size_t sz = 0;
	T_EXPECT_EQ(pthread_attr_setstacksize(&a, 1024 * 1024), 0);
	T_EXPECT_EQ(pthread_attr_getstacksize(&a, &sz), 0);
	T_EXPECT_EQ(sz, 1024 * 1024);
	T_EXPECT_EQ(pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN - 1), EINVAL);
	pthread_t t;
	T_ASSERT(pthread_create(&t, &a, use_stack, (void *)(900L * 1024)) == 0);
	void *ret;
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	T_EXPECT_EQ((long)ret, 1);

	/* a caller-provided stack: the thread runs on it */
	size_t len = 256 * 1024;
	char *stk = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	T_ASSERT(stk != MAP_FAILED);
	pthread_attr_t b;
	pthread_attr_init(&b);
	T_EXPECT_EQ(pthread_attr_setstack(&b, stk, len), 0);
	T_ASSERT(pthread_create(&t, &b, use_stack, (void *)(16L * 1024)) == 0);
	T_EXPECT_EQ(thr_join_ms(t, &ret, 5000), 0);
	pthread_attr_destroy(&b);
	pthread_attr_destroy(&a);
	munmap(stk, len);
}

static __thread long tls_word = 7;
static __thread char tls_buf[256];

struct local {
	long *stack_addr;
	long *tls_addr;
	int ok;
	volatile int *phase;
};

static void *tls_fn(void *p)
{
	struct local *l = p;
	volatile long on_stack = (long)thr_gettid();
	l->stack_addr = (long *)&on_stack;
	l->tls_addr = &tls_word;
	int ok = tls_word == 7;          /* the initial value, not main's */
	tls_word = thr_gettid();
	memset(tls_buf, (char)tls_word, sizeof tls_buf);
	/* wait until every thread has written its own values */
	__atomic_fetch_add(l->phase, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(l->phase, __ATOMIC_ACQUIRE) < 8 &&
	       ut_now_ns() - t0 < 10000000000ull)
		sched_yield();
	ok &= tls_word == thr_gettid();
	for (size_t i = 0; i < sizeof tls_buf; i++)
		ok &= tls_buf[i] == (char)tls_word;
	ok &= on_stack == (long)thr_gettid();
	l->ok = ok;
	return NULL;
}

UT_TEST(stack_and_tls_per_thread)
{
	tls_word = -1;
	struct local l[8];
	pthread_t t[8];
	volatile int phase = 0;
	for (int i = 0; i < 8; i++) {
		l[i] = (struct local){ .phase = &phase };
		T_ASSERT(pthread_create(&t[i], NULL, tls_fn, &l[i]) == 0);
	}
	for (int i = 0; i < 8; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 10000), 0);
	for (int i = 0; i < 8; i++) {
		T_EXPECT_EQ(l[i].ok, 1);
		T_EXPECT(l[i].tls_addr != &tls_word);
		for (int j = 0; j < i; j++) {
			T_EXPECT(l[i].tls_addr != l[j].tls_addr);
			T_EXPECT(l[i].stack_addr != l[j].stack_addr);
		}
	}
	T_EXPECT_EQ(tls_word, -1);       /* main's copy untouched */
	/* %fs points at the thread's own control block in each thread */
	void *fs0;
	__asm__("mov %%fs:0, %0" : "=r"(fs0));
	T_EXPECT(fs0 == (void *)pthread_self());
}

/* /proc/self/task and "Threads:" with N extra threads, each with its name. */
struct named {
	char name[16];
	pid_t tid;
	volatile int *ready;
	volatile int *stop;
};

static void *named_fn(void *p)
{
	struct named *n = p;
	prctl(PR_SET_NAME, n->name, 0, 0, 0);
	n->tid = thr_gettid();
	__atomic_fetch_add(n->ready, 1, __ATOMIC_ACQ_REL);
	uint64_t t0 = ut_now_ns();
	while (!__atomic_load_n(n->stop, __ATOMIC_ACQUIRE) && ut_now_ns() - t0 < 10000000000ull)
		ut_sleep_ms(1);
	return NULL;
}

static int status_threads(void)
{
	int fd = open("/proc/self/status", O_RDONLY);
	if (fd < 0)
		return -1;
	char buf[4096];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strstr(buf, "\nThreads:");
	return p ? atoi(p + 9) : -1;
}

static int wait_task_count(int want)
{
	uint64_t t0 = ut_now_ns();
	int n;
	while ((n = thr_task_count()) != want && ut_now_ns() - t0 < 3000000000ull)
		ut_sleep_ms(2);
	return n;
}

UT_TEST(proc_task_entries_and_names)
{
	if (thr_task_count() < 0) {
		ut_skip("no /proc/self/task");
		return;
	}
	/* main and the watchdog, once the detached threads of an earlier
	 * subtest have finished leaving */
	int base = 2;
	T_EXPECT_EQ(wait_task_count(base), base);
	T_EXPECT_EQ(status_threads(), base);
	enum { N = 5 };
	struct named nm[N];
	pthread_t t[N];
	volatile int ready = 0, stop = 0;
	for (int i = 0; i < N; i++) {
		nm[i] = (struct named){ .ready = &ready, .stop = &stop };
		snprintf(nm[i].name, sizeof nm[i].name, "worker-%d", i);
		T_ASSERT(pthread_create(&t[i], NULL, named_fn, &nm[i]) == 0);
	}
	uint64_t t0 = ut_now_ns();
	while (__atomic_load_n(&ready, __ATOMIC_ACQUIRE) < N && ut_now_ns() - t0 < 5000000000ull)
		ut_sleep_ms(1);
	T_EXPECT_EQ(thr_task_count(), base + N);
	T_EXPECT_EQ(status_threads(), base + N);
	for (int i = 0; i < N; i++) {
		char path[64], buf[32] = { 0 };
		snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)nm[i].tid);
		int fd = open(path, O_RDONLY);
		T_EXPECT(fd >= 0);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n > 0 && buf[n - 1] == '\n')
			buf[n - 1] = 0;
		if (strcmp(buf, nm[i].name) != 0)
			ut_fail_at(__FILE__, __LINE__, "%s: '%s', want '%s'", path, buf, nm[i].name);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < N; i++)
		T_EXPECT_EQ(thr_join_ms(t[i], NULL, 5000), 0);
	/* joined threads are gone from the list (the kernel may take a moment
	 * after the join returns: the tid is cleared before the task is freed) */
	T_EXPECT_EQ(wait_task_count(base), base);
}

THR_MAIN(120)
