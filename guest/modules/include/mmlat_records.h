/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The records of the window module, the one definition of them and of
 * how a window, a keyed window and a lock hold are counted in them: the
 * module (guest/modules/mmlat_windows) keeps them in the guest, the QEMU
 * plugin (plugin/src/records.h) keeps the same ones outside it, and both
 * dump them in one text format, so that the analysis reads either dump
 * the same way.  guest/initramfs.sh copies this header beside the
 * module's source; plugin/build.sh puts its folder on the include path.
 *
 * Addresses are u64 in both: the guest's, whatever the host's word is.
 * The functions of the module's hot paths (every window and every lock
 * call runs one) are always inline, adding no call to what it measures;
 * all are named mw_* like every function of the module, whose frames the
 * analysis skips by that name.
 *
 * Outside the kernel the includer provides u8, u32, u64, bool, fls64(),
 * hash_64() and __always_inline.
 */
#ifndef MMLAT_RECORDS_H
#define MMLAT_RECORDS_H

#ifdef __KERNEL__
#include <linux/hash.h>
#include <linux/string.h>
#include <linux/types.h>
#else
#include <string.h>
#endif

#include "mmlat_hist.h"

/* --------------------------------------------------------------- windows */

#define MW_OPEN_DEPTH	6		/* frames kept at window open */
#define MW_MAX_STACK	16		/* the max window's stack at its end */
#define MW_IDLE_IP	(~0ULL)		/* window opened by leaving idle */

/* Linear probing distance of the keyed windows' and lock sites' tables. */
#define MW_PROBE_LEN	8

/* The window open on a CPU, of one kind. */
struct mw_win_start {
	u64 ts;			/* the clock at open */
	u64 seq;		/* windows begun on this CPU */
	u64 gen;		/* recording's generation when it began */
	u64 stack[MW_OPEN_DEPTH];
	u8 depth;
	u8 lock;		/* lock kind + 1 whose acquisition opened it */
	u8 active;
};

/* The windows of one kind on one CPU. */
struct mw_win_stats {
	u64 n, total, max;
	u64 unmatched;		/* an end with no begin since start */
	u64 nested_begin;	/* a begin while a window was open */
	u64 edge;		/* windows open when recording started */
	u64 idle_cut;
	u64 keyed, overflow, overflow_max;
	u64 max_open[MW_OPEN_DEPTH];
	u8 max_open_depth, max_lock;
	unsigned int max_depth;
	u64 max_stack[MW_MAX_STACK];
	u64 hist[MMLAT_HIST_NBUCKETS];
};

/*
 * A window of s's kind ends.  False when it cannot be timed: it opened
 * before recording's generation gen began (its start is unknown), or no
 * window was open.
 */
static __always_inline bool mw_win_close(struct mw_win_start *s,
					 struct mw_win_stats *st, u64 gen)
{
	if (s->gen != gen) {
		/* opened before recording started: its start is unknown */
		if (s->active)
			st->edge++;
		s->active = 0;
		s->gen = gen;
		return false;
	}
	if (!s->active) {
		st->unmatched++;
		return false;
	}
	s->active = 0;
	return true;
}

/*
 * Count a closed window of length d.  True when it is the longest so
 * far: its stack at open is kept, and the caller adds the one at its end.
 */
static __always_inline bool mw_win_count(struct mw_win_stats *st,
					 const struct mw_win_start *s, u64 d)
{
	st->n++;
	st->total += d;
	st->hist[mmlat_hist_bucket(d, MMLAT_HIST_SUB_BITS)]++;
	if (d <= st->max)
		return false;
	/* rare: the stacks are kept only when the maximum grows */
	st->max = d;
	memcpy(st->max_open, s->stack, s->depth * sizeof(s->stack[0]));
	st->max_open_depth = s->depth;
	st->max_lock = s->lock;
	return true;
}

/* Add one CPU's windows of a kind, st, to the total t. */
static __always_inline void mw_win_stats_sum(struct mw_win_stats *t,
					     const struct mw_win_stats *st)
{
	unsigned int b;

	t->n += st->n;
	t->total += st->total;
	t->unmatched += st->unmatched;
	t->nested_begin += st->nested_begin;
	t->edge += st->edge;
	t->idle_cut += st->idle_cut;
	t->keyed += st->keyed;
	t->overflow += st->overflow;
	if (st->overflow_max > t->overflow_max)
		t->overflow_max = st->overflow_max;
	/* the longest window's stacks: a tie goes to the later CPU */
	if (st->max >= t->max) {
		t->max = st->max;
		t->max_open_depth = st->max_open_depth;
		t->max_lock = st->max_lock;
		memcpy(t->max_open, st->max_open, sizeof(t->max_open));
		t->max_depth = st->max_depth;
		memcpy(t->max_stack, st->max_stack, sizeof(t->max_stack));
	}
	for (b = 0; b < MMLAT_HIST_NBUCKETS; b++)
		t->hist[b] += st->hist[b];
}

/* ---------------------------------------------- windows keyed by stack */

/* A window's key, its stack at open and lock tag, and its counts. */
struct mw_win_key {
	u64 stack[MW_OPEN_DEPTH];
	u8 depth;		/* 0: free */
	u8 lock;
	u64 n, total, max;
	u32 hist[MMLAT_HIST_KEY_NBUCKETS];
};

/*
 * Count a window of length d, opened as s records, under its key in the
 * table t of size entries (a power of two), linear probing over
 * MW_PROBE_LEN slots; one the table has no room for counts in st's
 * overflow (it stays in st's histogram).
 */
static __always_inline void mw_win_key_add(struct mw_win_stats *st,
					   struct mw_win_key *t,
					   unsigned int size,
					   const struct mw_win_start *s, u64 d)
{
	size_t len = s->depth * sizeof(s->stack[0]);
	u64 h = s->lock;
	unsigned int i;

	for (i = 0; i < s->depth; i++)
		h = h * 31 + s->stack[i];
	h = hash_64(h, 32);
	for (i = 0; i < MW_PROBE_LEN; i++) {
		struct mw_win_key *k = &t[(h + i) & (size - 1)];

		if (!k->depth) {
			memcpy(k->stack, s->stack, len);
			k->depth = s->depth;
			k->lock = s->lock;
		} else if (k->depth != s->depth || k->lock != s->lock ||
			   memcmp(k->stack, s->stack, len)) {
			continue;
		}
		k->n++;
		k->total += d;
		if (d > k->max)
			k->max = d;
		k->hist[mmlat_hist_bucket(d, MMLAT_HIST_KEY_SUB_BITS)]++;
		st->keyed++;
		return;
	}
	st->overflow++;
	if (d > st->overflow_max)
		st->overflow_max = d;
}

/* ------------------------------------------------------------ lock kinds */

/* How a lock is taken. */
enum { MW_SPIN, MW_MUTEX, MW_RWSEM_W, MW_RWSEM_R, MW_MODE_NONE };

/* Lock kinds; a window's lock tag is kind + 1, 0 for none. */
enum { MW_PTE, MW_I_MMAP, MW_ANON_VMA, MW_LOCK_KINDS };

/* Their names in the dumps, which the analysis reads: each side's arrays. */
#define MW_MODE_NAMES	{ "spin", "mutex", "rwsem-write", "rwsem-read", "none" }
#define MW_LOCK_NAMES	{ "pte", "i_mmap", "anon_vma" }

/* rwsem readers and writers take the same lock */
static __always_inline int mw_mode_family(int mode)
{
	return mode == MW_RWSEM_R ? MW_RWSEM_W : mode;
}

/* ------------------------------------------------------------ lock users */

/*
 * A lock user function: [start, end) of its text.  through: it takes the
 * lock for its caller (a plumbing row of guest/classes.txt lists it too),
 * whose call site the hold is counted at.
 */
struct mw_lock_user {
	u64 start, end;
	const char *name;
	bool through;
};

/* Lock users in the order their tables are sorted in (sort(), qsort()). */
static inline int mw_lock_user_cmp(const void *a, const void *b)
{
	const struct mw_lock_user *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* In users[], nr of them sorted by start: the one ret lies inside, or NULL. */
static __always_inline const struct mw_lock_user *
mw_lock_user_find(const struct mw_lock_user *users, int nr, u64 ret)
{
	int lo = 0, hi = nr;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (ret < users[mid].start)
			hi = mid;
		else if (ret >= users[mid].end)
			lo = mid + 1;
		else
			return &users[mid];
	}
	return NULL;
}

/* ------------------------------------------------------------ lock sites */

#define MW_MAX_SITES	256		/* lock call sites per CPU */

/* One lock call site: the hold times of one lock kind taken there. */
struct mw_lock_site {
	u64 ret;		/* return address of the lock call; 0: free */
	u8 kind, mode;
	u64 n, total, max;
	u64 lost;		/* taken here, unlock never seen */
	u64 discarded;		/* spinning: not inside one preempt-off window */
	u64 slept;		/* sleeping: the holder was switched out */
	/* contended acquisitions (the plugin sees no contention: 0) */
	u64 waits, wait_total, wait_max;
	u32 hist[MMLAT_HIST_NBUCKETS];
};

/*
 * The site of a lock call returning to ret, of this lock kind and mode,
 * in a CPU's table t of MW_MAX_SITES: found, or taken if free.  NULL when
 * the table has no room for it.
 */
static __always_inline struct mw_lock_site *
mw_site_find(struct mw_lock_site *t, u64 ret, int kind, int mode)
{
	u64 h = hash_64(ret ^ (kind << 4 | mode), 32);
	unsigned int i;

	for (i = 0; i < MW_PROBE_LEN; i++) {
		struct mw_lock_site *s = &t[(h + i) & (MW_MAX_SITES - 1)];

		if (s->ret == ret && s->kind == kind && s->mode == mode)
			return s;
		if (!s->ret) {
			s->ret = ret;
			s->kind = kind;
			s->mode = mode;
			return s;
		}
	}
	return NULL;
}

/* Count a hold of length d at its site. */
static __always_inline void mw_site_hold(struct mw_lock_site *st, u64 d)
{
	st->n++;
	st->total += d;
	if (d > st->max)
		st->max = d;
	st->hist[mmlat_hist_bucket(d, MMLAT_HIST_SUB_BITS)]++;
}

/* Are a and b one site: one call site, lock kind and mode? */
static __always_inline bool mw_same_site(const struct mw_lock_site *a,
					 const struct mw_lock_site *b)
{
	return a->ret == b->ret && a->kind == b->kind && a->mode == b->mode;
}

/* Add one CPU's counts of a site, s, to its total over the CPUs, t. */
static __always_inline void mw_site_sum(struct mw_lock_site *t,
					const struct mw_lock_site *s)
{
	unsigned int b;

	t->ret = s->ret;
	t->kind = s->kind;
	t->mode = s->mode;
	t->n += s->n;
	t->total += s->total;
	if (s->max > t->max)
		t->max = s->max;
	t->lost += s->lost;
	t->discarded += s->discarded;
	t->slept += s->slept;
	t->waits += s->waits;
	t->wait_total += s->wait_total;
	if (s->wait_max > t->wait_max)
		t->wait_max = s->wait_max;
	for (b = 0; b < MMLAT_HIST_NBUCKETS; b++)
		t->hist[b] += s->hist[b];
}

/* The totals of the locks dump. */
struct mw_lock_totals {
	u64 holds[MW_LOCK_KINDS], lost[MW_LOCK_KINDS];
	u64 discarded[MW_LOCK_KINDS];
	u64 in_flight[MW_LOCK_KINDS];	/* open when recording stopped */
	u64 nonlock;		/* lock calls from a user on no known lock */
	u64 site_overflow;	/* holds from a site no table had room for */
	u64 slot_overflow;	/* sleeping holds no slot had room for */
	u64 try_missed;		/* trylock calls whose return went unseen */
};

/* Add a CPU's table of sites, tab, to the per-kind totals t. */
static inline void mw_sites_total(struct mw_lock_totals *t,
				  const struct mw_lock_site *tab)
{
	unsigned int i;

	for (i = 0; i < MW_MAX_SITES; i++) {
		if (!tab[i].ret)
			continue;
		t->holds[tab[i].kind] += tab[i].n;
		t->lost[tab[i].kind] += tab[i].lost;
		t->discarded[tab[i].kind] += tab[i].discarded;
	}
}

/* -------------------------------------------------------- spinning holds */

#define MW_HELD_SLOTS	6		/* spinning holds per CPU */

/* A spinning hold, in its CPU's slots. */
struct mw_held {
	u64 lock;		/* the lock's address; 0: free */
	u64 task;		/* the holder's task_struct */
	u8 kind;
	u64 ts;			/* the lock hook */
	u64 acquired;		/* after a contended wait; 0: none */
	u64 wait_begin;
	u64 window;		/* nested: the preempt-off window it is in */
	bool opened;		/* no window was open: its acquisition opens one */
	struct mw_lock_site *site;
};

/*
 * The slot for a new spinning hold of lock among a CPU's slots held, of
 * which *nr_held are in use: the lock's own if its unlock went unseen,
 * else a free one, else the first; a hold it replaces is lost to its
 * site.  The caller fills it in.
 */
static __always_inline struct mw_held *
mw_held_slot(struct mw_held *held, unsigned int *nr_held, u64 lock)
{
	struct mw_held *h = NULL;
	int i;

	for (i = 0; i < MW_HELD_SLOTS; i++) {
		if (held[i].lock == lock) {
			h = &held[i];	/* its unlock went unseen */
			break;
		}
		if (!h && !held[i].lock)
			h = &held[i];
	}
	if (!h)
		h = &held[0];
	if (h->lock)
		h->site->lost++;
	else
		(*nr_held)++;
	return h;
}

#endif /* MMLAT_RECORDS_H */
