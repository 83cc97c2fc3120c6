// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat_windows: every preempt-off and irq-off window, and PTE-lock hold
 * times, aggregated in the guest.  Guest-only.
 *
 * Windows: probes on the preemptirq tracepoints (found by name, they are
 * not exported), which fire on the outermost disable and the matching
 * enable only.  Per CPU the disable stores a local_clock() timestamp and
 * the caller/parent ips; the enable adds the length to a log-linear
 * histogram per kind and, for windows of at least thresh_us, to a small
 * table keyed by (caller, parent).  Entering idle ends the preempt-off
 * window (as stop_critical_timings() does for the preemptoff tracer), and
 * leaving it starts one attributed to "[idle]".
 *
 * PTE lock: at module load every direct call (and tail jump) to
 * _raw_spin_lock / _raw_spin_unlock inside a list of PTE-lock users is
 * found by scanning the function's text and gets a kprobe on the call
 * instruction itself (register_kprobe() refuses an address that is not an
 * instruction boundary, which rejects false matches of the byte scan).
 * The lock probe stores (lock, timestamp, site) in a small per-CPU array,
 * the unlock probe of the same lock adds the hold time to the lock site's
 * histogram.  Only spinlocks inside struct page (split PTE locks) count,
 * and only holds that lie inside one preempt-off window (so the window
 * probes must run too).
 *
 * /proc/mmlat_windows  windows: totals, histograms, keyed table
 * /proc/mmlat_ptelock  PTE-lock probes and hold times per lock site
 * echo start > /proc/mmlat_windows  register the probes (once)
 * echo stop > /proc/mmlat_windows   unregister them (stable data)
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/mm.h>
#include <linux/percpu.h>
#include <linux/proc_fs.h>
#include <linux/sched/clock.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/tracepoint.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <linux/hash.h>
#include <asm/unaligned.h>

static unsigned int thresh_us = 5;
module_param(thresh_us, uint, 0444);
MODULE_PARM_DESC(thresh_us, "windows at least this long go to the keyed table");

static unsigned int table_size = 1024;
module_param(table_size, uint, 0444);
MODULE_PARM_DESC(table_size, "keyed table entries per kind and CPU (power of 2)");

static bool ptelock = true;
module_param(ptelock, bool, 0444);
MODULE_PARM_DESC(ptelock, "probe the PTE-lock users for hold times");

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

/* ------------------------------------------------------------ histograms */

/*
 * Log-linear buckets of nanoseconds: values below 2^SUB_BITS are exact,
 * above that each power of two is split into 2^SUB_BITS buckets (12.5 %).
 */
#define SUB_BITS	3
#define SUB_N		(1 << SUB_BITS)
#define MAX_LOG		40			/* 2^40 ns, about 18 min */
#define NBUCKETS	((MAX_LOG - SUB_BITS + 1) * SUB_N)

static inline unsigned int ns_bucket(u64 ns)
{
	unsigned int msb, b;

	if (ns < SUB_N)
		return ns;
	msb = fls64(ns) - 1;
	if (msb >= MAX_LOG)
		return NBUCKETS - 1;
	b = (msb - SUB_BITS + 1) * SUB_N + ((ns >> (msb - SUB_BITS)) & (SUB_N - 1));
	return b;
}

static u64 bucket_lo(unsigned int b)
{
	unsigned int msb;

	if (b < SUB_N)
		return b;
	msb = b / SUB_N + SUB_BITS - 1;
	return (1ULL << msb) + ((u64)(b % SUB_N) << (msb - SUB_BITS));
}

/* Per-key histograms: one bucket per power of two of nanoseconds. */
#define KEY_BUCKETS	32

static inline unsigned int log2_bucket(u64 ns)
{
	unsigned int b = ns ? fls64(ns) - 1 : 0;

	return b < KEY_BUCKETS ? b : KEY_BUCKETS - 1;
}

/* --------------------------------------------------------------- windows */

enum { W_PREEMPT, W_IRQ, W_KINDS };
static const char * const kind_name[W_KINDS] = { "preempt", "irq" };

struct win_start {
	u64 ts;
	u64 seq;		/* windows begun on this CPU */
	unsigned long ip, parent;
	int active;
};

struct win_key {
	unsigned long ip, parent;	/* ip == 0: free; parent 0 with ip ~0: idle */
	u64 n, total, max;
	u32 hist[KEY_BUCKETS];
};

struct win_stats {
	u64 n, total, max;
	u64 unmatched, idle_cut;
	u64 keyed, overflow, overflow_max;
	unsigned long max_ip, max_parent;
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
		k->hist[log2_bucket(d)]++;
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

	s->ts = local_clock();
	s->seq++;
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
		st->max = d;
		st->max_ip = s->ip;
		st->max_parent = s->parent;
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
	win_begin(W_PREEMPT, ip, parent);
}

static void notrace mw_preempt_on(void *data, unsigned long ip,
				     unsigned long parent)
{
	win_end(W_PREEMPT, local_clock());
}

static void notrace mw_irq_off(void *data, unsigned long ip,
				  unsigned long parent)
{
	win_begin(W_IRQ, ip, parent);
}

static void notrace mw_irq_on(void *data, unsigned long ip,
				 unsigned long parent)
{
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

	if (state != (unsigned int)-1) {
		if (s->active) {
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

#define MAX_SITES	256
#define HELD_SLOTS	4

struct pte_site {
	struct kprobe kp;
	void *where;		/* the call instruction */
	int lock;		/* 1: lock call, 0: unlock call */
	bool probed;		/* register_kprobe() accepted it */
	bool active;		/* still registered */
	bool optimized;		/* a jump, not an int3 (seen at stop) */
};

struct pte_stats {
	u64 n, total, max;
	u64 nonptl;		/* lock calls on a lock that is no PTE lock */
	u64 lost;		/* taken here, unlock never seen */
	u64 discarded;		/* not inside one preempt-off window */
	u32 hist[NBUCKETS];
};

struct held {
	spinlock_t *lock;
	u64 ts;
	u64 window;		/* the preempt-off window it must close in */
	int site;
};

struct pte_cpu {
	struct held held[HELD_SLOTS];
	u64 unmatched;		/* unlock of a PTE lock not taken at a site */
	u64 lost;		/* lock taken at a site, never seen unlocked */
};

static struct pte_site *pte_sites;
static int nr_sites, nr_funcs, nr_rejected;
static struct pte_stats *pte_stats;	/* [cpu][site] */
static DEFINE_PER_CPU(struct pte_cpu, pte_cpu);

/*
 * A split PTE lock lives in its page table's struct page: the lock is a
 * PTE lock when lock - offsetof(struct page, ptl) is a struct page of the
 * memory map (pfn round trip).  Without split PTE locks (or with allocated
 * ones, under lockdep) every lock at a site counts.
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

static int notrace pte_lock_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct pte_site *s = container_of(p, struct pte_site, kp);
	spinlock_t *lock = (spinlock_t *)regs->di;
	struct pte_cpu *pc = this_cpu_ptr(&pte_cpu);
	int site = s - pte_sites;
	struct win_start *w;
	struct held *h = NULL;
	int i;

	if (!is_pte_lock(lock)) {
		pte_stats[smp_processor_id() * nr_sites + site].nonptl++;
		return 0;
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
	if (h->lock) {
		pc->lost++;
		pte_stats[smp_processor_id() * nr_sites + h->site].lost++;
	}
	h->lock = lock;
	h->site = site;
	/* the lock is taken in this window, or disables preemption anew */
	w = this_cpu_ptr(&win_start[W_PREEMPT]);
	h->window = w->active ? w->seq : w->seq + 1;
	h->ts = local_clock();
	return 0;
}

static int notrace pte_unlock_pre(struct kprobe *p, struct pt_regs *regs)
{
	u64 now = local_clock();
	spinlock_t *lock = (spinlock_t *)regs->di;
	struct pte_cpu *pc = this_cpu_ptr(&pte_cpu);
	struct win_start *w = this_cpu_ptr(&win_start[W_PREEMPT]);
	struct pte_stats *st;
	int i;
	u64 d;

	for (i = 0; i < HELD_SLOTS; i++) {
		if (pc->held[i].lock != lock)
			continue;
		d = now - pc->held[i].ts;
		st = &pte_stats[smp_processor_id() * nr_sites + pc->held[i].site];
		pc->held[i].lock = NULL;
		/*
		 * A spinlock keeps preemption off: a hold that spans more than
		 * one preempt-off window was preempted between the probe and
		 * the acquisition, or pairs a stale lock with a later unlock.
		 */
		if (!w->active || w->seq != pc->held[i].window) {
			st->discarded++;
			return 0;
		}
		st->n++;
		st->total += d;
		if (d > st->max)
			st->max = d;
		st->hist[ns_bucket(d)]++;
		return 0;
	}
	if (is_pte_lock(lock))
		pc->unmatched++;
	return 0;
}

/* Address and size of a kernel function, or -ENOENT. */
static int func_range(const char *name, unsigned long *start,
		      unsigned long *size)
{
	struct kprobe kp = { .symbol_name = name };
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

static void add_site(unsigned long addr, int lock)
{
	struct pte_site *s;
	int i;

	for (i = 0; i < nr_sites; i++)	/* functions may be listed twice */
		if ((unsigned long)pte_sites[i].where == addr)
			return;
	if (nr_sites >= MAX_SITES)
		return;
	s = &pte_sites[nr_sites];
	memset(s, 0, sizeof(*s));
	s->kp.addr = (kprobe_opcode_t *)addr;
	s->where = (void *)addr;
	s->kp.pre_handler = lock ? pte_lock_pre : pte_unlock_pre;
	s->lock = lock;
	nr_sites++;
}

/* Direct calls (e8) and tail jumps (e9) to the lock functions in name. */
static void scan_func(const char *name)
{
	unsigned long start, size, a;
	int found = 0;

	if (func_range(name, &start, &size))
		return;
	for (a = start; a + 5 <= start + size; a++) {
		u8 op = *(u8 *)a;
		unsigned long tgt;

		if (op != 0xe8 && op != 0xe9)
			continue;
		tgt = a + 5 + (long)get_unaligned((s32 *)(a + 1));
		if (op == 0xe8 && (tgt == (unsigned long)_raw_spin_lock
#ifdef CONFIG_DEBUG_LOCK_ALLOC
				   || tgt == (unsigned long)_raw_spin_lock_nested
#endif
		    )) {
			add_site(a, 1);
			found++;
		} else if (tgt == (unsigned long)_raw_spin_unlock) {
			add_site(a, 0);
			found++;
		}
	}
	if (found)
		nr_funcs++;
}

static int pte_init(void)
{
	char *list, *p, *name;
	int i;

	pte_sites = kcalloc(MAX_SITES, sizeof(*pte_sites), GFP_KERNEL);
	if (!pte_sites)
		return -ENOMEM;
	for (i = 0; i < ARRAY_SIZE(pte_users); i++)
		scan_func(pte_users[i]);
	if (sites) {
		list = kstrdup(sites, GFP_KERNEL);
		if (!list)
			return -ENOMEM;
		p = list;
		while ((name = strsep(&p, ",")))
			if (*name)
				scan_func(name);
		kfree(list);
	}
	pte_stats = vzalloc(array3_size(nr_cpu_ids, nr_sites ?: 1,
					sizeof(*pte_stats)));
	if (!pte_stats)
		return -ENOMEM;
	return 0;
}

/* A byte-scan hit that is no instruction boundary fails here. */
static void pte_start(void)
{
	int i, n = 0;

	for (i = 0; i < nr_sites; i++) {
		if (register_kprobe(&pte_sites[i].kp)) {
			nr_rejected++;
		} else {
			pte_sites[i].probed = true;
			pte_sites[i].active = true;
			n++;
		}
	}
	pr_info("mmlat_windows: %d PTE-lock probes in %d functions (%d rejected)\n",
		n, nr_funcs, nr_rejected);
}

static void pte_exit(void)
{
	int i;

	for (i = 0; i < nr_sites; i++) {
		struct pte_site *s = &pte_sites[i];

		if (!s->active)
			continue;
		s->optimized = kprobe_optimized(&s->kp);
		unregister_kprobe(&s->kp);
		s->active = false;
	}
}

/* ----------------------------------------------------------------- /proc */

static DEFINE_MUTEX(state_lock);
static bool running, started;

/* Kprobes first, so their registration is no recorded window. */
static void start_probes(void)
{
	int i, ret;

	mutex_lock(&state_lock);
	if (!started) {
		if (ptelock)
			pte_start();
		for (i = 0; i < ARRAY_SIZE(tp_hooks); i++) {
			if (!tp_hooks[i].tp)
				continue;
			ret = tracepoint_probe_register(tp_hooks[i].tp,
							tp_hooks[i].probe,
							NULL);
			if (ret) {
				pr_err("mmlat_windows: cannot probe %s: %d\n",
				       tp_hooks[i].name, ret);
				tp_hooks[i].tp = NULL;
			}
		}
		started = running = true;
	}
	mutex_unlock(&state_lock);
}

static void stop_probes(void)
{
	int i;

	mutex_lock(&state_lock);
	if (running) {
		for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
			if (tp_hooks[i].tp)
				tracepoint_probe_unregister(tp_hooks[i].tp,
							    tp_hooks[i].probe,
							    NULL);
		tracepoint_synchronize_unregister();
		pte_exit();
		running = false;
	}
	mutex_unlock(&state_lock);
}

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
static struct pte_stats sum_pte;

static int windows_show(struct seq_file *m, void *v)
{
	struct win_stats *t = &sum_win;
	int cpu, kind, b, i;

	seq_puts(m, "mmlat_windows 1\n");
	seq_printf(m, "param clock=local_clock thresh_ns=%llu table_size=%u cpus=%u running=%d",
		   thresh_ns, table_size, num_possible_cpus(), running);
	for (i = 0; i < ARRAY_SIZE(tp_hooks); i++)
		seq_printf(m, " %s=%d", tp_hooks[i].name, !!tp_hooks[i].tp);
	seq_putc(m, '\n');
	mutex_lock(&state_lock);
	for (kind = 0; kind < W_KINDS; kind++) {
		memset(t, 0, sizeof(*t));
		for_each_possible_cpu(cpu) {
			struct win_stats *st = wstats(cpu, kind);

			t->n += st->n;
			t->total += st->total;
			t->unmatched += st->unmatched;
			t->idle_cut += st->idle_cut;
			t->keyed += st->keyed;
			t->overflow += st->overflow;
			t->overflow_max = max(t->overflow_max, st->overflow_max);
			if (st->max >= t->max) {
				t->max = st->max;
				t->max_ip = st->max_ip;
				t->max_parent = st->max_parent;
			}
			for (b = 0; b < NBUCKETS; b++)
				t->hist[b] += st->hist[b];
		}
		seq_printf(m, "kind %s n=%llu total_ns=%llu max_ns=%llu unmatched=%llu idle_cut=%llu keyed=%llu overflow=%llu overflow_max_ns=%llu",
			   kind_name[kind], t->n, t->total, t->max, t->unmatched,
			   t->idle_cut, t->keyed, t->overflow, t->overflow_max);
		print_ip(m, "max_caller", t->max_ip);
		print_ip(m, "max_parent", t->max_parent);
		seq_putc(m, '\n');
		for (b = 0; b < NBUCKETS; b++)
			if (t->hist[b])
				seq_printf(m, "bucket %s lo_ns=%llu hi_ns=%llu n=%llu\n",
					   kind_name[kind], bucket_lo(b),
					   b + 1 < NBUCKETS ? bucket_lo(b + 1) : U64_MAX,
					   t->hist[b]);
	}
	mutex_unlock(&state_lock);
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
				seq_puts(m, " log2_ns=");
				for (b = 0; b < KEY_BUCKETS; b++)
					if (k[i].hist[b])
						seq_printf(m, "%d:%u,", b,
							   k[i].hist[b]);
				seq_putc(m, '\n');
			}
		}
	}
	return 0;
}

static int ptelock_show(struct seq_file *m, void *v)
{
	struct pte_stats *t = &sum_pte;
	u64 unmatched = 0, lost = 0;
	int cpu, i, b;

	seq_puts(m, "mmlat_ptelock 1\n");
	seq_printf(m, "param clock=local_clock method=kprobe-callsite probes=%d functions=%d rejected=%d ptl_filter=%s running=%d\n",
		   nr_sites - nr_rejected, nr_funcs, nr_rejected,
		   (USE_SPLIT_PTE_PTLOCKS && !ALLOC_SPLIT_PTLOCKS) ?
		   "struct-page" : "none", running);
	for_each_possible_cpu(cpu) {
		unmatched += per_cpu(pte_cpu, cpu).unmatched;
		lost += per_cpu(pte_cpu, cpu).lost;
	}
	seq_printf(m, "total unmatched_unlock=%llu lost=%llu\n", unmatched,
		   lost);
	mutex_lock(&state_lock);
	for (i = 0; i < nr_sites; i++) {
		struct pte_site *s = &pte_sites[i];

		memset(t, 0, sizeof(*t));
		for_each_possible_cpu(cpu) {
			struct pte_stats *st = &pte_stats[cpu * nr_sites + i];

			t->n += st->n;
			t->total += st->total;
			t->max = max(t->max, st->max);
			t->nonptl += st->nonptl;
			t->lost += st->lost;
			t->discarded += st->discarded;
			for (b = 0; b < NBUCKETS; b++)
				t->hist[b] += st->hist[b];
		}
		seq_printf(m, "site %s n=%llu total_ns=%llu max_ns=%llu nonptl=%llu lost=%llu discarded=%llu probed=%d optimized=%d at=%pS",
			   s->lock ? "lock" : "unlock", t->n, t->total, t->max,
			   t->nonptl, t->lost, t->discarded, s->probed,
			   s->active ? kprobe_optimized(&s->kp) : s->optimized,
			   s->where);
		seq_puts(m, " buckets=");
		for (b = 0; b < NBUCKETS; b++)
			if (t->hist[b])
				seq_printf(m, "%llu:%u,", bucket_lo(b), t->hist[b]);
		seq_putc(m, '\n');
	}
	mutex_unlock(&state_lock);
	return 0;
}

static ssize_t windows_write(struct file *file, const char __user *ubuf,
			     size_t count, loff_t *ppos)
{
	char buf[8];

	if (count >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, count))
		return -EFAULT;
	buf[count] = '\0';
	if (!strcmp(strim(buf), "start"))
		start_probes();
	else if (!strcmp(buf, "stop"))
		stop_probes();
	else
		return -EINVAL;
	return count;
}

static int windows_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, windows_show, NULL, 1 << 16);
}

static int ptelock_open(struct inode *inode, struct file *file)
{
	return single_open_size(file, ptelock_show, NULL, 1 << 14);
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
	vfree(win_stats);
	vfree(win_table);
	vfree(pte_stats);
	kfree(pte_sites);
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
	if (!proc_create("mmlat_windows", 0600, NULL, &windows_ops) ||
	    !proc_create("mmlat_ptelock", 0400, NULL, &ptelock_ops)) {
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
	remove_proc_entry("mmlat_ptelock", NULL);
	remove_proc_entry("mmlat_windows", NULL);
	stop_probes();
	free_all();
}

module_init(mmlat_windows_init);
module_exit(mmlat_windows_exit);
MODULE_DESCRIPTION("mmlat: preempt-off/irq-off windows and PTE-lock hold times");
MODULE_LICENSE("GPL");
