/*
 * execve: replace the current process image with a static ELF64 program from
 * the file tree, or run a "#!" script through its interpreter (plus one
 * optional argument), as Linux does.  The new address space is built
 * completely before the old one is dropped, so a failure leaves the caller
 * intact (-errno returned).
 */
#include "kernel.h"
#include "boot.h"
#include "vfs.h"
#include "futex.h"
#include "elf.h"
#include "errno.h"
#include "initramfs.h"
#include "keys.h"
#include "kmem.h"
#include "pmap.h"
#include "proc.h"
#include "ptrace.h"
#include "file.h"
#include "signal.h"
#include "thread.h"
#include "timer.h"
#include "trap.h"
#include "vm_map.h"
#include "x86.h"
#include "trace.h"
#include "vdso.h"
#include "perf.h"

#define MAX_SCRIPT_DEPTH 4

/* Parses "#!interp [arg]" from the first line; 0 on success. */
static int parse_shebang(const char *buf, size_t n, char *interp, size_t isz,
			 char *arg, size_t asz)
{
	size_t i = 2;
	while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t start = i;
	while (i < n && buf[i] != ' ' && buf[i] != '\t' && buf[i] != '\n')
		i++;
	if (i == start || i - start >= isz)
		return -ENOEXEC;
	memcpy(interp, buf + start, i - start);
	interp[i - start] = '\0';
	while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	size_t astart = i;
	while (i < n && buf[i] != '\n')
		i++;
	size_t aend = i;
	while (aend > astart && (buf[aend - 1] == ' ' || buf[aend - 1] == '\t'))
		aend--;
	if (aend - astart >= asz)
		return -ENOEXEC;
	memcpy(arg, buf + astart, aend - astart);
	arg[aend - astart] = '\0';
	return 0;
}

static int count(char *const v[])
{
	int n = 0;
	while (v && v[n])
		n++;
	return n;
}

/*
 * The credentials p runs program ip with (*nc) and what the auxiliary
 * vector says of them: a set-user-id file gives its owner as effective and
 * saved uid, a set-group-id file (with group execute, Linux) its group;
 * AT_SECURE when the effective ids differ from the real ones.
 */
static void exec_creds(struct proc *p, struct inode *ip, struct cred *nc, struct elf_info *info)
{
	simple_lock(&p->lock);
	*nc = p->cred;
	simple_unlock(&p->lock);
	uint32_t mode = READ_ONCE(ip->mode);
	if (nc->no_new_privs || ((mode & 06000) && vfs_nosuid(ip)))
		mode &= ~(uint32_t)06000;   /* PR_SET_NO_NEW_PRIVS, a nosuid mount: set-id bits ignored */
	if (mode & 04000)
		nc->euid = READ_ONCE(ip->uid);
	if ((mode & 02010) == 02010)
		nc->egid = READ_ONCE(ip->gid);
	nc->suid = nc->fsuid = nc->euid;
	nc->sgid = nc->fsgid = nc->egid;
	cap_exec(nc);
	info->uid = nc->ruid;
	info->euid = nc->euid;
	info->gid = nc->rgid;
	info->egid = nc->egid;
	info->secure = nc->ruid != nc->euid || nc->rgid != nc->egid;
}

/*
 * Execs path with kernel-space argv/envp in process p (the caller's) and
 * sets tf to start the program.  Returns 0 or -errno.
 */
int exec_kernel(struct proc *p, const char *path, char *const argv[], char *const envp[],
		struct trapframe *tf)
{
	return exec_kernel_at(p, NULL, path, argv, envp, tf);
}

/* As exec_kernel; first, when not NULL, is the program (lent to p, as
 * fs_lookup lends) and path only its name (execveat). */
int exec_kernel_at(struct proc *p, struct inode *first, const char *path, char *const argv[],
		   char *const envp[], struct trapframe *tf)
{
	char *sargv[MAX_SCRIPT_DEPTH * 2 + 256 + 1];
	char interp[MAX_SCRIPT_DEPTH][128], iarg[MAX_SCRIPT_DEPTH][128];
	char *const *av = argv;
	const char *file = path;
	struct inode *ip = NULL;
	int depth = 0;

	for (;;) {
		int r = 0;
		if (first && depth == 0)
			ip = first;
		else
			r = fs_lookup(NULL, file, 0, &ip);
		if (r < 0)
			return r;
		struct fs_stat st;
		fs_stat(ip, &st);
		if ((st.mode & 0170000) != 0100000)
			return -EACCES;
		if ((r = vfs_permission(ip, MAY_EXEC)) != 0)
			return r;                   /* execute permission for us (root: any x) */
		if (vfs_noexec(ip))
			return -EACCES;             /* on a file system mounted noexec */
		char head[256];
		ssize_t n = fs_read(ip, head, sizeof(head), 0);
		if (n < 0)
			return (int)n;
		if (n < 2 || head[0] != '#' || head[1] != '!')
			break;
		if (depth == MAX_SCRIPT_DEPTH)
			return -ELOOP;
		if (parse_shebang(head, n, interp[depth], sizeof(interp[0]), iarg[depth],
				  sizeof(iarg[0])) < 0)
			return -ENOEXEC;
		/* new argv: interp [arg] script original-argv[1..] */
		int ac = count(av);
		if (ac + 3 > (int)ARRAY_SIZE(sargv) - 1)
			return -E2BIG;
		char *nv[ARRAY_SIZE(sargv)];
		int k = 0;
		nv[k++] = interp[depth];
		if (iarg[depth][0])
			nv[k++] = iarg[depth];
		nv[k++] = (char *)file;
		for (int i = 1; i < ac; i++)
			nv[k++] = av[i];
		nv[k] = NULL;
		memcpy(sargv, nv, (k + 1) * sizeof(char *));
		av = sargv;
		file = interp[depth];
		depth++;
	}

	struct vm_map *map = vm_map_create();
	if (!map)
		return -ENOMEM;
	/* A secure (set-id) exec drops ADDR_NO_RANDOMIZE and its kin first. */
	struct elf_info info;
	struct cred nc;
	exec_creds(p, ip, &nc, &info);
	uint32_t pers = READ_ONCE(p->personality);
	if (info.secure)
		pers &= ~PER_CLEAR_ON_SETID;
	bool rnd = !bootopts.norandmaps && !(pers & ADDR_NO_RANDOMIZE);
	int r = elf_load_rnd(ip, map, rnd, &info);
	exec_creds(p, ip, &nc, &info);
	info.execfn = path;
	info.stack_limit = READ_ONCE(p->rlim_cur[RLIMIT_STACK]);
	info.arg_max = elf_arg_max(info.stack_limit);
	uint64_t sp = 0;
	if (r == 0)
		r = vdso_map(map, rnd, info.stack_top, &info.sysinfo_ehdr);
	if (r == 0)
		r = elf_build_stack(map, av, count(av), envp, count(envp), &info, &sp);
	uint64_t env_start, env_end;
	elf_env_range(&info, envp, count(envp), path, &env_start, &env_end);
	if (r < 0) {
		vm_map_destroy(map);
		return r;
	}

	/* Every other thread goes first (their memory is about to go). */
	int oldtid = curthread()->tid;  /* PTRACE_EVENT_EXEC's message */
	r = proc_exec_single();
	if (r < 0) {
		vm_map_destroy(map);
		return r;
	}

	/* Point of no return: switch to the new image. */
	struct thread *t = curthread();
	struct vm_map *old = p->map;
	/* Linux mm_release: robust list, PI locks, clear_child_tid of the
	 * old image, while it is still loaded. */
	futex_exec_thread(t, old && old->refcnt > 1);
	pmap_activate(map->pmap);
	t->pmap = map->pmap;
	size_t cmdlen = 0;                  /* argv for /proc/PID/cmdline */
	for (int i = 0; av[i] && cmdlen < PROC_CMDLINE_MAX; i++)
		cmdlen = MIN(cmdlen + strlen(av[i]) + 1, (size_t)PROC_CMDLINE_MAX);
	char *cmd = cmdlen ? kmalloc(cmdlen, 0) : NULL;
	for (size_t i = 0, at = 0; cmd && av[i] && at < cmdlen; i++) {
		size_t l = MIN(strlen(av[i]) + 1, cmdlen - at);
		memcpy(cmd + at, av[i], l);
		at += l;
	}
	struct inode *cwd = file[0] == '/' ? NULL : cwd_get();
	char *exe = vfs_abs_path(vfs_root(), cwd, file);   /* /proc/PID/exe */
	vnode_put(cwd);
	simple_lock(&p->lock);
	p->map = map;
	char *oldexe = p->exe;
	p->exe = exe;
	char *oldcmd = p->cmdline;
	p->cmdline = cmd;
	p->cmdline_len = cmd ? cmdlen : 0;
	p->env_start = env_start;
	p->env_end = env_end;
	const char *base = path;
	for (const char *c = path; *c; c++)
		if (*c == '/')
			base = c + 1;
	strlcpy(p->name, base, sizeof(p->name));
	simple_unlock(&p->lock);
	uint64_t fl = disable_lock(&t->lock);
	strlcpy(t->name, base, sizeof(t->name));
	unlock_enable(&t->lock, fl);
	TRACE_EXEC(p->pid, t->name);
	kfree(oldcmd);
	kfree(oldexe);
	simple_lock(&p->lock);
	p->cred = nc;                   /* set-user-id and set-group-id programs */
	p->personality = pers;
	simple_unlock(&p->lock);
	signal_exec(p);
	timers_exec(p);                 /* POSIX timers go, interval timers stay */
	keys_exec(p, t);                /* thread and process keyrings go */
	fdtable_exec(p->fdt);
	if (old)
		vm_map_destroy(old);
	proc_exec_done(p);   /* setpgid: EACCES from now on; a vfork parent resumes */

	memset(tf, 0, sizeof(*tf));
	tf->rip = info.start;
	tf->rsp = sp;
	tf->cs = 0x20 | 3;
	tf->ss = 0x18 | 3;
	tf->rflags = 0x202;
	x86_exec(t, p);                 /* no LDT, TLS entries, selectors */
	t->fs_base = 0;
	rseq_exec(t);
	perf_exec(t, info.entry);       /* enable_on_exec, COMM, MMAP records (one flag test) */
	wrmsr(MSR_FS_BASE, 0);
	fpu_init_state(t->fpu);
	fxrstor(t->fpu);
	ptrace_exec(p, oldtid);         /* a traced thread: SIGTRAP, or its stop */
	return 0;
}
