/*
 * Futexes: placeholder until the futex implementation lands (issue 11).
 */
#include "kernel.h"
#include "errno.h"
#include "futex.h"
#include "thread.h"
#include "usercopy.h"

void futex_exit_thread(struct thread *t, bool clear)
{
	if (clear && t->clear_child_tid)
		(void)store_u32((void *)t->clear_child_tid, 0);
	t->clear_child_tid = 0;
}

int futex_wake_addr(uint64_t uaddr __unused, int n __unused)
{
	return 0;
}
