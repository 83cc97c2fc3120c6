// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat_windows: every preempt-off and irq-off window, and PTE-lock hold
 * times, aggregated in the guest.  Guest-only.
 *
 * Windows: probes on the preemptirq tracepoints (found by name, they are
 * not exported), which fire on the outermost disable and the matching
 * enable only.  Per CPU the disable stores a local_clock() timestamp and
 * the caller/parent ips; the enable adds the length to a log-linear
 * histogram per kind and, for windows of at least thresh_us, to a table
 * keyed by (caller, parent).  The longest window of each kind keeps the
 * stack at its end.  Entering idle ends the preempt-off window (as
 * stop_critical_timings() does for the preemptoff tracer), and leaving it
 * starts one attributed to "[idle]".
 *
 * PTE lock: ftrace hooks on _raw_spin_lock and _raw_spin_unlock.  A lock
 * call whose return address lies inside a PTE-lock user (zap, fork, fault,
 * ... functions, ranges resolved at load) on a spinlock inside a struct
 * page (a split PTE lock) opens a hold in a small per-CPU array; the
 * unlock of the same lock closes it and adds its length to the histogram
 * of the call site that took it.  ftrace calls the hook from the
 * function's entry: no int3 (which under TCG costs thousands of guest
 * instructions and, taken in kernel mode, leaves the irq-tracing state
 * set so that the next irq-off window is lost), no text patching per site.
 *
 * Every probe does nothing until the enable flag is set, which start sets
 * last and stop clears first, so probe (un)registration never lands in
 * the data.
 *
 * /proc/mmlat_windows  windows: totals, histograms, max stacks, keyed table
 * /proc/mmlat_ptelock  PTE-lock hold times per lock call site
 * echo arm > /proc/mmlat_windows    register the probes, disabled
 * echo start > /proc/mmlat_windows  arm if not yet, then enable (once)
 * echo stop > /proc/mmlat_windows   disable, wait a grace period (stable
 *                                   data); the probes stay registered
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/ftrace.h>
#include <linux/hash.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/spinlock.h>
#include <linux/stacktrace.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

static unsigned int thresh_us = 5;
module_param(thresh_us, uint, 0444);
MODULE_PARM_DESC(thresh_us, "windows at least this long go to the keyed table");

static unsigned int table_size = 512;
module_param(table_size, uint, 0444);
MODULE_PARM_DESC(table_size, "keyed table entries per kind and CPU (power of 2)");

static bool ptelock = true;
module_param(ptelock, bool, 0444);
MODULE_PARM_DESC(ptelock, "hook the lock functions for PTE-lock hold times");

static char *sites;
module_param(sites, charp, 0444);
MODULE_PARM_DESC(sites, "extra comma-separated PTE-lock user functions");

/* PTE-lock users; names missing in the running kernel are skipped. */
static const char * const pte_users[] = {
	/* zap */
	"zap_pte_range", "zap_pmd_range", "unmap_page_range",
	/* fork */
	"copy_pte_range", "copy_pmd_range", "copy_page_range",
	/* faults, rmap, mprotect, mremap, mlock, madvise, walkers */
	"__handle_mm_fault", "handle_pte_fault", "do_anonymous_page",
	"do_wp_page", "wp_page_copy", "finish_fault", "finish_mkwrite_fault",
	"filemap_map_pages", "do_set_pte", "do_swap_page", "do_numa_page",
	"change_pte_range", "change_protection_range", "change_protection",
	"move_ptes", "move_page_tables", "move_page_tables.part.0",
	"page_vma_mapped_walk", "try_to_unmap_one", "try_to_migrate_one",
	"mlock_pte_range", "madvise_free_pte_range",
	"madvise_cold_or_pageout_pte_range", "mincore_pte_range",
	"walk_pgd_range", "__get_locked_pte", "follow_pte", "unuse_pte_range",
	"smaps_pte_range", "clear_refs_pte_range", "apply_to_pte_range",
	"insert_pfn", "remap_pte_range", "remap_pfn_range_notrack",
	"vm_insert_page", "vm_insert_pages", "__apply_to_page_range",
	"follow_page_pte", "follow_p4d_mask", "follow_p4d_mask.constprop.0",
	"folio_referenced_one", "page_mapped_in_vma", "swapin_walk_pmd_entry",
	"follow_pfn", "follow_phys", "generic_access_phys",
};

/* Only one writer may start, stop or read the tables at a time. */
static DEFINE_MUTEX(state_lock);
static bool registered, started;
/* Probes record only while set; gen tells this run's windows from older. */
static int mw_enabled;
static u64 mw_gen;

/* ------------------------------------------------------------ histograms */

/*
 * Log-linear buckets of nanoseconds: values below 2^SUB_BITS are exact,
 * above that each power of two is split into 2^SUB_BITS buckets, so a
 * bucket is at most 1/64 (1.6 %) of its lower bound wide.
 */
#define SUB_BITS	6
#define SUB_N		(1 << SUB_BITS)
#define MAX_LOG		34			/* 2^34 ns, about 17 s */
#define NBUCKETS	((MAX_LOG - SUB_BITS + 1) * SUB_N)

static inline unsigned int ns_bucket(u64 ns)
{
	unsigned int msb;

	if (ns < SUB_N)
		return ns;
	msb = fls64(ns) - 1;
	if (msb >= MAX_LOG)
		return NBUCKETS - 1;
	return (msb - SUB_BITS + 1) * SUB_N +
	       ((ns >> (msb - SUB_BITS)) & (SUB_N - 1));
}

static u64 bucket_lo(unsigned int b)
{
	unsigned int msb;

	if (b < SUB_N)
		return b;
	msb = b / SUB_N + SUB_BITS - 1;
	return (1ULL << msb) + ((u64)(b % SUB_N) << (msb - SUB_BITS));
}

static void print_buckets(struct seq_file *m, const u32 *hist)
{
	unsigned int b;

	seq_puts(m, " buckets=");
	for (b = 0; b < NBUCKETS; b++)
		if (hist[b])
			seq_printf(m, "%llu:%u,", bucket_lo(b), hist[b]);
}

/* --------------------------------------------------------------- windows */

enum { W_PREEMPT, W_IRQ, W_KINDS };
static const char * const kind_name[W_KINDS] = { "preempt", "irq" };

#define MAX_STACK	16

struct win_start {
	u64 ts;
	u64 seq;		/* windows begun on this CPU */
	u64 gen;		/* mw_gen when it began */
	unsigned long ip, parent;
	int active;
};

struct win_key {
	unsigned long ip, parent;	/* ip == 0: free */
	u64 n, total, max;
	u32 hist[NBUCKETS];
};

struct win_stats {
	u64 n, total, max;
	u64 unmatched;		/* an end with no begin since start */
	u64 nested_begin;	/* a begin while a window was open */
	u64 edge;		/* windows open when recording started */
	u64 idle_cut;
	u64 keyed, overflow, overflow_max;
	unsigned long max_ip, max_parent;
	unsigned int max_depth;
	unsigned long max_stack[MAX_STACK];
	u64 hist[NBUCKETS];
};

static DEFINE_PER_CPU(struct win_start, win_start[W_KINDS]);
static struct win_stats *win_stats;	/* [cpu][kind] */
static struct win_key *win_table;	/* [cpu][kind][table_size] */
static u64 thresh_ns;
static unsigned int table_mask;

#define IDLE_IP		(~0UL)		/* window opened by leaving idle */
#define PROBE_LEN	8		/* linear probing distance */

static inline struct win_stats *wstats(int cpu, int kind)
{
	return &win_stats[cpu * W_KINDS + kind];
}

static inline struct win_key *wtable(int cpu, int kind)
{
	return &win_table[(size_t)(cpu * W_KINDS + kind) * table_size];
}

static void win_key_add(struct win_stats *st, struct win_key *t,
			unsigned long ip, unsigned long parent, u64 d)
{
	unsigned long h = hash_long(ip ^ (parent * 31), 32);
	unsigned int i;

	for (i = 0; i < PROBE_LEN; i++) {
		struct win_key *k = &t[(h + i) & table_mask];

		if (!k->ip) {
			k->ip = ip;
			k->parent = parent;
		} else if (k->ip != ip || k->parent != parent) {
			continue;
		}
		k->n++;
		k->total += d;
		if (d > k->max)
			k->max = d;
		k->hist[ns_bucket(d)]++;
		st->keyed++;
		return;
	}
	st->overflow++;
	if (d > st->overflow_max)
		st->overflow_max = d;
}

static __always_inline void win_begin(int kind, unsigned long ip,
				      unsigned long parent)
{
	struct win_start *s = this_cpu_ptr(&win_start[kind]);
	u64 now = local_clock();

	if (s->active && s->gen == mw_gen)
		wstats(smp_processor_id(), kind)->nested_begin++;
	s->ts = now;
	s->seq++;
	s->gen = mw_gen;
	s->ip = ip;
	s->parent = parent;
	s->active = 1;
}

static __always_inline void win_end(int kind, u64 now)
{
	struct win_start *s = this_cpu_ptr(&win_start[kind]);
	int cpu = smp_processor_id();
	struct win_stats *st = wstats(cpu, kind);
	u64 d;

	if (s->gen != mw_gen) {
		/* opened before recording started: its start is unknown */
		if (s->active)
			st->edge++;
		s->active = 0;
		s->gen = mw_gen;
		return;
	}
	if (!s->active) {
		st->unmatched++;
		return;
	}
	s->active = 0;
	d = now - s->ts;
	st->n++;
	st->total += d;
	st->hist[ns_bucket(d)]++;
	if (d > st->max) {
		/* rare: the stack is taken only when the maximum grows */
		st->max = d;
		st->max_ip = s->ip;
		st->max_parent = s->parent;
		st->max_depth = stack_trace_save(st->max_stack, MAX_STACK, 0);
	}
	if (d >= thresh_ns)
		win_key_add(st, wtable(cpu, kind), s->ip, s->parent, d);
}

/*
 * Tracepoint probes.  preempt_disable/enable fire with preemption already
 * (still) disabled, irq_disable/enable with irqs off, never in NMI: each
 * kind's per-CPU state has a single writer at a time.
 */
static void notrace mw_preempt_off(void *data, unsigned long ip,
				   unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		win_begin(W_PREEMPT, ip, parent);
}

static void notrace mw_preempt_on(void *data, unsigned long ip,
				  unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		win_end(W_PREEMPT, local_clock());
}

static void notrace mw_irq_off(void *data, unsigned long ip,
			       unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		win_begin(W_IRQ, ip, parent);
}

static void notrace mw_irq_on(void *data, unsigned long ip,
			      unsigned long parent)
{
	if (READ_ONCE(mw_enabled))
		win_end(W_IRQ, local_clock());
}

/*
 * power:cpu_idle: state, cpu; PWR_EVENT_EXIT is (u32)-1.  Tracepoint
 * probes run with preemption disabled; the idle task keeps it disabled.
 */
static void notrace mw_cpu_idle(void *data, unsigned int state,
				unsigned int cpu)
{
	struct win_start *s = this_cpu_ptr(&win_start[W_PREEMPT]);

	if (!READ_ONCE(mw_enabled))
		return;
	if (state != (unsigned int)-1) {
		if (s->active && s->gen == mw_gen) {
			wstats(smp_processor_id(), W_PREEMPT)->idle_cut++;
			win_end(W_PREEMPT, local_clock());
		}
	} else {
		win_begin(W_PREEMPT, IDLE_IP, 0);
	}
}

struct tp_hook {
	const char *name;
	void *probe;
	struct tracepoint *tp;
};

static struct tp_hook tp_hooks[] = {
	{ "preempt_disable", mw_preempt_off },
	{ "preempt_enable", mw_preempt_on },
	{ "irq_disable", mw_irq_off },
	{ "irq_enable", mw_irq_on },
	{ "cpu_idle", mw_cpu_idle },
};

static void find_tp(struct tracepoint *tp, void *priv)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
		if (!strcmp(tp->name, tp_hooks[i].name))
			tp_hooks[i].tp = tp;
}

/* -------------------------------------------------------------- PTE lock */

#define MAX_USERS	96
#define MAX_SITES	256		/* lock call sites per CPU */
#define HELD_SLOTS	4

/* A PTE-lock user function: [start, end) of its text. */
struct lock_user {
	unsigned long start, end;
	const char *name;
};

struct pte_site {
	unsigned long ret;	/* return address of the lock call; 0: free */
	u64 n, total, max;
	u64 lost;		/* taken here, unlock never seen */
	u64 discarded;		/* not inside one preempt-off window */
	u32 hist[NBUCKETS];
};

struct held {
	spinlock_t *lock;
	u64 ts;
	u64 window;		/* nested: the preempt-off window it is in */
	bool opened;		/* no window was open: its acquisition opens one */
	struct pte_site *site;
};

struct pte_cpu {
	struct held held[HELD_SLOTS];
	unsigned int nr_held;	/* slots in use: most unlocks find none */
	u64 nonptl;		/* lock calls from a user on no PTE lock */
	u64 site_overflow;	/* holds from a site the table had no room for */
};

static struct lock_user users[MAX_USERS];
static int nr_users, nr_missing;
static struct pte_site *pte_sites;	/* [cpu][MAX_SITES] */
static DEFINE_PER_CPU(struct pte_cpu, pte_cpu);

/*
 * A split PTE lock lives in its page table's struct page: the lock is a
 * PTE lock when lock - offsetof(struct page, ptl) is a struct page of the
 * memory map (pfn round trip).  Without split PTE locks (or with allocated
 * ones, under lockdep) every lock taken in a user counts.
 */
static inline bool is_pte_lock(spinlock_t *lock)
{
#if USE_SPLIT_PTE_PTLOCKS && !ALLOC_SPLIT_PTLOCKS
	struct page *pg = (struct page *)((unsigned long)lock -
					  offsetof(struct page, ptl));
	unsigned long pfn;
#if defined(CONFIG_SPARSEMEM) && !defined(CONFIG_SPARSEMEM_VMEMMAP)
	struct mem_section *ms;

	/* classic sparse: the memory map is in the direct map */
	if (!virt_addr_valid(pg))
		return false;
	ms = __nr_to_section(page_to_section(pg));
	if (!ms || !valid_section(ms))
		return false;
	pfn = pg - __section_mem_map_addr(ms);
#else
	pfn = page_to_pfn(pg);
#endif
	return pfn_valid(pfn) && pfn_to_page(pfn) == pg;
#else
	return true;
#endif
}

/* users[] is sorted by start: is ret inside one of them? */
static inline bool in_user(unsigned long ret)
{
	int lo = 0, hi = nr_users;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (ret < users[mid].start)
			hi = mid;
		else if (ret >= users[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static struct pte_site *site_of(int cpu, unsigned long ret)
{
	struct pte_site *t = &pte_sites[(size_t)cpu * MAX_SITES];
	unsigned long h = hash_long(ret, 32);
	unsigned int i;

	for (i = 0; i < PROBE_LEN; i++) {
		struct pte_site *s = &t[(h + i) & (MAX_SITES - 1)];

		if (s->ret == ret)
			return s;
		if (!s->ret) {
			s->ret = ret;
			return s;
		}
	}
	return NULL;
}

static void hold_begin(spinlock_t *lock, unsigned long ret)
{
	struct pte_cpu *pc = this_cpu_ptr(&pte_cpu);
	struct win_start *w = this_cpu_ptr(&win_start[W_PREEMPT]);
	int cpu = smp_processor_id();
	struct pte_site *site;
	struct held *h = NULL;
	int i;

	if (!is_pte_lock(lock)) {
		pc->nonptl++;
		return;
	}
	site = site_of(cpu, ret);
	if (!site) {
		pc->site_overflow++;
		return;
	}
	for (i = 0; i < HELD_SLOTS; i++) {
		if (pc->held[i].lock == lock) {
			h = &pc->held[i];	/* its unlock went unseen */
			break;
		}
		if (!h && !pc->held[i].lock)
			h = &pc->held[i];
	}
	if (!h)
		h = &pc->held[0];
	if (h->lock)
		h->site->lost++;
	else
		pc->nr_held++;
	h->lock = lock;
	h->site = site;
	/* the lock is taken in this window, or disables preemption anew */
	h->opened = !(w->active && w->gen == mw_gen);
	h->window = w->seq;
	h->ts = local_clock();
}

static void hold_end(spinlock_t *lock, u64 now)
{
	struct pte_cpu *pc = this_cpu_ptr(&pte_cpu);
	struct win_start *w = this_cpu_ptr(&win_start[W_PREEMPT]);
	struct held *h;
	struct pte_site *st;
	u64 start, d;
	int i;

	for (i = 0; i < HELD_SLOTS; i++) {
		h = &pc->held[i];
		if (h->lock != lock)
			continue;
		st = h->site;
		h->lock = NULL;
		pc->nr_held--;
		if (!w->active || w->gen != mw_gen) {
			st->discarded++;
			return;
		}
		/*
		 * A spinlock keeps preemption off from its acquisition to its
		 * release, so the window open now is the one the acquisition
		 * opened or was nested in.
		 *
		 * A hold that opened its window starts when the window did:
		 * the preempt_disable tracepoint between the hook and the
		 * acquisition is instrumentation, which a hold nested in an
		 * open window does not pay.  An interrupt or a preemption
		 * between the hook and the acquisition only delays that
		 * window; a window older than the hook means a stale slot.
		 * A nested hold must end in the window it began in.
		 */
		if (h->opened ? w->ts < h->ts : w->seq != h->window) {
			st->discarded++;
			return;
		}
		start = h->opened ? w->ts : h->ts;
		d = now - start;
		st->n++;
		st->total += d;
		if (d > st->max)
			st->max = d;
		st->hist[ns_bucket(d)]++;
		return;
	}
}

/*
 * ftrace hooks, called at the entry of _raw_spin_lock/_raw_spin_unlock
 * with preemption on or off: the per-CPU hold state is kept consistent
 * with raw (untraced) irq disabling.  NMIs may take spinlocks inside our
 * critical section, so they are left alone.
 *
 * The lock hook also raises the preempt count without tracing: pfn_valid()
 * takes rcu_read_lock_sched(), whose preempt_disable() would otherwise be
 * an outermost one and open a window of ours.  (Should it reschedule on
 * the way out, the hold no longer lies in one window and is discarded.)
 */
static void notrace mw_lock_hook(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op,
				 struct ftrace_regs *fregs)
{
	unsigned long flags;

	/* preemption off before the flag is read: stop waits for us */
	preempt_disable_notrace();
	if (READ_ONCE(mw_enabled) && !in_nmi() && in_user(parent_ip)) {
		raw_local_irq_save(flags);
		hold_begin((spinlock_t *)fregs->regs.di, parent_ip);
		raw_local_irq_restore(flags);
	}
	preempt_enable_notrace();
}

static void notrace mw_unlock_hook(unsigned long ip, unsigned long parent_ip,
				   struct ftrace_ops *op,
				   struct ftrace_regs *fregs)
{
	unsigned long flags;
	u64 now;

	/*
	 * Called with preemption off (a spinlock is held) and inside the
	 * window that lock keeps open: return before reading the clock
	 * unless a PTE-lock hold is open on this CPU.
	 */
	if (!READ_ONCE(mw_enabled) || in_nmi() ||
	    !this_cpu_read(pte_cpu.nr_held))
		return;
	now = local_clock();
	raw_local_irq_save(flags);
	hold_end((spinlock_t *)fregs->regs.di, now);
	raw_local_irq_restore(flags);
}

/*
 * FTRACE_OPS_FL_RECURSION: the hooks call nothing that is traced by these
 * ops, so ftrace can call them directly rather than through its recursion
 * guard.
 */
static struct ftrace_ops lock_ops = {
	.func = mw_lock_hook,
	.flags = FTRACE_OPS_FL_RECURSION,
};

static struct ftrace_ops unlock_ops = {
	.func = mw_unlock_hook,
	.flags = FTRACE_OPS_FL_RECURSION,
};

/* Address and size of a kernel function, or an error. */
static int func_range(const char *name, unsigned long *start,
		      unsigned long *size)
{
	/* a disabled probe is never armed: it is only a name lookup, as
	 * kallsyms_lookup_name() is not exported
	 */
	struct kprobe kp = { .symbol_name = name,
			     .flags = KPROBE_FLAG_DISABLED };
	char buf[KSYM_SYMBOL_LEN];
	unsigned long off;
	char *slash;
	int ret;

	ret = register_kprobe(&kp);
	if (ret)
		return ret;
	*start = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	sprint_symbol(buf, *start);
	strreplace(buf, ' ', '\0');	/* a module's: "f+0x0/0x40 [mod]" */
	slash = strrchr(buf, '/');
	if (!slash || kstrtoul(slash + 1, 16, size))
		return -EINVAL;
	*slash = '\0';
	/* the kprobe may sit past the entry (e.g. after an endbr) */
	slash = strrchr(buf, '+');
	if (slash && !kstrtoul(slash + 1, 16, &off))
		*start -= off;
	return 0;
}

static void add_user(const char *name)
{
	unsigned long start, size;
	int i;

	if (func_range(name, &start, &size)) {
		nr_missing++;
		return;
	}
	for (i = 0; i < nr_users; i++)	/* functions may be listed twice */
		if (users[i].start == start)
			return;
	if (nr_users >= MAX_USERS) {
		pr_warn("mmlat_windows: more than %d PTE-lock users, %s left out\n",
			MAX_USERS, name);
		return;
	}
	users[nr_users].start = start;
	users[nr_users].end = start + size;
	users[nr_users].name = name;
	nr_users++;
}

static int cmp_user(const void *a, const void *b)
{
	const struct lock_user *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static char *extra_sites;

static int pte_init(void)
{
	char *p, *name;
	int i;

	for (i = 0; i < ARRAY_SIZE(pte_users); i++)
		add_user(pte_users[i]);
	if (sites) {
		extra_sites = kstrdup(sites, GFP_KERNEL);
		if (!extra_sites)
			return -ENOMEM;
		p = extra_sites;
		while ((name = strsep(&p, ",")))
			if (*name)
				add_user(name);
	}
	sort(users, nr_users, sizeof(users[0]), cmp_user, NULL);
	pte_sites = vzalloc(array3_size(nr_cpu_ids, MAX_SITES,
					sizeof(*pte_sites)));
	return pte_sites ? 0 : -ENOMEM;
}

static int hook_function(struct ftrace_ops *ops, const char *func)
{
	char buf[KSYM_NAME_LEN];
	int ret;

	strscpy(buf, func, sizeof(buf));
	ret = ftrace_set_filter(ops, buf, strlen(buf), 1);
	if (!ret)
		ret = register_ftrace_function(ops);
	if (ret)
		pr_err("mmlat_windows: no ftrace hook on %s: %d\n", func, ret);
	return ret;
}

/* ----------------------------------------------------------- start/stop */

static void unregister_tracepoints(void)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
		if (tp_hooks[i].tp)
			tracepoint_probe_unregister(tp_hooks[i].tp,
						    tp_hooks[i].probe, NULL);
	tracepoint_synchronize_unregister();
}

static int register_probes(void)
{
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++) {
		if (!tp_hooks[i].tp)
			continue;
		ret = tracepoint_probe_register(tp_hooks[i].tp,
						tp_hooks[i].probe, NULL);
		if (ret) {
			pr_err("mmlat_windows: cannot probe %s: %d\n",
			       tp_hooks[i].name, ret);
			tp_hooks[i].tp = NULL;
		}
	}
	if (!ptelock)
		return 0;
	ret = hook_function(&lock_ops, "_raw_spin_lock");
	if (ret)
		goto err_tp;
	ret = hook_function(&unlock_ops, "_raw_spin_unlock");
	if (ret)
		goto err_lock;
	return 0;

err_lock:
	unregister_ftrace_function(&lock_ops);
err_tp:
	unregister_tracepoints();
	return ret;
}

static void unregister_probes(void)
{
	if (ptelock) {
		unregister_ftrace_function(&unlock_ops);
		unregister_ftrace_function(&lock_ops);
	}
	unregister_tracepoints();
}

/* Holds still open when recording stopped: neither measured nor lost. */
static u64 in_flight(void)
{
	u64 n = 0;
	int cpu, i;

	for_each_possible_cpu(cpu)
		for (i = 0; i < HELD_SLOTS; i++)
			n += !!per_cpu(pte_cpu, cpu).held[i].lock;
	return n;
}

static u64 held_at_stop;

/*
 * Registering patches kernel text (the ftrace call sites) and waits for
 * grace periods: "arm" does it before anything is measured, so that
 * "start" and "stop" only flip the flag.  state_lock held.
 */
static int arm_probes(void)
{
	int ret = 0;

	if (!registered) {
		ret = register_probes();
		registered = !ret;
	}
	return ret;
}

static int start_recording(void)
{
	int ret;

	mutex_lock(&state_lock);
	ret = arm_probes();
	if (!ret && !started) {
		WRITE_ONCE(mw_gen, mw_gen + 1);
		smp_wmb();	/* the new generation before the flag */
		WRITE_ONCE(mw_enabled, 1);
		started = true;
	}
	mutex_unlock(&state_lock);
	return ret;
}

/*
 * Every probe runs with preemption disabled from its read of the flag to
 * its last write, so after a grace period none is still recording.
 */
static void stop_recording(void)
{
	mutex_lock(&state_lock);
	if (READ_ONCE(mw_enabled)) {
		WRITE_ONCE(mw_enabled, 0);
		synchronize_rcu();
		held_at_stop = in_flight();
	}
	mutex_unlock(&state_lock);
}

static void disarm_probes(void)
{
	mutex_lock(&state_lock);
	WRITE_ONCE(mw_enabled, 0);
	if (registered) {
		unregister_probes();
		registered = false;
	}
	mutex_unlock(&state_lock);
}

/* ----------------------------------------------------------------- /proc */

static void print_ip(struct seq_file *m, const char *key, unsigned long ip)
{
	if (ip == IDLE_IP)
		seq_printf(m, " %s=[idle]", key);
	else if (!ip)
		seq_printf(m, " %s=[none]", key);
	else
		seq_printf(m, " %s=%pS", key, (void *)ip);
}

/* Sums for the show functions (too large for the stack); state_lock. */
static struct win_stats sum_win;
static struct pte_site sum_site;
static u32 sum_hist[NBUCKETS];

static void show_kind(struct seq_file *m, int kind)
{
	struct win_stats *t = &sum_win;
	int cpu, b, i;

	memset(t, 0, sizeof(*t));
	for_each_possible_cpu(cpu) {
		struct win_stats *st = wstats(cpu, kind);

		t->n += st->n;
		t->total += st->total;
		t->unmatched += st->unmatched;
		t->nested_begin += st->nested_begin;
		t->edge += st->edge;
		t->idle_cut += st->idle_cut;
		t->keyed += st->keyed;
		t->overflow += st->overflow;
		t->overflow_max = max(t->overflow_max, st->overflow_max);
		if (st->max >= t->max) {
			t->max = st->max;
			t->max_ip = st->max_ip;
			t->max_parent = st->max_parent;
			t->max_depth = st->max_depth;
			memcpy(t->max_stack, st->max_stack,
			       sizeof(t->max_stack));
		}
		for (b = 0; b < NBUCKETS; b++)
			t->hist[b] += st->hist[b];
	}
	seq_printf(m, "kind %s n=%llu total_ns=%llu max_ns=%llu unmatched=%llu nested_begin=%llu edge=%llu idle_cut=%llu keyed=%llu overflow=%llu overflow_max_ns=%llu",
		   kind_name[kind], t->n, t->total, t->max, t->unmatched,
		   t->nested_begin, t->edge, t->idle_cut, t->keyed,
		   t->overflow, t->overflow_max);
	print_ip(m, "max_caller", t->max_ip);
	print_ip(m, "max_parent", t->max_parent);
	seq_putc(m, '\n');
	for (i = 0; i < t->max_depth; i++)
		seq_printf(m, "maxstack %s %d %pS\n", kind_name[kind], i,
			   (void *)t->max_stack[i]);
	for (b = 0; b < NBUCKETS; b++)
		if (t->hist[b])
			seq_printf(m, "bucket %s lo_ns=%llu hi_ns=%llu n=%llu\n",
				   kind_name[kind], bucket_lo(b),
				   b + 1 < NBUCKETS ? bucket_lo(b + 1) : U64_MAX,
				   t->hist[b]);
}

static int windows_show(struct seq_file *m, void *v)
{
	int cpu, kind, i;

	mutex_lock(&state_lock);
	seq_puts(m, "mmlat_windows 2\n");
	seq_printf(m, "param clock=local_clock thresh_ns=%llu table_size=%u cpus=%u sub_bits=%d running=%d",
		   thresh_ns, table_size, num_possible_cpus(), SUB_BITS,
		   READ_ONCE(mw_enabled));
	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
		seq_printf(m, " %s=%d", tp_hooks[i].name, !!tp_hooks[i].tp);
	seq_putc(m, '\n');
	for (kind = 0; kind < W_KINDS; kind++)
		show_kind(m, kind);
	/* Keys are printed per CPU; the host merges equal keys. */
	for_each_possible_cpu(cpu) {
		for (kind = 0; kind < W_KINDS; kind++) {
			struct win_key *k = wtable(cpu, kind);

			for (i = 0; i < table_size; i++) {
				if (!k[i].ip)
					continue;
				seq_printf(m, "key %s cpu=%d n=%llu total_ns=%llu max_ns=%llu",
					   kind_name[kind], cpu, k[i].n,
					   k[i].total, k[i].max);
				print_ip(m, "caller", k[i].ip);
				print_ip(m, "parent", k[i].parent);
				print_buckets(m, k[i].hist);
				seq_putc(m, '\n');
			}
		}
	}
	mutex_unlock(&state_lock);
	return 0;
}

/* Sum one call site (by return address) over every CPU's table. */
static void sum_site_of(unsigned long ret)
{
	struct pte_site *t = &sum_site;
	int cpu, i, b;

	memset(t, 0, sizeof(*t));
	memset(sum_hist, 0, sizeof(sum_hist));
	for_each_possible_cpu(cpu) {
		struct pte_site *tab = &pte_sites[(size_t)cpu * MAX_SITES];

		for (i = 0; i < MAX_SITES; i++) {
			if (tab[i].ret != ret)
				continue;
			t->n += tab[i].n;
			t->total += tab[i].total;
			t->max = max(t->max, tab[i].max);
			t->lost += tab[i].lost;
			t->discarded += tab[i].discarded;
			for (b = 0; b < NBUCKETS; b++)
				sum_hist[b] += tab[i].hist[b];
		}
	}
}

/* Was ret already printed from the table of an earlier CPU? */
static bool site_seen(int cpu, unsigned long ret)
{
	int c, i;

	for (c = 0; c < cpu; c++) {
		if (!cpu_possible(c))
			continue;
		for (i = 0; i < MAX_SITES; i++)
			if (pte_sites[(size_t)c * MAX_SITES + i].ret == ret)
				return true;
	}
	return false;
}

static int ptelock_show(struct seq_file *m, void *v)
{
	u64 holds = 0, lost = 0, discarded = 0, nonptl = 0, overflow = 0;
	int cpu, i;

	mutex_lock(&state_lock);
	seq_puts(m, "mmlat_ptelock 2\n");
	seq_printf(m, "param clock=local_clock method=ftrace-caller functions=%d missing=%d ptl_filter=%s sub_bits=%d running=%d\n",
		   nr_users, nr_missing,
		   (USE_SPLIT_PTE_PTLOCKS && !ALLOC_SPLIT_PTLOCKS) ?
		   "struct-page" : "none", SUB_BITS, READ_ONCE(mw_enabled));
	for (i = 0; i < nr_users; i++)
		seq_printf(m, "user %s size=%lu\n", users[i].name,
			   users[i].end - users[i].start);
	for_each_possible_cpu(cpu) {
		struct pte_site *tab = &pte_sites[(size_t)cpu * MAX_SITES];

		nonptl += per_cpu(pte_cpu, cpu).nonptl;
		overflow += per_cpu(pte_cpu, cpu).site_overflow;
		for (i = 0; i < MAX_SITES; i++) {
			holds += tab[i].n;
			lost += tab[i].lost;
			discarded += tab[i].discarded;
		}
	}
	seq_printf(m, "total holds=%llu lost=%llu discarded=%llu nonptl=%llu site_overflow=%llu in_flight=%llu\n",
		   holds, lost, discarded, nonptl, overflow, held_at_stop);
	for_each_possible_cpu(cpu) {
		struct pte_site *tab = &pte_sites[(size_t)cpu * MAX_SITES];

		for (i = 0; i < MAX_SITES; i++) {
			if (!tab[i].ret || site_seen(cpu, tab[i].ret))
				continue;
			sum_site_of(tab[i].ret);
			seq_printf(m, "site lock n=%llu total_ns=%llu max_ns=%llu lost=%llu discarded=%llu at=%pS",
				   sum_site.n, sum_site.total, sum_site.max,
				   sum_site.lost, sum_site.discarded,
				   (void *)tab[i].ret);
			print_buckets(m, sum_hist);
			seq_putc(m, '\n');
		}
	}
	mutex_unlock(&state_lock);
	return 0;
}

static ssize_t windows_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char buf[8];
	int ret = 0;

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (!strcmp(strim(buf), "arm")) {
		mutex_lock(&state_lock);
		ret = arm_probes();
		mutex_unlock(&state_lock);
	} else if (!strcmp(buf, "start")) {
		ret = start_recording();
	} else if (!strcmp(buf, "stop")) {
		stop_recording();
	} else {
		return -EINVAL;
	}
	return ret ? ret : count;
}

static int windows_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, windows_show, NULL, 1 << 22);
}

static int ptelock_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, ptelock_show, NULL, 1 << 18);
}

static const struct proc_ops windows_ops = {
	.proc_open = windows_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
	.proc_write = windows_write,
};

static const struct proc_ops ptelock_ops = {
	.proc_open = ptelock_open,
	.proc_read = seq_read,
	.proc_lseek = seq_lseek,
	.proc_release = single_release,
};

static void free_all(void)
{
	ftrace_free_filter(&unlock_ops);
	ftrace_free_filter(&lock_ops);
	vfree(win_stats);
	vfree(win_table);
	vfree(pte_sites);
	kfree(extra_sites);
}

static int __init mmlat_windows_init(void)
{
	int i, ret;

	if (!table_size || table_size & (table_size - 1))
		return -EINVAL;
	table_mask = table_size - 1;
	thresh_ns = (u64)thresh_us * NSEC_PER_USEC;
	win_stats = vzalloc(array3_size(nr_cpu_ids, W_KINDS,
					sizeof(*win_stats)));
	win_table = vzalloc(array3_size(nr_cpu_ids * W_KINDS, table_size,
					sizeof(*win_table)));
	if (!win_stats || !win_table) {
		ret = -ENOMEM;
		goto err;
	}
	if (ptelock) {
		ret = pte_init();
		if (ret)
			goto err;
	}
	for_each_kernel_tracepoint(find_tp, NULL);
	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
		if (!tp_hooks[i].tp)
			pr_warn("mmlat_windows: no tracepoint %s\n",
				tp_hooks[i].name);
	/* without the lock hooks there is no PTE-lock file to read */
	if (!proc_create("mmlat_windows", 0600, NULL, &windows_ops) ||
	    (ptelock && !proc_create("mmlat_ptelock", 0400, NULL, &ptelock_ops))) {
		ret = -ENOMEM;
		goto err_proc;
	}
	return 0;

err_proc:
	remove_proc_entry("mmlat_windows", NULL);
err:
	free_all();
	return ret;
}

static void __exit mmlat_windows_exit(void)
{
	if (ptelock)
		remove_proc_entry("mmlat_ptelock", NULL);
	remove_proc_entry("mmlat_windows", NULL);
	disarm_probes();
	free_all();
}

module_init(mmlat_windows_init);
module_exit(mmlat_windows_exit);
MODULE_DESCRIPTION("mmlat: preempt-off/irq-off windows and PTE-lock hold times");
MODULE_LICENSE("GPL");
