/*
 * Tests of the ELF loader and the initial stack.  ELF images are built here
 * in memory, put into a private file tree through a cpio archive, loaded
 * into a new map, and read back with copyin with the map loaded on this CPU
 * (the test binds itself to CPU 0 meanwhile, as the VM tests do).  Every
 * test destroys its maps and checks the free-page count afterwards.
 */
#include "kernel.h"
#include "elf.h"
#include "failinject.h"
#include "errno.h"
#include "initramfs.h"
#include "kmem.h"
#include "ktest.h"
#include "ktest_map.h"
#include "page.h"
#include "pmap.h"
#include "sched.h"
#include "smp.h"
#include "thread.h"
#include "usercopy.h"
#include "vm_map.h"
#include "boot.h"

#define RX    (PROT_READ | PROT_EXEC)
#define RW    (PROT_READ | PROT_WRITE)

/* ---- images ---- */

struct seg {
	uint32_t type, flags;
	uint64_t off, vaddr, filesz, memsz;
};

static uint8_t pat(size_t i)
{
	return (uint8_t)(i * 13 + 5);
}

/* An ELF file of size bytes: header, n program headers at 64, pattern bytes. */
static void elf_image(uint8_t *img, size_t size, uint16_t type, uint64_t entry,
		      const struct seg *s, int n)
{
	for (size_t i = 0; i < size; i++)
		img[i] = pat(i);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	memset(eh, 0, sizeof(*eh));
	memcpy(eh->e_ident, "\177ELF", 4);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_entry = entry;
	eh->e_phoff = sizeof(Elf64_Ehdr);
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (uint16_t)n;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + eh->e_phoff);
	for (int i = 0; i < n; i++)
		ph[i] = (Elf64_Phdr){ s[i].type, s[i].flags, s[i].off, s[i].vaddr, s[i].vaddr,
				      s[i].filesz, s[i].memsz, 0x1000 };
}

/* The usual test program: text R+X with the headers, data R+W with bss. */
#define IMG_SIZE 0x2500
static const struct seg std_segs[] = {
	{ PT_LOAD, PF_R | PF_X, 0, 0x400000, 0x1234, 0x1234 },
	{ PT_LOAD, PF_R | PF_W, 0x2100, 0x402100, 0x300, 0x3000 },
	{ PT_GNU_STACK, PF_R | PF_W, 0, 0, 0, 0 },
};

/* A private tree holding img as /prog (mode 0755); NULL on failure. */
static struct inode *tree_with(const uint8_t *img, size_t size, char **archive)
{
	size_t cap = size + 512;
	char *c = kmalloc(cap, KM_ZERO);
	if (c == NULL)
		return NULL;
	/* One newc entry "prog" then the trailer. */
	size_t len = 0;
	const char *names[2] = { "prog", "TRAILER!!!" };
	for (int e = 0; e < 2; e++) {
		uint32_t namesize = strlen(names[e]) + 1;
		uint32_t fsize = e == 0 ? size : 0;
		ksnprintf(c + len, 111, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			  1 + e, e == 0 ? 0100755 : 0, 0, 0, 1, 0, fsize, 0, 0, 0, 0, namesize, 0);
		len += 110;
		memcpy(c + len, names[e], namesize);
		len = ALIGN_UP(len + namesize, 4);
		if (fsize)
			memcpy(c + len, img, fsize);
		len = ALIGN_UP(len + fsize, 4);
	}
	struct inode *root = fs_tree_create();
	if (root == NULL || initramfs_load_tree(root, c, len, NULL) != 0) {
		if (root)
			fs_tree_free(root);
		kfree(c);
		return NULL;
	}
	*archive = c;
	return root;
}

static struct inode *prog_of(struct inode *root)
{
	struct inode *ip = NULL;
	return fs_lookup_at(root, root, "/prog", 0, &ip) == 0 ? ip : NULL;
}

/* Region rights at va, or -1 if unmapped. */
static int prot_at(struct vm_map *map, vaddr_t va, vaddr_t *start, vaddr_t *end)
{
	lock_read(&map->lock);
	struct vm_region *r = vm_map_lookup_locked(map, va);
	int prot = r ? r->prot : -1;
	if (r && start)
		*start = r->start;
	if (r && end)
		*end = r->end;
	lock_done(&map->lock);
	return prot;
}

/* User bytes [va, va+n) equal file bytes [off, off+n) of the pattern image. */
static bool user_is_file(vaddr_t va, const uint8_t *img, size_t off, size_t n)
{
	uint8_t *b = kmalloc(n, 0);
	bool ok = b && copyin(b, U(va), n) == 0 && memcmp(b, img + off, n) == 0;
	kfree(b);
	return ok;
}

static bool user_is_zero(vaddr_t va, size_t n)
{
	uint8_t *b = kmalloc(n, 0);
	bool ok = b && copyin(b, U(va), n) == 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = b[i] == 0;
	kfree(b);
	return ok;
}

/* ---- good executables ---- */

MAP_KTEST(elf_load_maps_segments_with_rights_content_and_bss)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	elf_image(img, IMG_SIZE, ET_EXEC, 0x401000, std_segs, 3);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	struct elf_info info;
	KT_ASSERT(elf_load(prog_of(root), map, &info) == 0);
	KT_EXPECT_EQ(info.entry, 0x401000);
	KT_EXPECT_EQ(info.phdr, 0x400040);
	KT_EXPECT_EQ(info.phnum, 3);
	KT_EXPECT_EQ(info.phent, 56);
	KT_EXPECT_EQ(info.bias, 0);
	KT_EXPECT_EQ(info.brk, 0x406000);
	KT_EXPECT_EQ(map->brk_start, 0x406000);

	/* Text: both pages are mapped from the file, the one its file bytes
	 * end in too (no bss there, and data starts on a later page), with
	 * the file's bytes past p_filesz showing, as on Linux.  Data: all
	 * copied (its last page is also the one its file bytes end in, with
	 * bss after them). */
	vaddr_t s, e;
	KT_EXPECT_EQ(prot_at(map, 0x400000, &s, &e), RX);
	KT_EXPECT(s == 0x400000 && e == 0x402000);
	KT_EXPECT(map->head.next->obj != NULL);                 /* the file */
	KT_EXPECT_EQ(prot_at(map, 0x402000, &s, &e), RW);
	KT_EXPECT(s == 0x402000 && e == 0x406000);
	KT_EXPECT_EQ(prot_at(map, 0x3ff000, NULL, NULL), -1);
	KT_EXPECT_EQ(prot_at(map, 0x406000, NULL, NULL), -1);
	KT_EXPECT_EQ(map->nregions, 2);

	pmap_activate(map->pmap);
	KT_EXPECT(user_is_file(0x400000, img, 0, 0x1234));      /* text and headers */
	KT_EXPECT(user_is_file(0x401234, img, 0x1234, 0x2000 - 0x1234));  /* the file's page */
	KT_EXPECT(user_is_file(0x402000, img, 0x2000, 0x100));  /* lead-in of the page */
	KT_EXPECT(user_is_file(0x402100, img, 0x2100, 0x300));  /* data */
	KT_EXPECT(user_is_zero(0x402400, 0x405100 - 0x402400)); /* bss */
	KT_EXPECT(user_is_zero(0x405100, 0xf00));
	uint64_t v = 0x1122334455667788UL, r = 0;
	KT_EXPECT_EQ(copyout(U(0x400100), &v, 8), -EFAULT);     /* text is read-only */
	KT_EXPECT_EQ(copyout(U(0x404000), &v, 8), 0);           /* bss is writable */
	KT_EXPECT_EQ(copyin(&r, U(0x404000), 8), 0);
	KT_EXPECT_EQ(r, v);
	pmap_deactivate();

	vm_map_destroy(map);
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/* With randomisation: the static-pie bias, break start, stack top and mmap
 * base move by page multiples within their ranges, and differ between two
 * loads (a 1 in 2^28 chance of equal biases); without it they are fixed. */
MAP_KTEST(elf_load_randomises_bias_brk_stack_and_mmap_base)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	struct seg dyn[] = {
		{ PT_LOAD, PF_R | PF_X, 0, 0, 0x1234, 0x1234 },
		{ PT_LOAD, PF_R | PF_W, 0x2100, 0x2100, 0x300, 0x3000 },
	};
	elf_image(img, IMG_SIZE, ET_DYN, 0x1000, dyn, 2);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	struct elf_info info[3];
	vaddr_t top[3], brk[3];
	for (int i = 0; i < 3; i++) {
		struct vm_map *map = vm_map_create();
		KT_ASSERT(map != NULL);
		KT_ASSERT(elf_load_rnd(prog_of(root), map, i < 2, &info[i]) == 0);
		top[i] = map->mmap_top;
		brk[i] = map->brk_start;
		vm_map_destroy(map);
		KT_EXPECT_EQ(info[i].bias & (PAGE_SIZE - 1), 0);
		KT_EXPECT(info[i].bias >= ELF_DYN_BASE && info[i].bias < ELF_DYN_BASE + ELF_RND_DYN);
		KT_EXPECT_EQ(info[i].entry, info[i].bias + 0x1000);
		KT_EXPECT(info[i].stack_top <= ELF_STACK_TOP &&
			  info[i].stack_top > ELF_STACK_TOP - ELF_RND_STACK);
		KT_EXPECT(top[i] <= VM_MMAP_TOP && top[i] > VM_MMAP_TOP - ELF_RND_MMAP);
		KT_EXPECT(brk[i] >= info[i].bias + 0x6000 &&
			  brk[i] < info[i].bias + 0x6000 + ELF_RND_BRK);
	}
	KT_EXPECT(info[0].bias != info[1].bias);
	KT_EXPECT(top[0] != top[1]);
	KT_EXPECT_EQ(info[2].bias, ELF_DYN_BASE);
	KT_EXPECT_EQ(info[2].stack_top, ELF_STACK_TOP);
	KT_EXPECT_EQ(top[2], VM_MMAP_TOP);
	KT_EXPECT_EQ(brk[2], ELF_DYN_BASE + 0x6000);   /* the end, page-aligned */
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

MAP_KTEST(elf_load_static_pie_and_shared_pages)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	/* ET_DYN: the same program linked at 0, loaded at ELF_DYN_BASE. */
	struct seg dyn[] = {
		{ PT_LOAD, PF_R | PF_X, 0, 0, 0x1234, 0x1234 },
		{ PT_LOAD, PF_R | PF_W, 0x2100, 0x2100, 0x300, 0x3000 },
	};
	elf_image(img, IMG_SIZE, ET_DYN, 0x1000, dyn, 2);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	struct elf_info info;
	KT_ASSERT(elf_load(prog_of(root), map, &info) == 0);
	KT_EXPECT_EQ(info.bias, ELF_DYN_BASE);
	KT_EXPECT_EQ(info.entry, ELF_DYN_BASE + 0x1000);
	KT_EXPECT_EQ(info.phdr, ELF_DYN_BASE + 0x40);
	KT_EXPECT_EQ(prot_at(map, ELF_DYN_BASE, NULL, NULL), RX);
	KT_EXPECT_EQ(prot_at(map, ELF_DYN_BASE + 0x5000, NULL, NULL), RW);
	pmap_activate(map->pmap);
	KT_EXPECT(user_is_file(ELF_DYN_BASE, img, 0, 0x1234));
	KT_EXPECT(user_is_file(ELF_DYN_BASE + 0x2100, img, 0x2100, 0x300));
	pmap_deactivate();
	vm_map_destroy(map);
	fs_tree_free(root);
	kfree(arch);

	/*
	 * Segments sharing pages: text R [0x400000, 0x400800), data RW from
	 * 0x400800 (same page: it becomes RW), a tiny X segment inside the
	 * data's last page, a PT_LOAD without rights (a guard) further up.
	 */
	struct seg sh[] = {
		{ PT_LOAD, PF_R, 0, 0x400000, 0x800, 0x800 },
		{ PT_LOAD, PF_R | PF_W, 0x800, 0x400800, 0x100, 0x1900 },
		{ PT_LOAD, PF_X, 0x2200, 0x402200, 0x10, 0x10 },
		{ PT_LOAD, 0, 0x1000, 0x404000, 0x100, 0x1000 },
	};
	elf_image(img, IMG_SIZE, ET_EXEC, 0x400100, sh, 4);
	root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	map = vm_map_create();
	KT_ASSERT(map != NULL);
	KT_ASSERT(elf_load(prog_of(root), map, &info) == 0);
	KT_EXPECT_EQ(prot_at(map, 0x400000, NULL, NULL), RW);
	KT_EXPECT_EQ(prot_at(map, 0x401000, NULL, NULL), RW);
	KT_EXPECT_EQ(prot_at(map, 0x402000, NULL, NULL), RW | PROT_EXEC);
	KT_EXPECT_EQ(prot_at(map, 0x403000, NULL, NULL), -1);
	KT_EXPECT_EQ(prot_at(map, 0x404000, NULL, NULL), PROT_NONE);
	KT_EXPECT_EQ(info.brk, 0x405000);
	pmap_activate(map->pmap);
	KT_EXPECT(user_is_file(0x400000, img, 0, 0x900));
	KT_EXPECT(user_is_zero(0x400900, 0x402100 - 0x400900));
	/* X's page: file bytes from the data's end (the lead-in) through X. */
	KT_EXPECT(user_is_file(0x402100, img, 0x2100, 0x110));
	KT_EXPECT(user_is_zero(0x402210, 0x1000 - 0x210));
	uint8_t b;
	KT_EXPECT_EQ(copyin(&b, U(0x404000), 1), -EFAULT);       /* no rights */
	pmap_deactivate();
	KT_EXPECT_EQ(vm_mprotect(map, 0x404000, 0x1000, PROT_READ), 0);
	pmap_activate(map->pmap);
	KT_EXPECT(user_is_file(0x404000, img, 0x1000, 0x100));  /* its bytes were loaded */
	pmap_deactivate();
	vm_map_destroy(map);
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/*
 * A writable segment of several file pages: the whole pages are the file's
 * own (copy-on-write), so a store changes the process's copy and never the
 * file; its last page is copied, and a second load sees the file unchanged.
 */
MAP_KTEST(elf_load_maps_file_pages_copy_on_write)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	struct seg rw[] = {
		{ PT_LOAD, PF_R | PF_W | PF_X, 0, 0x400000, 0x2100, 0x3000 },
	};
	elf_image(img, IMG_SIZE, ET_EXEC, 0x400100, rw, 1);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	for (int round = 0; round < 2; round++) {
		struct vm_map *map = vm_map_create();
		KT_ASSERT(map != NULL);
		struct elf_info info;
		KT_ASSERT(elf_load(prog_of(root), map, &info) == 0);
		vaddr_t s, e;
		KT_EXPECT_EQ(prot_at(map, 0x400000, &s, &e), RW | PROT_EXEC);
		KT_EXPECT(s == 0x400000 && e == 0x402000);      /* file pages */
		KT_EXPECT_EQ(prot_at(map, 0x402000, &s, &e), RW | PROT_EXEC);
		KT_EXPECT(s == 0x402000 && e == 0x403000);      /* copied */
		pmap_activate(map->pmap);
		KT_EXPECT(user_is_file(0x400000, img, 0, 0x2100));
		KT_EXPECT(user_is_zero(0x402100, 0xf00));
		uint64_t v = 0x1122334455667788UL, r = 0;
		KT_EXPECT_EQ(copyout(U(0x401008), &v, 8), 0);
		KT_EXPECT_EQ(copyin(&r, U(0x401008), 8), 0);
		KT_EXPECT_EQ(r, v);
		KT_EXPECT(user_is_file(0x400000, img, 0, 0x1000));
		pmap_deactivate();
		uint64_t f = 0;
		KT_EXPECT_EQ(fs_read(prog_of(root), &f, 8, 0x1008), 8);
		KT_EXPECT(memcmp(&f, img + 0x1008, 8) == 0);    /* the file kept */
		vm_map_destroy(map);
	}
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/*
 * The page a segment's file bytes end in is the file's own page when
 * nothing else must be written into it: every load of the program then
 * maps the same physical page (not a fresh copy).  It stays a copy when
 * bss follows the file bytes in it, or when the next segment starts in it.
 */
MAP_KTEST(elf_load_maps_the_last_file_page_unless_bss_or_a_neighbour_shares_it)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	struct seg segs[] = {
		{ PT_LOAD, PF_R | PF_X, 0, 0x400000, 0x800, 0x800 },          /* file page */
		{ PT_LOAD, PF_R, 0x1000, 0x401000, 0x300, 0x300 },            /* shared with next */
		{ PT_LOAD, PF_R | PF_W, 0x1400, 0x401400, 0x200, 0x200 },     /* its page: a copy */
		{ PT_LOAD, PF_R, 0x2000, 0x402000, 0x100, 0x400 },            /* bss in the page */
	};
	elf_image(img, IMG_SIZE, ET_EXEC, 0x400100, segs, 4);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	paddr_t first = 0;
	for (int round = 0; round < 2; round++) {
		struct vm_map *map = vm_map_create();
		KT_ASSERT(map != NULL);
		struct elf_info info;
		KT_ASSERT(elf_load(prog_of(root), map, &info) == 0);
		vaddr_t s, e;
		KT_EXPECT_EQ(prot_at(map, 0x400000, &s, &e), RX);
		KT_EXPECT(s == 0x400000 && e == 0x401000);
		lock_read(&map->lock);
		struct vm_region *r0 = vm_map_lookup_locked(map, 0x400000);
		struct vm_region *r1 = vm_map_lookup_locked(map, 0x401000);
		struct vm_region *r2 = vm_map_lookup_locked(map, 0x402000);
		KT_EXPECT(r0 && r0->obj != NULL);                    /* the file */
		KT_EXPECT(r1 && r1->obj == NULL);                    /* a copy: two segments */
		KT_EXPECT(r2 && r2->obj == NULL);                    /* a copy: bss */
		lock_done(&map->lock);
		KT_EXPECT_EQ(prot_at(map, 0x401000, NULL, NULL), RW);
		KT_EXPECT_EQ(prot_at(map, 0x402000, NULL, NULL), PROT_READ);
		pmap_activate(map->pmap);
		KT_EXPECT(user_is_file(0x400000, img, 0, 0x1000));   /* past p_filesz too */
		/* The second segment's lead-in from the first one's end. */
		KT_EXPECT(user_is_file(0x401000, img, 0x1000, 0x600));
		KT_EXPECT(user_is_zero(0x401600, 0xa00));
		KT_EXPECT(user_is_file(0x402000, img, 0x2000, 0x100));
		KT_EXPECT(user_is_zero(0x402100, 0xf00));
		pmap_deactivate();
		/* Both loads map the file's one page for the text. */
		paddr_t pa = pmap_extract(map->pmap, 0x400000);
		KT_EXPECT(pa != 0);
		if (round == 0)
			first = pa;
		else
			KT_EXPECT_EQ(pa, first);
		vm_map_destroy(map);
	}
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/*
 * Fault-around (vm_fault.c): a read fault on one page of a file mapping maps
 * the file's other pages of the same 16-page block too (read-only in a
 * private mapping, so a write still copies), and nothing beyond the end of
 * the file.  Lives here for the private-tree helpers.
 */
MAP_KTEST(vm_file_read_fault_maps_the_pages_around_it)
{
	uint64_t before = ktest_settled_free();
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	elf_image(img, IMG_SIZE, ET_EXEC, 0x400100, std_segs, 3);
	char *arch = NULL;
	struct inode *root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	/* 16 pages of a 3-page file (0x2500 bytes), at a 64 KiB boundary. */
	vaddr_t base = 0x500000;
	KT_ASSERT(vm_mmap_inode_private(map, base, 16 * PAGE_SIZE, RW, prog_of(root), 0) == 0);
	pmap_activate(map->pmap);
	uint8_t b = 0;
	KT_EXPECT_EQ(copyin(&b, U(base + PAGE_SIZE + 8), 1), 0);   /* one read fault */
	KT_EXPECT_EQ(b, img[PAGE_SIZE + 8]);
	KT_EXPECT_EQ(map->faults, 1);
	KT_EXPECT_EQ(map->faults_around, 2);                       /* pages 0 and 2 */
	for (int i = 0; i < 16; i++) {
		uint64_t pte = 0;
		paddr_t pa = pmap_lookup(map->pmap, base + i * PAGE_SIZE, &pte);
		if (i < 3) {
			KT_EXPECT(pa != 0);
			KT_EXPECT(!(pte & PTE_W));                 /* shared with the file */
		} else {
			KT_EXPECT_EQ(pa, 0);                       /* beyond the end */
		}
	}
	KT_EXPECT(user_is_file(base, img, 0, 0x2500));             /* no more faults */
	KT_EXPECT_EQ(map->faults, 1);
	uint64_t v = 0x1122334455667788UL, r = 0;
	KT_EXPECT_EQ(copyout(U(base + 16), &v, 8), 0);             /* copies page 0 */
	KT_EXPECT_EQ(copyin(&r, U(base + 16), 8), 0);
	KT_EXPECT_EQ(r, v);
	KT_EXPECT_EQ(map->cow_copies, 1);
	pmap_deactivate();
	uint64_t f = 0;
	KT_EXPECT_EQ(fs_read(prog_of(root), &f, 8, 16), 8);
	KT_EXPECT(memcmp(&f, img + 16, 8) == 0);                   /* the file kept */
	vm_map_destroy(map);
	fs_tree_free(root);
	kfree(arch);
	kfree(img);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/* ---- bad executables ---- */

struct bad_case {
	const char *what;
	int err;
};

static const struct bad_case bad_cases[] = {
	{ "truncated header", -ENOEXEC },
	{ "bad magic", -ENOEXEC },
	{ "wrong machine", -ENOEXEC },
	{ "wrong class", -ENOEXEC },
	{ "big endian", -ENOEXEC },
	{ "bad e_version", -ENOEXEC },
	{ "ET_REL", -ENOEXEC },
	{ "phentsize 32", -ENOEXEC },
	{ "phnum 0", -ENOEXEC },
	{ "phnum 74", -ENOEXEC },
	{ "phoff beyond file", -ENOEXEC },
	{ "phdrs cross end of file", -ENOEXEC },
	{ "phoff overflow", -ENOEXEC },
	{ "filesz > memsz", -EINVAL },
	{ "offset+filesz beyond file", -ENOEXEC },
	{ "offset overflow", -ENOEXEC },
	{ "huge memsz", -EINVAL },
	{ "segment end beyond user space", -EINVAL },
	{ "vaddr wraps", -EINVAL },
	{ "vaddr/offset not congruent", -EINVAL },
	{ "overlapping segments", -ENOEXEC },
	{ "PT_INTERP", -ENOEXEC },
	{ "no PT_LOAD", -ENOEXEC },
	{ "entry beyond user space", -EINVAL },
	{ "segment below mmap_min_addr", -EPERM },
};

/* Apply bad case k to a copy of the standard image; returns its size. */
static size_t make_bad(int k, uint8_t *img)
{
	size_t size = IMG_SIZE;
	elf_image(img, size, ET_EXEC, 0x401000, std_segs, 3);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + 64);
	switch (k) {
	case 0: size = 40; break;
	case 1: eh->e_ident[1] = 'X'; break;
	case 2: eh->e_machine = 3; break;
	case 3: eh->e_ident[EI_CLASS] = 1; break;
	case 4: eh->e_ident[EI_DATA] = 2; break;
	case 5: eh->e_version = 0; break;
	case 6: eh->e_type = 1; break;
	case 7: eh->e_phentsize = 32; break;
	case 8: eh->e_phnum = 0; break;
	case 9: eh->e_phnum = 74; break;
	case 10: eh->e_phoff = size + 8; break;
	case 11: eh->e_phoff = size - 60; break;
	case 12: eh->e_phoff = ~0UL - 0x3f; break;
	case 13: ph[1].p_memsz = 0x200; break;
	case 14: ph[1].p_filesz = 0x1000; break;
	case 15: ph[1].p_offset = 0xfffffffffffff100UL; break;
	case 16: ph[1].p_memsz = 1UL << 47; break;
	case 17: ph[1].p_vaddr = 0x7ffffffff100UL; break;
	case 18: ph[1].p_vaddr = 0xfffffffffffff100UL; break;
	case 19: ph[1].p_vaddr = 0x402200; break;
	case 20: ph[1].p_vaddr = 0x401100; break;
	case 21: ph[2].p_type = PT_INTERP; break;
	case 22: ph[0].p_type = PT_NOTE; ph[1].p_type = PT_NOTE; break;
	case 23: eh->e_entry = USER_TOP; break;
	case 24: ph[0].p_vaddr = 0x1000; break;
	}
	return size;
}

MAP_KTEST(elf_load_rejects_bad_files_without_leaks)
{
	uint8_t *img = kmalloc(IMG_SIZE, 0);
	KT_ASSERT(img != NULL);
	uint64_t before = ktest_settled_free();
	/* Several rounds, so that a leak of a small allocation shows in pages. */
	for (int round = 0; round < 12; round++) {
		for (int k = 0; k < (int)ARRAY_SIZE(bad_cases); k++) {
			size_t size = make_bad(k, img);
			char *arch = NULL;
			struct inode *root = tree_with(img, size, &arch);
			KT_ASSERT(root != NULL);
			struct vm_map *map = vm_map_create();
			KT_ASSERT(map != NULL);
			struct elf_info info;
			int err = elf_load(prog_of(root), map, &info);
			if (err != bad_cases[k].err)
				ktest_fail(kt, __FILE__, __LINE__, "%s: got %d, expected %d",
					   bad_cases[k].what, err, bad_cases[k].err);
			if (round == 0 && map->nregions != 0)
				ktest_fail(kt, __FILE__, __LINE__, "%s: %d regions left",
					   bad_cases[k].what, map->nregions);
			vm_map_destroy(map);
			fs_tree_free(root);
			kfree(arch);
		}
	}
	/* Not a regular file. */
	struct inode *root = fs_tree_create();
	KT_ASSERT(root != NULL);
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	struct elf_info info;
	KT_EXPECT_EQ(elf_load(root, map, &info), -EACCES);
	vm_map_destroy(map);
	fs_tree_free(root);
	/* And the unmodified image still loads (the cases above are real). */
	make_bad(-1, img);
	char *arch = NULL;
	root = tree_with(img, IMG_SIZE, &arch);
	KT_ASSERT(root != NULL);
	map = vm_map_create();
	KT_ASSERT(map != NULL);
	KT_EXPECT_EQ(elf_load(prog_of(root), map, &info), 0);
	vm_map_destroy(map);
	fs_tree_free(root);
	kfree(arch);
	KT_EXPECT_EQ(ktest_settled_free(), before);
	kfree(img);
}

/* ---- the stack ---- */

static uint64_t rd(vaddr_t va)
{
	uint64_t v = 0xbadbadbadUL;
	if (copyin(&v, U(va), 8) != 0)
		return 0xbadbadbadUL;
	return v;
}

static bool user_str_is(vaddr_t va, const char *s)
{
	char buf[64];
	size_t len = 0;
	return copyinstr(buf, U(va), sizeof(buf), &len) == 0 && strcmp(buf, s) == 0;
}

MAP_KTEST(elf_build_stack_layout_argv_envp_auxv)
{
	uint64_t before = ktest_settled_free();
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	struct elf_info info = { .entry = 0x401000, .phdr = 0x400040, .phnum = 3,
				 .phent = 56, .execfn = "/bin/prog" };
	char *argv[] = { "prog", "-x", "hello world" };
	char *envp[] = { "A=1", "PATH=/bin" };
	uint64_t sp = 0;
	KT_ASSERT(elf_build_stack(map, argv, 3, envp, 2, &info, &sp) == 0);
	vaddr_t s, e;
	KT_EXPECT_EQ(prot_at(map, ELF_STACK_TOP - 1, &s, &e), RW);
	/* the arguments' page plus ELF_STACK_EXPAND; faults below grow it */
	KT_EXPECT(s == ELF_STACK_TOP - PAGE_SIZE - ELF_STACK_EXPAND && e == ELF_STACK_TOP);
	KT_EXPECT_EQ(sp & 15, 0);
	KT_EXPECT(sp > ELF_STACK_TOP - 4096 && sp < ELF_STACK_TOP);

	pmap_activate(map->pmap);
	KT_EXPECT_EQ(rd(sp), 3);
	vaddr_t prev = sp;
	for (int i = 0; i < 3; i++) {
		vaddr_t a = rd(sp + 8 + 8 * i);
		KT_EXPECT(user_str_is(a, argv[i]));
		KT_EXPECT(a > prev);                                 /* strings ascending */
		prev = a;
	}
	KT_EXPECT_EQ(rd(sp + 8 * 4), 0);
	vaddr_t ev = sp + 8 * 5;
	for (int i = 0; i < 2; i++) {
		vaddr_t a = rd(ev + 8 * i);
		KT_EXPECT(user_str_is(a, envp[i]));
		KT_EXPECT(a > prev);
		prev = a;
	}
	KT_EXPECT_EQ(rd(ev + 16), 0);
	/* auxv: every key once, AT_NULL last. */
	uint64_t val[64];
	int seen[64];
	memset(seen, 0, sizeof(seen));
	vaddr_t av = ev + 24;
	int n = 0;
	for (; n < 40; n++) {
		uint64_t k = rd(av + 16 * n), v = rd(av + 16 * n + 8);
		if (k == AT_NULL)
			break;
		KT_ASSERT(k < 64);
		seen[k]++;
		val[k] = v;
	}
	KT_EXPECT(n < 40);
	static const int keys[] = { AT_PHDR, AT_PHENT, AT_PHNUM, AT_PAGESZ, AT_ENTRY, AT_UID,
				    AT_EUID, AT_GID, AT_EGID, AT_SECURE, AT_RANDOM, AT_HWCAP,
				    AT_CLKTCK, AT_EXECFN, AT_PLATFORM, AT_BASE, AT_FLAGS };
	for (int i = 0; i < (int)ARRAY_SIZE(keys); i++)
		KT_EXPECT_EQ(seen[keys[i]], 1);
	KT_EXPECT_EQ(val[AT_PHDR], 0x400040);
	KT_EXPECT_EQ(val[AT_PHENT], 56);
	KT_EXPECT_EQ(val[AT_PHNUM], 3);
	KT_EXPECT_EQ(val[AT_PAGESZ], 4096);
	KT_EXPECT_EQ(val[AT_ENTRY], 0x401000);
	KT_EXPECT_EQ(val[AT_UID] | val[AT_EUID] | val[AT_GID] | val[AT_EGID], 0);
	KT_EXPECT_EQ(val[AT_SECURE], 0);
	KT_EXPECT_EQ(val[AT_CLKTCK], 100);
	vaddr_t aux_end = av + 16 * (n + 1);
	KT_EXPECT(val[AT_RANDOM] >= aux_end && val[AT_RANDOM] + 16 <= ELF_STACK_TOP);
	uint64_t rnd[2] = { 0, 0 };
	KT_EXPECT_EQ(copyin(rnd, U(val[AT_RANDOM]), 16), 0);
	KT_EXPECT(rnd[0] != 0 || rnd[1] != 0);
	KT_EXPECT(user_str_is(val[AT_PLATFORM], "x86_64"));
	KT_EXPECT(user_str_is(val[AT_EXECFN], "/bin/prog"));
	KT_EXPECT(val[AT_EXECFN] > prev);                       /* above the strings */
	KT_EXPECT_EQ(val[AT_EXECFN] + sizeof("/bin/prog") + 8, ELF_STACK_TOP);
	KT_EXPECT_EQ(rd(ELF_STACK_TOP - 8), 0);
	pmap_deactivate();
	vm_map_destroy(map);

	/* No arguments at all: argc 0, two NULLs, AT_EXECFN "". */
	map = vm_map_create();
	KT_ASSERT(map != NULL);
	info.execfn = NULL;
	KT_ASSERT(elf_build_stack(map, NULL, 0, NULL, 0, &info, &sp) == 0);
	KT_EXPECT_EQ(sp & 15, 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(rd(sp), 0);
	KT_EXPECT_EQ(rd(sp + 8), 0);
	KT_EXPECT_EQ(rd(sp + 16), 0);
	KT_EXPECT(rd(sp + 24) != AT_NULL);
	pmap_deactivate();
	/* A second stack in the same map: the range is taken. */
	KT_EXPECT_EQ(elf_build_stack(map, NULL, 0, NULL, 0, &info, &sp), -ENOMEM);
	vm_map_destroy(map);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

MAP_KTEST(elf_build_stack_e2big_and_limits)
{
	uint64_t before = ktest_settled_free();
	size_t L = ELF_ARG_STRLEN_MAX;
	char *big = kmalloc(L + 1, 0);
	KT_ASSERT(big != NULL);
	memset(big, 'q', L);
	big[L - 1] = '\0';                       /* the longest allowed string */
	char *v[20];
	for (int i = 0; i < 20; i++)
		v[i] = big;
	struct elf_info info = { .entry = 0x401000, .phent = 56, .execfn = "x" };
	uint64_t sp;

	/* 17 strings of 128 KiB: over 2 MiB, in argv or split with envp. */
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	KT_EXPECT_EQ(elf_build_stack(map, v, 17, NULL, 0, &info, &sp), -E2BIG);
	KT_EXPECT_EQ(elf_build_stack(map, v, 9, v, 8, &info, &sp), -E2BIG);
	KT_EXPECT_EQ(elf_build_stack(map, NULL, 0, v, 17, &info, &sp), -E2BIG);
	big[L - 1] = 'q';                        /* one string over the limit */
	big[L] = '\0';
	KT_EXPECT_EQ(elf_build_stack(map, v, 1, NULL, 0, &info, &sp), -E2BIG);
	KT_EXPECT_EQ(elf_build_stack(map, NULL, 0, v, 1, &info, &sp), -E2BIG);
	KT_EXPECT_EQ(elf_build_stack(map, v, -1, NULL, 0, &info, &sp), -EINVAL);
	/* A smaller stack rlimit lowers the limit (a quarter of it, as Linux):
	 * 1 MiB -> 256 KiB, so two strings of 128 KiB no longer fit. */
	big[L - 1] = '\0';
	KT_EXPECT_EQ(elf_arg_max(1UL << 20), 256 * 1024);
	KT_EXPECT_EQ(elf_arg_max(4096), ELF_ARG_STRLEN_MAX);     /* at least 32 pages */
	KT_EXPECT_EQ(elf_arg_max(~0UL), ELF_ARG_MAX);
	info.arg_max = elf_arg_max(1UL << 20);
	KT_EXPECT_EQ(elf_build_stack(map, v, 2, NULL, 0, &info, &sp), -E2BIG);
	KT_EXPECT_EQ(elf_build_stack(map, v, 1, v, 1, &info, &sp), -E2BIG);
	info.arg_max = 0;
	KT_EXPECT_EQ(map->nregions, 0);          /* nothing mapped */
	vm_map_destroy(map);

	/* 15 of them fit (15 * (128 KiB + 8) < 2 MiB) and are all there. */
	big[L - 1] = '\0';
	map = vm_map_create();
	KT_ASSERT(map != NULL);
	KT_ASSERT(elf_build_stack(map, v, 10, v, 5, &info, &sp) == 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(rd(sp), 10);
	char *back = kmalloc(L, 0);
	KT_ASSERT(back != NULL);
	size_t len = 0;
	KT_EXPECT_EQ(copyinstr(back, U(rd(sp + 8 + 8 * 9)), L, &len), 0);
	KT_EXPECT_EQ(len, L);
	KT_EXPECT(memcmp(back, big, L) == 0);
	KT_EXPECT_EQ(copyinstr(back, U(rd(sp + 8 * 12 + 8 * 4)), L, &len), 0);
	KT_EXPECT_EQ(len, L);
	KT_EXPECT_EQ(rd(sp + 8 * 12 + 8 * 5), 0);
	pmap_deactivate();
	kfree(back);
	vm_map_destroy(map);
	kfree(big);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/* The real program of the boot module's /init (itself, or its "#!"
 * interpreter) loads, and so does its stack. */
MAP_KTEST(elf_load_boot_init)
{
	if (bootinfo.initrd_start == 0)
		KT_SKIP("no -initrd given");
	struct inode *ip = NULL;
	KT_ASSERT(initramfs_boot_elf(&ip) == 0);
	uint64_t before = ktest_settled_free();
	struct vm_map *map = vm_map_create();
	KT_ASSERT(map != NULL);
	struct elf_info info;
	KT_ASSERT(elf_load(ip, map, &info) == 0);
	KT_EXPECT(prot_at(map, info.entry, NULL, NULL) & PROT_EXEC);
	KT_EXPECT(info.phnum > 0 && info.phent == 56);
	KT_EXPECT(info.phdr != 0);
	char *argv[] = { "/init" };
	uint64_t sp;
	KT_EXPECT_EQ(elf_build_stack(map, argv, 1, NULL, 0, &info, &sp), 0);
	pmap_activate(map->pmap);
	KT_EXPECT_EQ(rd(sp), 1);
	Elf64_Phdr ph;                           /* AT_PHDR points at the headers */
	KT_EXPECT_EQ(copyin(&ph, U(info.phdr), sizeof(ph)), 0);
	KT_EXPECT(ph.p_type != 0 || ph.p_memsz == 0);
	pmap_deactivate();
	vm_map_destroy(map);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}

/* The loader and the stack builder under allocation failure (failslab= and
 * failpage= at 5 %, as inside a system call): each attempt succeeds or
 * gives -ENOMEM, and nothing is left allocated. */
MAP_KTEST(elf_load_with_failing_allocations_leaks_nothing)
{
	if (bootinfo.initrd_start == 0)
		KT_SKIP("no -initrd given");
	struct inode *ip = NULL;
	KT_ASSERT(initramfs_boot_elf(&ip) == 0);
	uint64_t before = ktest_settled_free();
	int saved[2] = { fail_percent[FAIL_SLAB], fail_percent[FAIL_PAGE] };
	struct thread *t = curthread();
	int failed = 0;
	for (int i = 0; i < 100; i++) {
		fail_percent[FAIL_SLAB] = fail_percent[FAIL_PAGE] = 5;
		t->in_syscall = true;
		struct vm_map *map = vm_map_create();
		int r = -ENOMEM;
		if (map) {
			struct elf_info info;
			r = elf_load(ip, map, &info);
			char *argv[] = { "/init" };
			uint64_t sp;
			if (r == 0)
				r = elf_build_stack(map, argv, 1, NULL, 0, &info, &sp);
		}
		t->in_syscall = false;
		fail_percent[FAIL_SLAB] = saved[0];
		fail_percent[FAIL_PAGE] = saved[1];
		if (map)
			vm_map_destroy(map);
		if (r != 0 && r != -ENOMEM)
			ktest_fail(kt, __FILE__, __LINE__, "attempt %d gave %d", i, r);
		failed += r != 0;
	}
	KT_EXPECT(failed > 0);
	KT_EXPECT_EQ(ktest_settled_free(), before);
}
