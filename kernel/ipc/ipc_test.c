/* Kernel tests of the System V IPC id tables (ipc_util.c). */
#include "kernel.h"
#include "errno.h"
#include "ipc.h"
#include "ktest.h"

KTEST(ipc_octal_formats_modes)
{
	char b[8];
	KT_EXPECT(strcmp(ipc_octal(0, b), "0") == 0);
	KT_EXPECT(strcmp(ipc_octal(0600, b), "600") == 0);
	KT_EXPECT(strcmp(ipc_octal(01777, b), "1777") == 0);
	KT_EXPECT(strcmp(ipc_octal(0170644, b), "644") == 0);   /* type bits dropped */
}

/* A removed object's slot is reused under a new id: the old id is no
 * longer found, a full table gives ENOSPC, keys are found by key. */
KTEST(ipc_ids_reuse_slot_with_new_id)
{
	static struct ipc_obj *slots[2];
	static struct ipc_ids ids = { .lock = SIMPLE_LOCK_INIT(LC_TEST_A), .slot = slots, .max = 2 };
	struct ipc_obj a, b, c, d;
	simple_lock(&ids.lock);
	int ida = ipc_add_locked(&ids, &a, 42, 0600);
	int idb = ipc_add_locked(&ids, &b, IPC_PRIVATE, 0644);
	KT_EXPECT(ida >= 0 && idb >= 0 && ida != idb);
	KT_EXPECT_EQ(ida & (IPCMNI - 1), 0);
	KT_EXPECT_EQ(ipc_add_locked(&ids, &c, 7, 0600), -ENOSPC);
	KT_EXPECT(ipc_find_key_locked(&ids, 42) == &a);
	KT_EXPECT(ipc_find_id_locked(&ids, idb) == &b);
	ipc_remove_locked(&ids, &a);
	KT_EXPECT(a.removed && a.key == IPC_PRIVATE);
	KT_EXPECT(ipc_find_key_locked(&ids, 42) == NULL);
	int idd = ipc_add_locked(&ids, &d, 42, 0600);
	KT_EXPECT_EQ(idd & (IPCMNI - 1), 0);         /* same slot ... */
	KT_EXPECT(idd != ida);                        /* ... new id */
	KT_EXPECT(ipc_find_id_locked(&ids, ida) == NULL);
	KT_EXPECT(ipc_find_id_locked(&ids, idd) == &d);
	KT_EXPECT(ipc_find_id_locked(&ids, -1) == NULL);
	ipc_remove_locked(&ids, &b);
	ipc_remove_locked(&ids, &d);
	KT_EXPECT_EQ(ids.used, 0);
	KT_EXPECT_EQ(ids.top, 0);
	simple_unlock(&ids.lock);
}
