/*
 * In-kernel tests of the growable descriptor table (file.h): growing keeps
 * the descriptors and close-on-exec bits, sizes double from 128, a slot at
 * or above fs/nr_open is EMFILE, a table too large to allocate is ENOMEM
 * with the old one intact, and fork copies a high descriptor into a table
 * sized for the used part.
 */
#include "kernel.h"
#include "errno.h"
#include "file.h"
#include "ktest.h"
#include "lock.h"
#include "sysctl.h"

static bool cloexec_bit(struct fdtable *t, int fd)
{
	return (t->cloexec[fd / 64] >> (fd % 64)) & 1;
}

static const struct file_ops test_fops;

KTEST(fdtable_grows_keeping_descriptors_and_fails_cleanly)
{
	struct fdtable *t = fdtable_new();
	KT_ASSERT(t != NULL);
	KT_EXPECT_EQ(t->size, FDT_INLINE);
	struct file *con = file_alloc(&test_fops, O_RDONLY);
	if (!con) {
		fdtable_close_all(t);
		KT_ASSERT(con != NULL);
	}
	for (int fd = 0; fd < 3; fd++) {      /* as the console's 0-2 */
		file_ref(con);
		t->fd[fd] = con;
	}
	file_unref(con);
	t->next_free = t->end = 3;
	int saved = sysctl_nr_open;

	simple_lock(&t->lock);
	fdt_set_cloexec(t, 2, true);
	int r1 = fdt_expand_locked(t, 1500);
	int size1 = t->size;
	bool kept = t->fd[0] == con && t->fd[2] == con && !t->fd[3] && !t->fd[1500] &&
		    cloexec_bit(t, 2) && !cloexec_bit(t, 1);
	int r2 = fdt_expand_locked(t, 100);           /* already room: nothing */
	int size2 = t->size;
	int r3 = fdt_expand_locked(t, saved);         /* at nr_open */
	sysctl_nr_open = 1 << 22;
	int r4 = fdt_expand_locked(t, 3 << 20);       /* 32 MiB of pointers */
	sysctl_nr_open = saved;
	int size4 = t->size;
	bool kept4 = t->fd[2] == con && cloexec_bit(t, 2);
	/* A high descriptor for fork to copy. */
	file_ref(con);
	t->fd[1500] = con;
	t->end = 1501;
	fdt_set_cloexec(t, 1500, true);
	fdt_set_cloexec(t, 2, false);
	simple_unlock(&t->lock);

	KT_EXPECT_EQ(r1, 0);
	KT_EXPECT_EQ(size1, 2048);
	KT_EXPECT(kept);
	KT_EXPECT_EQ(r2, 0);
	KT_EXPECT_EQ(size2, 2048);
	KT_EXPECT_EQ(r3, -EMFILE);
	KT_EXPECT_EQ(r4, -ENOMEM);
	KT_EXPECT_EQ(size4, 2048);
	KT_EXPECT(kept4);

	struct fdtable *c = fdtable_fork(t);
	KT_EXPECT(c != NULL);
	if (c) {
		simple_lock(&c->lock);
		KT_EXPECT_EQ(c->size, 2048);
		KT_EXPECT_EQ(c->end, 1501);
		KT_EXPECT_EQ(c->next_free, 3);
		KT_EXPECT(c->fd[1500] == con && c->fd[0] == con && !c->fd[1499]);
		KT_EXPECT(cloexec_bit(c, 1500) && !cloexec_bit(c, 2));
		KT_EXPECT(fdt_file(c, 2048) == NULL && fdt_file(c, -1) == NULL);
		simple_unlock(&c->lock);
		fdtable_close_all(c);
	}
	/* A small table forks into the inline slots. */
	simple_lock(&t->lock);
	struct file *hi = t->fd[1500];
	t->fd[1500] = NULL;
	fdt_set_cloexec(t, 1500, false);
	t->end = 3;
	simple_unlock(&t->lock);
	file_unref(hi);
	c = fdtable_fork(t);
	KT_EXPECT(c != NULL);
	if (c) {
		KT_EXPECT_EQ(c->size, FDT_INLINE);
		KT_EXPECT(c->fd == c->fd_inline);
		fdtable_close_all(c);
	}
	fdtable_close_all(t);
}
