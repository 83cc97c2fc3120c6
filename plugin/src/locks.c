// SPDX-License-Identifier: GPL-2.0
/*
 * Lock holds, the guest module's spinning and sleeping holds step for step
 * (guest/modules/mmlat_windows.c, "locks"), with vCPU instructions for its
 * local_clock() and guest memory reads for its get_kernel_nofault().
 *
 * Every hook runs between two guest instructions of one vCPU, and under
 * icount all vCPUs run on one host thread, so the hooks never race: the
 * module's irq and preemption guards have no counterpart here.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest.h"
#include "kconst.h"
#include "locks.h"
#include "record.h"
#include "stack.h"
#include "symbols.h"
#include "windows.h"

#define MAX_USERS	512	/* lock user functions, statics repeated */
#define SLEEP_SLOTS	32	/* sleeping holds, all tasks */
#define TRY_SLOTS	64	/* trylock calls in flight per vCPU, as the module's */

const char * const lock_name[MW_LOCK_KINDS] = MW_LOCK_NAMES;
const char * const mode_name[MW_MODE_NONE + 1] = MW_MODE_NAMES;

struct try_call {
	u64 ret;		/* 0: free */
	u64 rsp;		/* at the return */
	u64 lock, site, ts;
	bool opens;
};

struct lock_cpu {
	struct mw_held held[MW_HELD_SLOTS];
	unsigned int nr_held;
	struct try_call try[TRY_SLOTS];
	unsigned int try_next;
	u64 nonlock, site_overflow;
	struct mw_lock_site sites[MW_MAX_SITES];
};

struct sleep_hold {
	u64 lock;		/* 0: free */
	u64 task, ret;
	u8 kind, mode;
	unsigned int cpu;	/* whose site table counts it */
	u64 ts;
	u64 ctxsw;		/* nvcsw + nivcsw at the lock call */
};

static struct mw_lock_user users[MAX_USERS];
static unsigned int nr_users, nr_missing;
static struct lock_cpu *lock_cpus;
static unsigned int nr_cpus;
static struct sleep_hold sleep_held[SLEEP_SLOTS];
static unsigned int nr_sleep_open;
static u64 slot_overflow, try_missed;
static u64 in_flight[MW_LOCK_KINDS];
static u64 spin_lock_start, spin_lock_end;
static int kind_mode[MW_LOCK_KINDS];
static u64 mem_section_addr, vmemmap_base;
static GHashTable *section_maps;	/* section nr -> its mem_map word */

/* Trylocks by family, for the return sites. */
struct trylock {
	const char *func;
	int mode;
	u64 addr;
};

static struct trylock trylocks[] = {
	{ "_raw_spin_trylock", MW_SPIN },
	{ "mutex_trylock", MW_MUTEX },
	{ "down_read_trylock", MW_RWSEM_R },
	{ "down_write_trylock", MW_RWSEM_W },
};

/* ------------------------------------------------------------- setup */

/*
 * offsets.c writes the module's own MW_*_MODE (mmlat_lock_members.h);
 * anything else, as the -1 of constants from before, is no lock.
 */
static int mode_of_kconst(s64 v)
{
	return v == MW_SPIN || v == MW_MUTEX || v == MW_RWSEM_W ? v :
								  MW_MODE_NONE;
}

int lock_mode(int kind)
{
	return kind_mode[kind];
}

bool lock_family_hooked(int mode)
{
	int family = mw_mode_family(mode);

	return family == kind_mode[MW_I_MMAP] || family == kind_mode[MW_ANON_VMA];
}

static void add_user(const char *name, bool through)
{
	u64 start[8], end[8];
	size_t n, i;
	unsigned int j;

	n = symbol_ranges(name, start, end, 8);
	if (!n) {
		nr_missing++;
		return;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < nr_users; j++)
			if (users[j].start == start[i])
				break;
		if (j < nr_users)
			continue;	/* listed twice */
		if (nr_users == MAX_USERS) {
			fprintf(stderr, "mmlat plugin: more than %d lock users, %s left out\n",
				MAX_USERS, name);
			return;
		}
		users[nr_users].start = start[i];
		users[nr_users].end = end[i];
		users[nr_users].name = g_strdup(name);
		users[nr_users].through = through;
		nr_users++;
	}
}

/*
 * classes.txt: "class kind match lock function..." rows; the functions of
 * rows with a lock are the users, and those a plumbing row lists too take
 * the lock for their caller. A name loses the kernel versions it may carry
 * (name@6.3-) and its optional mark (name?), as the module's Kbuild reads
 * it: System.map says which the running kernel has.
 */
static bool read_users(const char *path)
{
	GHashTable *plumbing = g_hash_table_new(g_str_hash, g_str_equal);
	GPtrArray *names = g_ptr_array_new();
	char *text, **lines;
	unsigned int i;
	int f;

	if (!g_file_get_contents(path, &text, NULL, NULL)) {
		fprintf(stderr, "mmlat plugin: cannot read %s\n", path);
		return false;
	}
	lines = g_strsplit(text, "\n", -1);
	for (i = 0; lines[i]; i++) {
		char **words, *w[64];
		int nw = 0;

		if (lines[i][0] == '#')
			continue;
		words = g_strsplit_set(g_strstrip(lines[i]), " \t", -1);
		for (f = 0; words[f] && nw < 64; f++)
			if (*words[f])
				w[nw++] = words[f];
		if (nw > 4) {
			for (f = 4; f < nw; f++) {
				if (strchr(w[f], '*'))
					continue;
				w[f][strcspn(w[f], "@?")] = '\0';
				if (!strcmp(w[2], "plumbing"))
					g_hash_table_add(plumbing, g_strdup(w[f]));
				else if (strcmp(w[3], "-"))
					g_ptr_array_add(names, g_strdup(w[f]));
			}
		}
		g_strfreev(words);
	}
	for (i = 0; i < names->len; i++) {
		const char *name = g_ptr_array_index(names, i);

		add_user(name, g_hash_table_contains(plumbing, name));
	}
	g_strfreev(lines);
	g_free(text);
	return true;
}

bool locks_init(unsigned int cpus, const char *classes, const char *extra)
{
	unsigned int i;

	nr_cpus = cpus;
	lock_cpus = g_new0(struct lock_cpu, cpus);
	kind_mode[MW_PTE] = kconst[K_PTL_OFFSET] >= 0 ? MW_SPIN : MW_MODE_NONE;
	kind_mode[MW_I_MMAP] = mode_of_kconst(kconst[K_I_MMAP_MODE]);
	kind_mode[MW_ANON_VMA] = mode_of_kconst(kconst[K_ANON_VMA_MODE]);
	if (!symbol_range("_raw_spin_lock", &spin_lock_start, &spin_lock_end)) {
		fprintf(stderr, "mmlat plugin: no _raw_spin_lock in System.map\n");
		return false;
	}
	for (i = 0; i < G_N_ELEMENTS(trylocks); i++)
		trylocks[i].addr = symbol_addr(trylocks[i].func);
	mem_section_addr = symbol_addr("mem_section");
	section_maps = g_hash_table_new(g_int64_hash, g_int64_equal);
	vmemmap_base = symbol_addr("vmemmap_base");
	if (!read_users(classes))
		return false;
	if (extra) {
		/* colons: QEMU's option list splits at commas */
		char **names = g_strsplit(extra, ":", -1);

		for (i = 0; names[i]; i++)
			if (*names[i])
				add_user(names[i], false);
		g_strfreev(names);
	}
	qsort(users, nr_users, sizeof(users[0]), mw_lock_user_cmp);
	return true;
}

/* --------------------------------------------------------- lock identity */

/*
 * The memory map's section of a section number: its mem_map word, 0 when
 * the section has none.  SPARSEMEM_EXTREME keeps a root array of pointers.
 * A section with a memory map keeps it (no memory hotplug here): the
 * word is read once.
 */
static u64 section_map_read(u64 nr)
{
	u64 per_root = kconst[K_SECTIONS_PER_ROOT], root, map;

	if (!mem_section_addr)
		return 0;
	if (kconst[K_SPARSEMEM_EXTREME]) {
		u64 roots;

		if (!guest_read_u64(mem_section_addr, &roots) || !roots ||
		    !guest_read_u64(roots + nr / per_root * 8, &root) || !root)
			return 0;
	} else {
		root = mem_section_addr + nr / per_root *
			per_root * kconst[K_MEM_SECTION_SIZE];
	}
	if (!guest_read_u64(root + nr % per_root * kconst[K_MEM_SECTION_SIZE] +
			    kconst[K_MEM_SECTION_MAP], &map) ||
	    !(map & kconst[K_SECTION_HAS_MEM_MAP]))
		return 0;
	return map;
}

static u64 section_map(u64 nr)
{
	u64 *cached = g_hash_table_lookup(section_maps, &nr), map, *v;

	if (cached)
		return cached[1];
	map = section_map_read(nr);
	if (map) {
		v = g_new(u64, 2);
		v[0] = nr;
		v[1] = map;
		g_hash_table_insert(section_maps, &v[0], v);
	}
	return map;
}

/*
 * A split PTE lock lives in its page table's struct page (or the ptdesc
 * overlaying it): the lock is one when lock - its offset is a struct page
 * of the memory map, the pfn round trip the module makes.
 */
static bool is_pte_lock(u64 lock)
{
	u64 pg = lock - kconst[K_PTL_OFFSET], size = kconst[K_PAGE_SIZE_OF];
	u64 nr, map, flags, pfn;

	if (kconst[K_PTL_OFFSET] < 0)
		return true;	/* no split locks: any spinlock of a user */
	if (kconst[K_SPARSEMEM_VMEMMAP]) {
		if (!vmemmap_base || !guest_read_u64(vmemmap_base, &map) ||
		    pg < map || (pg - map) % size)
			return false;
		pfn = (pg - map) / size;
		return section_map(pfn >> kconst[K_PFN_SECTION_SHIFT]);
	}
	if (!guest_read_u64(pg + kconst[K_PAGE_FLAGS], &flags))
		return false;
	nr = (flags >> kconst[K_SECTIONS_PGSHIFT]) & kconst[K_SECTIONS_MASK];
	map = section_map(nr);
	if (!map)
		return false;
	/* classic sparse: the section's map minus its first pfn */
	map &= kconst[K_SECTION_MAP_MASK];
	if ((pg - map) % size)
		return false;
	pfn = (pg - map) / size;
	return pfn >> kconst[K_PFN_SECTION_SHIFT] == nr;
}

/* An address_space's i_mmap lock: its host's i_mapping points back. */
static bool is_i_mmap_lock(u64 lock)
{
	u64 mapping = lock - kconst[K_AS_I_MMAP], host, back;

	return kconst[K_AS_I_MMAP] >= 0 &&
	       guest_read_u64(mapping + kconst[K_AS_HOST], &host) && host &&
	       guest_read_u64(host + kconst[K_INODE_I_MAPPING], &back) &&
	       back == mapping;
}

/* An anon_vma lock: the lock taken is always the root anon_vma's. */
static bool is_anon_vma_lock(u64 lock)
{
	u64 av = lock - kconst[K_ANON_VMA_LOCK], root;

	return kconst[K_ANON_VMA_LOCK] >= 0 &&
	       guest_read_u64(av + kconst[K_ANON_VMA_ROOT], &root) &&
	       root == av;
}

/* The kind of lock a lock call of this mode takes, or -1. */
static int lock_kind(u64 lock, int mode)
{
	int family = mw_mode_family(mode);

	if (family == MW_SPIN && is_pte_lock(lock))
		return MW_PTE;
	if (kind_mode[MW_I_MMAP] == family && is_i_mmap_lock(lock))
		return MW_I_MMAP;
	if (kind_mode[MW_ANON_VMA] == family && is_anon_vma_lock(lock))
		return MW_ANON_VMA;
	return -1;
}

/* ------------------------------------------------------------ call sites */

static const struct mw_lock_user *user_of(u64 ret)
{
	return mw_lock_user_find(users, nr_users, ret);
}

/*
 * The call site a lock call is counted at, 0 for a call from no lock
 * user.  fp is the frame pointer at the call (the caller's frame); a user
 * that takes the lock for its caller hands the hold on to its caller's
 * call site when the caller is a lock user too.
 */
static u64 lock_site_ret(u64 ret, u64 fp)
{
	const struct mw_lock_user *u = user_of(ret);
	u64 lo, hi, caller;

	if (!u)
		return 0;
	if (!u->through)
		return ret;
	if (!guest_task_stack(&lo, &hi) || fp < lo || fp > hi || fp & 7 ||
	    !guest_read_u64(fp + 8, &caller))
		return ret;
	return user_of(caller) ? caller : ret;
}

static struct mw_lock_site *site_of(unsigned int cpu, u64 ret, int kind,
				    int mode)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	struct mw_lock_site *s = mw_site_find(lc->sites, ret, kind, mode);

	if (!s)
		lc->site_overflow++;
	return s;
}

/* ------------------------------------------------------- spinning holds */

u8 lock_opening_tag(unsigned int cpu, u64 ip)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	struct mw_held *best = NULL;
	u64 task;
	int i;

	if (ip < spin_lock_start || ip >= spin_lock_end || !lc->nr_held)
		return 0;
	task = guest_current();
	for (i = 0; i < MW_HELD_SLOTS; i++) {
		struct mw_held *h = &lc->held[i];

		if (h->lock && h->opened && h->task == task &&
		    (!best || h->ts > best->ts))
			best = h;
	}
	return best ? best->kind + 1 : 0;
}

static struct mw_held *spin_hold_claim(unsigned int cpu, u64 lock,
				       u64 ret, int kind, bool opened, u64 ts)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	struct mw_lock_site *site = site_of(cpu, ret, kind, MW_SPIN);
	struct mw_held *h;

	if (!site)
		return NULL;
	h = mw_held_slot(lc->held, &lc->nr_held, lock);
	h->lock = lock;
	h->site = site;
	h->opened = opened;
	h->task = guest_current();
	h->kind = kind;
	h->window = win_cpus[cpu].start[W_PREEMPT].seq;
	h->ts = ts;
	return h;
}

void lock_spin_lock(unsigned int cpu)
{
	u64 site, lock = guest_reg(R_RDI);
	int kind;

	/* most calls come from no lock user: that is checked first */
	site = lock_site_ret(hook_return_address(), guest_reg(R_RBP));
	if (!site || guest_in_nmi())
		return;
	kind = lock_kind(lock, MW_SPIN);
	if (kind < 0) {
		lock_cpus[cpu].nonlock++;
		return;
	}
	/* the lock is taken in an open window, or disables preemption anew */
	spin_hold_claim(cpu, lock, site, kind, !win_open(cpu, W_PREEMPT),
			vcpu_insns(cpu));
}

void lock_spin_unlock(unsigned int cpu)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	struct mw_win_start *w;
	u64 lock, start;
	struct mw_held *h;
	int i;

	if (!lc->nr_held || guest_in_nmi())
		return;
	lock = guest_reg(R_RDI);
	w = win_open(cpu, W_PREEMPT);
	for (i = 0; i < MW_HELD_SLOTS; i++) {
		h = &lc->held[i];
		if (h->lock != lock)
			continue;
		h->lock = 0;
		lc->nr_held--;
		/*
		 * A spinlock keeps preemption off from acquisition to release:
		 * the window open now is the one the acquisition opened (and
		 * the hold starts with it) or was nested in.
		 */
		if (!w || (h->opened ? w->ts < h->ts : w->seq != h->window)) {
			h->site->discarded++;
			return;
		}
		start = h->opened ? w->ts : h->ts;
		mw_site_hold(h->site, insns_to_ns(vcpu_insns(cpu) - start));
		return;
	}
}

/* -------------------------------------------------------- sleeping holds */

static u64 task_ctxsw(u64 task)
{
	u64 nvcsw = 0, nivcsw = 0;

	guest_read_u64(task + kconst[K_TASK_NVCSW], &nvcsw);
	guest_read_u64(task + kconst[K_TASK_NIVCSW], &nivcsw);
	return nvcsw + nivcsw;
}

static struct sleep_hold *sleep_slot(u64 lock, u64 task)
{
	int i;

	for (i = 0; i < SLEEP_SLOTS; i++)
		if (sleep_held[i].lock == lock && sleep_held[i].task == task)
			return &sleep_held[i];
	return NULL;
}

static void sleep_hold_begin(unsigned int cpu, u64 lock, u64 ret,
			     int mode)
{
	u64 task = guest_current();
	struct sleep_hold *sh;
	int kind, i;

	kind = lock_kind(lock, mode);
	if (kind < 0) {
		lock_cpus[cpu].nonlock++;
		return;
	}
	sh = sleep_slot(lock, task);
	if (sh) {
		/* taken again by its holder: the unlock went unseen */
		struct mw_lock_site *st = site_of(sh->cpu, sh->ret, sh->kind,
					       sh->mode);

		if (st)
			st->lost++;
		sh->lock = 0;
		nr_sleep_open--;
	}
	for (i = 0, sh = NULL; i < SLEEP_SLOTS && !sh; i++)
		if (!sleep_held[i].lock)
			sh = &sleep_held[i];
	if (!sh) {
		slot_overflow++;
		return;
	}
	nr_sleep_open++;
	sh->lock = lock;
	sh->task = task;
	sh->ret = ret;
	sh->kind = kind;
	sh->mode = mode;
	sh->cpu = cpu;
	sh->ctxsw = task_ctxsw(task);
	sh->ts = vcpu_insns(cpu);
}

void lock_sleep_lock(unsigned int cpu, int mode)
{
	u64 site = lock_site_ret(hook_return_address(), guest_reg(R_RBP));

	if (site && guest_in_task())
		sleep_hold_begin(cpu, guest_reg(R_RDI), site, mode);
}

/*
 * A sleeping hold may end on another vCPU than it began: its length is
 * that of the vCPU it ends on (one vCPU, or the holder migrated: then the
 * hold's own instructions are not one count, and the length spans both).
 */
void lock_sleep_unlock(unsigned int cpu)
{
	struct sleep_hold *sh;
	struct mw_lock_site *st;
	u64 task;

	if (!nr_sleep_open || !guest_in_task())
		return;
	task = guest_current();
	sh = sleep_slot(guest_reg(R_RDI), task);
	if (!sh)
		return;
	st = site_of(sh->cpu, sh->ret, sh->kind, sh->mode);
	if (st) {
		mw_site_hold(st, insns_to_ns(vcpu_insns(cpu) - sh->ts));
		if (task_ctxsw(task) != sh->ctxsw)
			st->slept++;
	}
	sh->lock = 0;
	nr_sleep_open--;
}

/* ------------------------------------------------------------- trylocks */

void lock_try_entry(unsigned int cpu, int mode)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	struct try_call *tc;
	u64 site, ret = hook_return_address();

	site = lock_site_ret(ret, guest_reg(R_RBP));
	if (!site || guest_in_nmi())
		return;
	tc = &lc->try[lc->try_next++ % TRY_SLOTS];
	if (tc->ret)
		try_missed++;	/* a call whose return was never seen */
	tc->ret = ret;
	tc->rsp = guest_reg(R_RSP) + 8;
	tc->lock = guest_reg(R_RDI);
	tc->site = site;
	tc->opens = !win_open(cpu, W_PREEMPT);
	tc->ts = vcpu_insns(cpu);
}

bool lock_is_try_return(u64 vaddr, int *mode)
{
	u8 call[5];
	s32 rel;
	unsigned int i;

	if (!user_of(vaddr) || !guest_read(vaddr - 5, call, sizeof(call)) ||
	    call[0] != 0xe8)
		return false;
	memcpy(&rel, call + 1, sizeof(rel));
	for (i = 0; i < G_N_ELEMENTS(trylocks); i++) {
		if (trylocks[i].addr && lock_family_hooked(trylocks[i].mode) &&
		    vaddr + rel == trylocks[i].addr) {
			*mode = trylocks[i].mode;
			return true;
		}
	}
	return false;
}

void lock_try_return(unsigned int cpu, u64 vaddr, int mode)
{
	struct lock_cpu *lc = &lock_cpus[cpu];
	u64 rsp = guest_reg(R_RSP);
	struct try_call *tc = NULL;
	struct mw_win_start *w;
	int i, kind;

	for (i = 0; i < TRY_SLOTS; i++)
		if (lc->try[i].ret == vaddr && lc->try[i].rsp == rsp)
			tc = &lc->try[i];
	if (!tc)
		return;
	tc->ret = 0;
	if (!(u32)guest_reg(R_RAX))
		return;		/* not taken */
	if (mode != MW_SPIN) {
		if (guest_in_task())
			sleep_hold_begin(cpu, tc->lock, tc->site, mode);
		return;
	}
	/* a hold nested in an open window starts when the trylock returns */
	kind = lock_kind(tc->lock, MW_SPIN);
	if (kind < 0 ||
	    !spin_hold_claim(cpu, tc->lock, tc->site, kind, tc->opens,
			     tc->opens ? tc->ts : vcpu_insns(cpu)))
		return;
	/* the window its acquisition opened gets its tag */
	w = win_open(cpu, W_PREEMPT);
	if (tc->opens && w && w->ts >= tc->ts)
		w->lock = kind + 1;
}

/* ------------------------------------------------------------ stop, dump */

void locks_stop(void)
{
	unsigned int cpu;
	int i;

	memset(in_flight, 0, sizeof(in_flight));
	for (cpu = 0; cpu < nr_cpus; cpu++)
		for (i = 0; i < MW_HELD_SLOTS; i++)
			if (lock_cpus[cpu].held[i].lock)
				in_flight[lock_cpus[cpu].held[i].kind]++;
	for (i = 0; i < SLEEP_SLOTS; i++)
		if (sleep_held[i].lock)
			in_flight[sleep_held[i].kind]++;
}

unsigned int lock_nr_users(void)
{
	return nr_users;
}

const char *lock_user_name(unsigned int i, u64 *size)
{
	*size = users[i].end - users[i].start;
	return users[i].name;
}

unsigned int lock_nr_missing(void)
{
	return nr_missing;
}

const char *lock_tag(u8 lock)
{
	return lock ? lock_name[lock - 1] : "none";
}

struct mw_lock_site *lock_sites_of(unsigned int cpu)
{
	return lock_cpus[cpu].sites;
}

unsigned int lock_nr_cpus(void)
{
	return nr_cpus;
}

void lock_totals(struct mw_lock_totals *t)
{
	unsigned int cpu;

	memset(t, 0, sizeof(*t));
	for (cpu = 0; cpu < nr_cpus; cpu++) {
		t->nonlock += lock_cpus[cpu].nonlock;
		t->site_overflow += lock_cpus[cpu].site_overflow;
	}
	t->slot_overflow = slot_overflow;
	t->try_missed = try_missed;
	memcpy(t->in_flight, in_flight, sizeof(in_flight));
}
