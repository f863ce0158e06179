/*
 * Multiboot (v1) information: command line, memory map, modules (the
 * initramfs).  Called first thing on the boot CPU, while only the boot page
 * tables (first 1 GiB direct-mapped) exist.
 */
#include "kernel.h"
#include "boot.h"
#include "vm.h"

#define MB_BOOT_MAGIC 0x2BADB002
#define MBI_CMDLINE   (1u << 2)
#define MBI_MODS      (1u << 3)
#define MBI_MMAP      (1u << 6)

struct mb_info {
	uint32_t flags, mem_lower, mem_upper, boot_device, cmdline;
	uint32_t mods_count, mods_addr;
	uint32_t syms[4];
	uint32_t mmap_length, mmap_addr;
} __packed;

struct mb_mod {
	uint32_t start, end, string, reserved;
} __packed;

struct mb_mmap {
	uint32_t size;
	uint64_t base, len;
	uint32_t type;
} __packed;

struct bootinfo bootinfo;
extern char _end[];

static void reserve_to(paddr_t end)
{
	if (end > bootinfo.reserved_end)
		bootinfo.reserved_end = end;
}

static void copy_cmdline(const char *s)
{
	/* The loader passes "kernel-path options...": drop the path. */
	while (*s && *s != ' ')
		s++;
	while (*s == ' ')
		s++;
	strlcpy(bootinfo.cmdline, s, sizeof(bootinfo.cmdline));
}

void multiboot_parse(uint32_t magic, uint32_t mbi_pa)
{
	bootinfo.reserved_end = V2P(_end);
	if (magic != MB_BOOT_MAGIC)
		panic("not started by a Multiboot loader (magic 0x%x)", magic);
	const struct mb_info *mbi = P2V(mbi_pa);
	reserve_to(mbi_pa + sizeof(*mbi));

	if (mbi->flags & MBI_CMDLINE) {
		const char *cl = P2V(mbi->cmdline);
		copy_cmdline(cl);
		reserve_to(mbi->cmdline + strlen(cl) + 1);
	}
	if ((mbi->flags & MBI_MODS) && mbi->mods_count > 0) {
		const struct mb_mod *m = P2V(mbi->mods_addr);
		reserve_to(mbi->mods_addr + mbi->mods_count * sizeof(*m));
		bootinfo.initrd_start = m[0].start;
		bootinfo.initrd_end = m[0].end;
		for (uint32_t i = 0; i < mbi->mods_count; i++)
			reserve_to(m[i].end);
	}
	if (!(mbi->flags & MBI_MMAP))
		panic("boot loader gave no memory map");
	reserve_to(mbi->mmap_addr + mbi->mmap_length);
	for (uint32_t off = 0; off < mbi->mmap_length;) {
		const struct mb_mmap *e = P2V(mbi->mmap_addr + off);
		if (e->type == 1 && e->len && bootinfo.nram < MAX_MEMREGIONS) {
			bootinfo.ram[bootinfo.nram].base = e->base;
			bootinfo.ram[bootinfo.nram].len = e->len;
			bootinfo.nram++;
		}
		off += e->size + 4;
	}
	bootinfo.reserved_end = ALIGN_UP(bootinfo.reserved_end, PAGE_SIZE);
}
