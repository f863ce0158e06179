/*
 * ELF64 loader for static x86-64 executables and the initial user stack.
 * See elf.h for what is accepted and the errors.
 *
 * Writing into the new address space.  The map is not loaded on any CPU
 * (exec builds it before switching to it), so instead of copyout the loader
 * resolves each page with vm_fault (demand zero: a private page, count 1,
 * in this map only) and writes it through the kernel's direct map.  That
 * works whatever the segment's final rights are (a read fault is allowed on
 * any region with some right) and whichever CPU the thread runs on, so the
 * caller need not be bound to a CPU.
 */
#include "kernel.h"
#include "elf.h"
#include "errno.h"
#include "initramfs.h"
#include "kmem.h"
#include "page.h"
#include "pmap.h"
#include "proc.h"
#include "random.h"
#include "vm_map.h"
#include "x86.h"

#define P           PAGE_SIZE
#define ANON_FIXED  (MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS)

/* ---- writing into a map that is not loaded ---- */

/* A cursor over a map's pages: the last page resolved, cached. */
struct uwriter {
	struct vm_map *map;
	vaddr_t page;           /* page resolved, or 1 (none) */
	uint8_t *kva;           /* its kernel address (direct map) */
};

static void uw_init(struct uwriter *uw, struct vm_map *map)
{
	uw->map = map;
	uw->page = 1;
	uw->kva = NULL;
}

/*
 * The kernel address of user address va in uw->map: faults the page in.
 * 0 or -ENOMEM/-EFAULT.  The page must be this map's own (count 1): writing
 * a shared copy-on-write page through the direct map would change others.
 */
static int uw_resolve(struct uwriter *uw, vaddr_t va, uint8_t **kva)
{
	vaddr_t page = ALIGN_DOWN(va, P);
	if (page != uw->page) {
		int err = vm_fault(uw->map, page, PROT_READ);
		if (err)
			return err;
		paddr_t pa = pmap_extract(uw->map->pmap, page);
		if (pa == 0)
			return -EFAULT;
		struct page *pg = pa_to_page(pa);
		if (pg == NULL || page_refcount(pg) != 1)
			return -EFAULT;
		uw->page = page;
		uw->kva = P2V(pa);
	}
	*kva = uw->kva + (va - page);
	return 0;
}

/* Copy len bytes from kernel src to user va (src NULL: zeroes). */
static int uw_write(struct uwriter *uw, vaddr_t va, const void *src, size_t len)
{
	const uint8_t *s = src;
	while (len > 0) {
		uint8_t *k;
		int err = uw_resolve(uw, va, &k);
		if (err)
			return err;
		size_t n = MIN(len, P - (va & (P - 1)));
		if (s) {
			memcpy(k, s, n);
			s += n;
		} else {
			memset(k, 0, n);
		}
		va += n;
		len -= n;
	}
	return 0;
}

/* Copy len bytes of file ip at off to user va. */
static int uw_write_file(struct uwriter *uw, vaddr_t va, struct inode *ip, uint64_t off,
			 size_t len)
{
	while (len > 0) {
		uint8_t *k;
		int err = uw_resolve(uw, va, &k);
		if (err)
			return err;
		size_t n = MIN(len, P - (va & (P - 1)));
		if (fs_read(ip, k, n, off) != (ssize_t)n)
			return -EIO;
		va += n;
		off += n;
		len -= n;
	}
	return 0;
}

/* ---- checking ---- */

static int check_ehdr(const Elf64_Ehdr *eh, uint64_t fsize)
{
	if (memcmp(eh->e_ident, "\177ELF", 4) != 0)
		return -ENOEXEC;
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh->e_ident[EI_VERSION] != EV_CURRENT || eh->e_version != EV_CURRENT)
		return -ENOEXEC;
	if (eh->e_machine != EM_X86_64)
		return -ENOEXEC;
	if (eh->e_type != ET_EXEC && eh->e_type != ET_DYN)
		return -ENOEXEC;
	if (eh->e_phentsize != sizeof(Elf64_Phdr))
		return -ENOEXEC;
	if (eh->e_phnum == 0 || eh->e_phnum > ELF_MAX_PHNUM)
		return -ENOEXEC;
	uint64_t phsize = (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr);
	if (eh->e_phoff > fsize || phsize > fsize - eh->e_phoff)
		return -ENOEXEC;
	return 0;
}

/* Checks of one PT_LOAD against the file size and the user space. */
static int check_load(const Elf64_Phdr *ph, uint64_t bias, uint64_t fsize)
{
	if (ph->p_filesz > ph->p_memsz)
		return -EINVAL;
	if (ph->p_memsz > USER_TOP || ph->p_vaddr > USER_TOP - bias)
		return -EINVAL;
	uint64_t va = ph->p_vaddr + bias;
	if (va > USER_TOP - ph->p_memsz)
		return -EINVAL;
	if (((ph->p_vaddr - ph->p_offset) & (P - 1)) != 0)
		return -EINVAL;
	if (ph->p_filesz && (ph->p_offset > fsize || ph->p_filesz > fsize - ph->p_offset))
		return -ENOEXEC;
	return 0;
}

static int prot_of(uint32_t pflags)
{
	return ((pflags & PF_R) ? PROT_READ : 0) | ((pflags & PF_W) ? PROT_WRITE : 0) |
	       ((pflags & PF_X) ? PROT_EXEC : 0);
}

/*
 * Check every program header; fill load[] with the non-empty PT_LOADs in
 * increasing address order (*nload of them).  0 or -errno.
 */
static int check_phdrs(const Elf64_Ehdr *eh, const Elf64_Phdr *ph, uint64_t bias,
		       uint64_t fsize, const Elf64_Phdr **load, int *nload)
{
	int n = 0;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		int err = check_load(&ph[i], bias, fsize);
		if (err)
			return err;
		/* The part beyond the file's pages is anonymous memory: Linux
		 * maps it with vm_brk, which is charged against overcommit. */
		vaddr_t va = ph[i].p_vaddr + bias;
		uint64_t anon = ALIGN_UP(va + ph[i].p_memsz, P) - ALIGN_UP(va + ph[i].p_filesz, P);
		if (!vm_enough_memory(anon >> PAGE_SHIFT))
			return -ENOMEM;
		if (ph[i].p_memsz == 0)
			continue;
		int j = n++;                         /* insertion sort by address */
		while (j > 0 && load[j - 1]->p_vaddr > ph[i].p_vaddr) {
			load[j] = load[j - 1];
			j--;
		}
		load[j] = &ph[i];
	}
	if (n == 0)
		return -ENOEXEC;
	for (int i = 1; i < n; i++)
		if (load[i]->p_vaddr < load[i - 1]->p_vaddr + load[i - 1]->p_memsz)
			return -ENOEXEC;             /* overlapping segments */
	if (eh->e_entry > USER_TOP - bias || eh->e_entry + bias >= USER_TOP)
		return -EINVAL;
	*nload = n;
	return 0;
}

/* ---- mapping ---- */

/* Where the previous segment left off (segments go in address order). */
struct map_state {
	vaddr_t mapped_end;     /* end of the pages mapped so far */
	int last_prot;          /* rights of the page before mapped_end */
	vaddr_t prev_end;       /* byte end of the previous segment */
};

/* Rights a region is mapped with while loading: some right to fault on. */
static int load_prot(int prot)
{
	return prot ? prot : PROT_READ;
}

/* Copy segment ph's file bytes for user [a, b) (nothing if empty); the
 * segment starts at va, and p_offset is congruent to va mod P. */
static int copy_file_bytes(struct uwriter *uw, struct inode *ip, const Elf64_Phdr *ph,
			   vaddr_t va, vaddr_t a, vaddr_t b)
{
	if (a >= b)
		return 0;
	uint64_t off = a <= va ? ph->p_offset - (va - a) : ph->p_offset + (a - va);
	return uw_write_file(uw, a, ip, off, b - a);
}

/*
 * Map segment ph (address va).  Its pages that hold nothing but file bytes
 * are a private mapping of the file (copy-on-write, shared with the file's
 * pages and every other process running it, as Linux maps a program); the
 * rest is anonymous and the file's bytes are copied in: a first page shared
 * with the previous segment (which gets the union of both rights), the page
 * where the file bytes end if bss follows them there (zeroed), and the
 * segment's last page if the next segment (which starts at next_va) shares
 * it and will write its own bytes there.  A last page that is neither is
 * file-mapped too, with the file's bytes past the segment's end showing, as
 * on Linux: a small program's text is then the file's own page on every
 * exec, not a fresh copy (which, under emulation, also had its code
 * translated anew each time).
 */
static int load_segment(struct vm_map *map, struct inode *ip, const Elf64_Phdr *ph,
			vaddr_t va, vaddr_t next_va, struct map_state *ms)
{
	vaddr_t start = ALIGN_DOWN(va, P), end = ALIGN_UP(va + ph->p_memsz, P);
	int prot = prot_of(ph->p_flags);
	vaddr_t from = start;
	int err;
	if (start < ms->mapped_end) {            /* first page shared */
		int u = ms->last_prot | prot;
		if (u != ms->last_prot) {
			err = vm_mprotect(map, ms->mapped_end - P, P, load_prot(u));
			if (err)
				return err;
			ms->last_prot = u;
		}
		from = ms->mapped_end;
	}
	vaddr_t fend = va + ph->p_filesz;        /* end of the file's bytes */
	vaddr_t fmap_end = from;                 /* file-mapped: [from, fmap_end) */
	if (from < end && ph->p_filesz > 0 && vm_inode_mappable(ip)) {
		fmap_end = MAX(from, MIN(ALIGN_DOWN(fend, P), end - P));
		/* The last page too: file bytes up to the segment's end (no
		 * bss), and the next segment starts on a later page. */
		if (fmap_end == end - P && fend > end - P && ph->p_memsz == ph->p_filesz &&
		    ALIGN_DOWN(next_va, P) >= end)
			fmap_end = end;
	}
	if (fmap_end > from) {
		/* p_offset and p_vaddr are congruent mod P (check_phdrs) */
		err = vm_mmap_inode_private(map, from, fmap_end - from, load_prot(prot), ip,
					    ph->p_offset - (va - from));
		if (err)
			return err;
	}
	if (fmap_end < end) {
		vaddr_t got;
		err = vm_mmap(map, fmap_end, end - fmap_end, load_prot(prot), ANON_FIXED, &got);
		if (err)
			return err;
	}
	if (from < end) {
		ms->mapped_end = end;
		ms->last_prot = prot;
	}

	struct uwriter uw;
	uw_init(&uw, map);
	if (ph->p_filesz > 0) {
		/* From the page start (or the previous segment's end) to
		 * p_filesz, less the file-mapped pages [from, fmap_end). */
		vaddr_t cfrom = MAX(start, ms->prev_end);
		if ((err = copy_file_bytes(&uw, ip, ph, va, cfrom, MIN(fend, from))) != 0 ||
		    (err = copy_file_bytes(&uw, ip, ph, va, MAX(cfrom, fmap_end), fend)) != 0)
			return err;
		/* The bss part of the last file page (the rest is fresh zero pages). */
		vaddr_t zend = MIN(ALIGN_UP(fend, P), va + ph->p_memsz);
		if (zend > fend && (err = uw_write(&uw, fend, NULL, zend - fend)) != 0)
			return err;
	}
	ms->prev_end = va + ph->p_memsz;
	return 0;
}

/* True if a segment other than load[i] with some right touches page pg. */
static bool page_shared_with_rights(const Elf64_Phdr **load, int n, int i, vaddr_t pg)
{
	for (int j = 0; j < n; j++) {
		if (j == i || prot_of(load[j]->p_flags) == PROT_NONE)
			continue;
		vaddr_t a = ALIGN_DOWN(load[j]->p_vaddr, P);
		vaddr_t b = ALIGN_UP(load[j]->p_vaddr + load[j]->p_memsz, P);
		if (a <= pg && pg < b)
			return true;
	}
	return false;
}

/*
 * PT_LOAD segments without rights were mapped readable to be filled: take
 * the rights away now, except on pages another segment with rights shares.
 */
static int protect_none_segments(struct vm_map *map, const Elf64_Phdr **load, int n,
				 uint64_t bias)
{
	for (int i = 0; i < n; i++) {
		if (prot_of(load[i]->p_flags) != PROT_NONE)
			continue;
		vaddr_t a = ALIGN_DOWN(load[i]->p_vaddr + bias, P);
		vaddr_t b = ALIGN_UP(load[i]->p_vaddr + bias + load[i]->p_memsz, P);
		if (page_shared_with_rights(load, n, i, a - bias))
			a += P;
		if (b > a && page_shared_with_rights(load, n, i, b - P - bias))
			b -= P;
		if (a < b) {
			int err = vm_mprotect(map, a, b - a, PROT_NONE);
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * PT_INTERP, as Linux reads it: a size outside [2, PATH_MAX] or a path
 * without its NUL: -ENOEXEC; beyond the file: -EIO; an interpreter that
 * cannot be found: the lookup's error (ENOENT...), one that is not a regular
 * file: -EACCES.  *interp: the interpreter (lent, as fs_lookup lends) or
 * NULL for a static program.  Relative paths start at the root.
 */
static int find_interp(const Elf64_Ehdr *eh, const Elf64_Phdr *ph, struct inode *ip,
		       uint64_t fsize, struct inode **interp)
{
	*interp = NULL;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_INTERP)
			continue;
		uint64_t n = ph[i].p_filesz;
		if (n < 2 || n > FS_PATH_MAX)
			return -ENOEXEC;
		if (ph[i].p_offset > fsize || n > fsize - ph[i].p_offset)
			return -EIO;
		char *path = kmalloc(n, 0);
		if (path == NULL)
			return -ENOMEM;
		int err = -EIO;
		if (fs_read(ip, path, n, ph[i].p_offset) == (ssize_t)n) {
			err = -ENOEXEC;
			if (path[n - 1] == '\0')
				err = fs_lookup(NULL, path, 0, interp);
		}
		kfree(path);
		if (err == 0) {
			struct fs_stat st;
			fs_stat(*interp, &st);
			if (!S_ISREG(st.mode))
				err = -EACCES;
		}
		if (err)
			*interp = NULL;
		return err;
	}
	return 0;
}

/* Read the ELF and program headers; *php is kmalloc'd.  0 or -errno. */
static int read_headers(struct inode *ip, uint64_t fsize, Elf64_Ehdr *eh, Elf64_Phdr **php)
{
	if (fsize < sizeof(*eh) || fs_read(ip, eh, sizeof(*eh), 0) != sizeof(*eh))
		return -ENOEXEC;
	int err = check_ehdr(eh, fsize);
	if (err)
		return err;
	size_t phsize = (size_t)eh->e_phnum * sizeof(Elf64_Phdr);
	Elf64_Phdr *ph = kmalloc(phsize, 0);
	if (ph == NULL)
		return -ENOMEM;
	if (fs_read(ip, ph, phsize, eh->e_phoff) != (ssize_t)phsize) {
		kfree(ph);
		return -ENOEXEC;
	}
	*php = ph;
	return 0;
}

uint64_t elf_rnd_pages(uint64_t range)
{
	uint64_t r;
	random_bytes(&r, sizeof(r));
	return (r % (range >> PAGE_SHIFT)) << PAGE_SHIFT;
}

/* Maps the checked PT_LOAD segments load[0..n) at bias (their pages' rights
 * settled last); ms says where the last one ended. */
static int map_segments(struct vm_map *map, struct inode *ip, const Elf64_Phdr **load, int n,
			uint64_t bias, struct map_state *ms)
{
	*ms = (struct map_state){ 0, 0, 0 };
	for (int i = 0; i < n; i++) {
		vaddr_t next_va = i + 1 < n ? load[i + 1]->p_vaddr + bias : USER_TOP;
		int err = load_segment(map, ip, load[i], load[i]->p_vaddr + bias, next_va, ms);
		if (err)
			return err;
	}
	return protect_none_segments(map, load, n, bias);
}

/*
 * Loads the interpreter ip into map: ET_DYN at a free range the mmap
 * allocator picks (below map->mmap_top, as Linux places it), ET_EXEC where
 * it says.  *base: its load bias (AT_BASE), *entry: where it starts.
 * A file that is not a loadable x86-64 ELF: -ELIBBAD (-EIO if shorter than
 * an ELF header, as Linux); -ENOMEM.
 */
static int load_interp(struct inode *ip, struct vm_map *map, uint64_t *base, uint64_t *entry)
{
	struct fs_stat st;
	fs_stat(ip, &st);
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL;
	if (st.size < sizeof(eh))
		return -EIO;                    /* Linux: a short read of the header */
	int err = read_headers(ip, st.size, &eh, &ph);
	if (err)
		return err == -ENOMEM ? err : -ELIBBAD;
	const Elf64_Phdr **load = kmalloc(eh.e_phnum * sizeof(*load), 0);
	if (load == NULL) {
		kfree(ph);
		return -ENOMEM;
	}
	uint64_t lo = UINT64_MAX, hi = 0, bias = 0;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_memsz > 0 &&
		    ph[i].p_vaddr <= USER_TOP && ph[i].p_memsz <= USER_TOP - ph[i].p_vaddr) {
			lo = MIN(lo, ALIGN_DOWN(ph[i].p_vaddr, P));
			hi = MAX(hi, ALIGN_UP(ph[i].p_vaddr + ph[i].p_memsz, P));
		}
	err = -ELIBBAD;
	if (lo >= hi)
		goto out;
	if (eh.e_type == ET_DYN) {
		/* Reserve the whole span to find room, then map over it. */
		vaddr_t got;
		err = vm_mmap(map, 0, hi - lo, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, &got);
		if (err)
			goto out;
		bias = got - lo;
		if ((err = vm_munmap(map, got, hi - lo)) != 0)
			goto out;
	}
	int nload = 0;
	if ((err = check_phdrs(&eh, ph, bias, st.size, load, &nload)) != 0) {
		err = err == -ENOMEM ? err : -ELIBBAD;
		goto out;
	}
	struct map_state ms;
	if ((err = map_segments(map, ip, load, nload, bias, &ms)) != 0)
		goto out;
	*base = bias;
	*entry = eh.e_entry + bias;
out:
	kfree(load);
	kfree(ph);
	return err;
}

int elf_load(struct inode *ip, struct vm_map *map, struct elf_info *out)
{
	return elf_load_rnd(ip, map, false, out);
}

int elf_load_rnd(struct inode *ip, struct vm_map *map, bool rnd, struct elf_info *out)
{
	struct fs_stat st;
	fs_stat(ip, &st);
	if (!S_ISREG(st.mode))
		return -EACCES;
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL;
	const Elf64_Phdr **load = NULL;
	int nload = 0;
	int err = read_headers(ip, st.size, &eh, &ph);
	if (err)
		return err;
	uint64_t bias = eh.e_type != ET_DYN ? 0 : ELF_DYN_BASE + (rnd ? elf_rnd_pages(ELF_RND_DYN) : 0);
	load = kmalloc(eh.e_phnum * sizeof(*load), 0);
	if (load == NULL) {
		err = -ENOMEM;
		goto out;
	}
	struct inode *interp;
	if ((err = find_interp(&eh, ph, ip, st.size, &interp)) != 0)
		goto out;
	if ((err = check_phdrs(&eh, ph, bias, st.size, load, &nload)) != 0)
		goto out;

	/* Everything is checked: change the map. */
	struct map_state ms;
	if ((err = map_segments(map, ip, load, nload, bias, &ms)) != 0)
		goto out;
	uint64_t phdr = 0;              /* where a segment maps the program headers */
	for (int i = 0; i < nload; i++) {
		const Elf64_Phdr *p = load[i];
		if (p->p_offset <= eh.e_phoff && eh.e_phoff - p->p_offset < p->p_filesz)
			phdr = eh.e_phoff - p->p_offset + p->p_vaddr + bias;
	}
	vaddr_t brk = ALIGN_UP(ms.prev_end, P) + (rnd ? elf_rnd_pages(ELF_RND_BRK) : 0);
	vm_map_set_brk(map, brk);
	out->stack_top = ELF_STACK_TOP - (rnd ? elf_rnd_pages(ELF_RND_STACK) : 0);
	if (rnd) {
		lock_write(&map->lock);
		map->mmap_top = VM_MMAP_TOP - elf_rnd_pages(ELF_RND_MMAP);
		lock_done(&map->lock);
	}
	out->interp_base = 0;
	out->start = eh.e_entry + bias;
	if (interp && (err = load_interp(interp, map, &out->interp_base, &out->start)) != 0)
		goto out;

	out->entry = eh.e_entry + bias;
	out->phdr = phdr;
	out->phnum = eh.e_phnum;
	out->phent = eh.e_phentsize;
	out->bias = bias;
	out->brk = brk;
	out->execfn = NULL;
	out->arg_max = 0;
	out->sysinfo_ehdr = 0;
	struct proc *cp = curproc();          /* kernel tests: root */
	out->uid = cp ? READ_ONCE(cp->cred.ruid) : 0;
	out->euid = cp ? READ_ONCE(cp->cred.euid) : 0;
	out->gid = cp ? READ_ONCE(cp->cred.rgid) : 0;
	out->egid = cp ? READ_ONCE(cp->cred.egid) : 0;
	out->secure = out->uid != out->euid || out->gid != out->egid;
out:
	kfree(load);
	kfree(ph);
	return err;
}

/* ---- the initial stack ---- */

/*
 * Bytes of strings (with NULs) and pointer slots argv and envp need, or
 * -E2BIG beyond the limits (elf.h).
 */
static int64_t args_size(char *const v[], int n, int64_t total, uint64_t max)
{
	for (int i = 0; i < n; i++) {
		size_t l = strnlen(v[i], ELF_ARG_STRLEN_MAX) + 1;
		if (l > ELF_ARG_STRLEN_MAX)
			return -E2BIG;
		total += l + sizeof(uint64_t);
		if ((uint64_t)total > max)
			return -E2BIG;
	}
	return total;
}

/* Buffered writes of 64-bit words going up the stack. */
struct wordbuf {
	struct uwriter *uw;
	vaddr_t va;             /* user address of buf[0] */
	int n;
	uint64_t buf[64];
};

static int wb_flush(struct wordbuf *wb)
{
	int err = uw_write(wb->uw, wb->va, wb->buf, wb->n * sizeof(uint64_t));
	wb->va += wb->n * sizeof(uint64_t);
	wb->n = 0;
	return err;
}

static int wb_put(struct wordbuf *wb, uint64_t v)
{
	wb->buf[wb->n++] = v;
	return wb->n == (int)ARRAY_SIZE(wb->buf) ? wb_flush(wb) : 0;
}

/* Copy strings v[0..n) to user memory from *va up; their addresses to wb. */
static int put_strings(struct uwriter *uw, char *const v[], int n, vaddr_t *va,
		       struct wordbuf *wb)
{
	for (int i = 0; i < n; i++) {
		size_t l = strlen(v[i]) + 1;
		int err = uw_write(uw, *va, v[i], l);
		if (err == 0 && wb)
			err = wb_put(wb, *va);
		if (err)
			return err;
		*va += l;
	}
	return 0;
}

static uint64_t hwcap(void)
{
	uint32_t a, b, c, d;
	cpuid(1, 0, &a, &b, &c, &d);
	return d;
}

#define NAUXV 19        /* pairs written below at most, AT_NULL included */

void elf_env_range(const struct elf_info *info, char *const envp_k[], int envc, const char *execfn,
		   uint64_t *start, uint64_t *end)
{
	/* as elf_build_stack lays them out: envp strings end at execfn's */
	size_t fnlen = strnlen(execfn, FS_PATH_MAX) + 1;
	vaddr_t top = info->stack_top ? info->stack_top : ELF_STACK_TOP;
	uint64_t bytes = 0;
	for (int i = 0; i < envc; i++)
		bytes += strnlen(envp_k[i], ELF_ARG_STRLEN_MAX) + 1;
	*end = top - 8 - fnlen;
	*start = *end - bytes;
}

int elf_build_stack(struct vm_map *map, char *const argv_k[], int argc,
		    char *const envp_k[], int envc, const struct elf_info *info,
		    uint64_t *sp_out)
{
	static const char platform[] = "x86_64";
	if (argc < 0 || envc < 0)
		return -EINVAL;
	const char *execfn = info->execfn ? info->execfn : (argc > 0 ? argv_k[0] : "");
	uint64_t max = info->arg_max ? MIN(info->arg_max, ELF_ARG_MAX) : ELF_ARG_MAX;
	int64_t total = args_size(argv_k, argc, 0, max);
	if (total >= 0)
		total = args_size(envp_k, envc, total, max);
	if (total < 0)
		return (int)total;
	size_t fnlen = strnlen(execfn, FS_PATH_MAX) + 1;
	if (fnlen > FS_PATH_MAX)
		return -ENAMETOOLONG;

	/* Strings, top down as Linux: [8 zero bytes] execfn, envp, argv strings. */
	uint64_t strbytes = (uint64_t)total - (uint64_t)(argc + envc) * sizeof(uint64_t);
	vaddr_t top = info->stack_top ? info->stack_top : ELF_STACK_TOP;
	vaddr_t fn_va = top - 8 - fnlen;
	vaddr_t str_va = fn_va - strbytes;
	vaddr_t p = ALIGN_DOWN(str_va, 16);
	vaddr_t plat_va = p - sizeof(platform);
	vaddr_t rand_va = plat_va - 16;
	int nauxv = info->sysinfo_ehdr ? NAUXV : NAUXV - 1;
	uint64_t nwords = 1 + (argc + 1) + (envc + 1) + 2 * (uint64_t)nauxv;
	vaddr_t sp = ALIGN_DOWN(rand_va - nwords * 8, 16);

	/* The stack region (MAP_GROWSDOWN: faults below grow it within
	 * RLIMIT_STACK) starts as the arguments plus ELF_STACK_EXPAND, no more
	 * than the limit allows (Linux's setup_arg_pages). */
	uint64_t limit = info->stack_limit ? info->stack_limit : ELF_STACK_SIZE;
	vaddr_t lo = ALIGN_DOWN(sp, PAGE_SIZE) - ELF_STACK_EXPAND;
	if (limit < top - lo)
		lo = MIN(top - ALIGN_DOWN(limit, PAGE_SIZE), ALIGN_DOWN(sp, PAGE_SIZE));
	vaddr_t got;
	int err = vm_mmap(map, lo, top - lo, PROT_READ | PROT_WRITE,
			  MAP_FIXED_NOREPLACE | MAP_PRIVATE | MAP_ANONYMOUS | MAP_GROWSDOWN, &got);
	if (err)
		return err == -EEXIST ? -ENOMEM : err;

	struct uwriter uw;
	uw_init(&uw, map);
	uint64_t rnd[2];
	random_bytes(rnd, sizeof(rnd));
	if ((err = uw_write(&uw, fn_va, execfn, fnlen)) != 0 ||
	    (err = uw_write(&uw, plat_va, platform, sizeof(platform))) != 0 ||
	    (err = uw_write(&uw, rand_va, rnd, sizeof(rnd))) != 0)
		return err;

	struct wordbuf *wb = kmalloc(sizeof(*wb), 0);
	if (wb == NULL)
		return -ENOMEM;
	*wb = (struct wordbuf){ .uw = &uw, .va = sp, .n = 0 };
	/* The string writes move uw around; the word buffer flushes through it. */
	struct uwriter suw;
	uw_init(&suw, map);
	vaddr_t s = str_va;
	uint64_t auxv[2 * NAUXV] = {
		AT_HWCAP, hwcap(),
		AT_PAGESZ, P,
		AT_CLKTCK, 100,
		AT_PHDR, info->phdr,
		AT_PHENT, info->phent,
		AT_PHNUM, info->phnum,
		AT_BASE, info->interp_base,
		AT_FLAGS, 0,
		AT_ENTRY, info->entry,
		AT_UID, info->uid,
		AT_EUID, info->euid,
		AT_GID, info->gid,
		AT_EGID, info->egid,
		AT_SECURE, info->secure,
		AT_RANDOM, rand_va,
		AT_EXECFN, fn_va,
		AT_PLATFORM, plat_va,
		AT_SYSINFO_EHDR, info->sysinfo_ehdr,   /* dropped when 0 (nauxv) */
		AT_NULL, 0,
	};
	if (!info->sysinfo_ehdr) {
		auxv[2 * (NAUXV - 2)] = AT_NULL;
		auxv[2 * (NAUXV - 2) + 1] = 0;
	}
	err = wb_put(wb, (uint64_t)argc);
	if (!err)
		err = put_strings(&suw, argv_k, argc, &s, wb);
	if (!err)
		err = wb_put(wb, 0);
	if (!err)
		err = put_strings(&suw, envp_k, envc, &s, wb);
	if (!err)
		err = wb_put(wb, 0);
	for (int i = 0; !err && i < 2 * nauxv; i++)
		err = wb_put(wb, auxv[i]);
	if (!err)
		err = wb_flush(wb);
	kfree(wb);
	if (err)
		return err;
	KASSERT(s == fn_va);
	*sp_out = sp;
	return 0;
}
