/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of mmlat_windows share: the recording state, the tables
 * of the window and lock-hold records (the records themselves, and how
 * they count, are mmlat_records.h's, which the QEMU plugin shares), and
 * the few functions of the hot paths that run in one part on another's
 * data, inline here: every lock call and every window runs them, and a
 * call into another object would add its cost to what is measured.
 *
 * Every function of the module is named mw_*: the analysis skips the
 * module's own frames in a stack by that name (guest/classes.txt).
 */
#ifndef MMLAT_WINDOWS_H
#define MMLAT_WINDOWS_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/sched.h>
#include <linux/sched/task_stack.h>
#include <linux/types.h>

#include "mmlat_lock_members.h"
#include "mmlat_records.h"

/* ------------------------------------------------------------- recording */

/* Probes record only while set; mw_gen tells this run's windows from older. */
extern int mw_enabled;
extern u64 mw_gen;
/* Serialises arm, start, stop and the dumps. */
extern struct mutex mw_state_lock;
/* Whether the lock hooks are wanted (the module parameter locks). */
extern bool mw_locks;

int mw_arm(void);
int mw_start(void);
void mw_stop(void);

/* --------------------------------------------------------------- windows */

enum { MW_PREEMPT, MW_IRQ, MW_KINDS };

DECLARE_PER_CPU(struct mw_win_start, mw_win_start[MW_KINDS]);
extern u64 mw_thresh_ns;

struct mw_win_stats *mw_wstats(int cpu, int kind);
int mw_windows_init(void);
void mw_windows_free(void);

void mw_preempt_off(void *data, unsigned long ip, unsigned long parent);
void mw_preempt_on(void *data, unsigned long ip, unsigned long parent);
void mw_irq_off(void *data, unsigned long ip, unsigned long parent);
void mw_irq_on(void *data, unsigned long ip, unsigned long parent);
void mw_cpu_idle(void *data, unsigned int state, unsigned int cpu);

/* Is a preempt-off window of this generation open on this CPU? */
static inline bool mw_window_open(void)
{
	struct mw_win_start *w = this_cpu_ptr(&mw_win_start[MW_PREEMPT]);

	return w->active && w->gen == mw_gen;
}

/* ---------------------------------------------- windows keyed by stack */

extern unsigned int mw_table_size;

struct mw_win_key *mw_keys(int cpu, int kind);
void mw_key_add(struct mw_win_stats *st, int cpu, int kind,
		const struct mw_win_start *s, u64 d);
int mw_keys_init(void);
void mw_keys_free(void);

/* ---------------------------------------------------------- lock kinds */

extern const char * const mw_mode_name[];
extern const char * const mw_lock_name[MW_LOCK_KINDS];

int mw_lock_kind(void *lock, int mode);
bool mw_ptl_filtered(void);

/* Does the kernel's i_mmap or anon_vma lock belong to this family? */
static inline bool mw_family_in_use(int family)
{
	return family == MW_I_MMAP_MODE || family == MW_ANON_VMA_MODE;
}

/* ---------------------------------------------------------- lock users */

extern struct mw_lock_user mw_users[];
extern int mw_nr_users, mw_nr_missing;

int mw_func_range(const char *name, unsigned long *start,
		  unsigned long *end);
int mw_users_init(void);
void mw_users_free(void);

/* mw_users[] is sorted by start: the one ret lies inside, or NULL. */
static inline const struct mw_lock_user *mw_user_of(unsigned long ret)
{
	return mw_lock_user_find(mw_users, mw_nr_users, ret);
}

/*
 * The call site a lock call of a lock user is counted at, 0 for a call
 * from no lock user.  ret is the lock call's return address, fp the frame
 * pointer at the call (the caller's frame: the lock function has not set
 * up its own yet).  A user that takes the lock for its caller (7.3's
 * out-of-line pte_offset_map_lock(), 6.12's __pte_offset_map_lock()
 * behind an inline one, where 6.1 inlined the spin_lock() into
 * zap_pte_range() and the other users) hands the hold on to its caller's
 * call site, read from its frame, when the caller is a lock user too; else
 * the hold stays its own.  One level only: a caller that is itself such
 * a helper (7.3's get_locked_pte()) keeps the hold.
 * The frame is read only inside the task's stack, as the window's stack
 * walk does.
 */
static inline unsigned long mw_lock_site_ret(unsigned long ret,
					     unsigned long fp)
{
	const struct mw_lock_user *u = mw_user_of(ret);
	unsigned long lo, caller;

	if (!u)
		return 0;
	if (!u->through)
		return ret;
	lo = (unsigned long)task_stack_page(current);
	if (fp < lo || fp > lo + THREAD_SIZE - 2 * sizeof(long) ||
	    fp & (sizeof(long) - 1))
		return ret;
	caller = ((unsigned long *)fp)[1];
	return mw_user_of(caller) ? caller : ret;
}

/* ---------------------------------------------------------- lock sites */

struct mw_lock_site *mw_sites(int cpu);
struct mw_lock_site *mw_site_of(int cpu, unsigned long ret, int kind,
				int mode);
void mw_site_add(struct mw_lock_site *st, u64 d, u64 wait, bool waited);
int mw_sites_init(void);
void mw_sites_free(void);

/* ------------------------------------------------------- spinning holds */

struct mw_lock_cpu {
	struct mw_held held[MW_HELD_SLOTS];
	unsigned int nr_held;	/* slots in use: most unlocks find none */
	u64 nonlock;		/* lock calls from a user on no known lock */
	u64 site_overflow;	/* holds from a site the table had no room for */
};

DECLARE_PER_CPU(struct mw_lock_cpu, mw_lock_cpu);
extern unsigned long mw_spin_lock_start, mw_spin_lock_end;

int mw_spin_holds_init(void);
struct mw_held *mw_spin_hold_claim(void *lock, unsigned long ret, int kind,
				   bool opened, u64 ts);
struct mw_held *mw_spin_hold_begin(void *lock, unsigned long ret);
void mw_spin_hold_end(void *lock, u64 now);
void mw_spin_wait(void *lock, u64 now, bool acquired);
void mw_spin_holds_in_flight(u64 *held);

/*
 * The lock a preempt-off window opened inside _raw_spin_lock acquires: the
 * newest hold on this CPU that the current task began with no window open.
 * Looked up when the window begins, not handed over from the lock hook,
 * since an interrupt may preempt the task between its lock hook and the
 * acquisition and other tasks lock meanwhile.  A window opens with
 * preemption going off, so no hook of this CPU runs during the lookup.
 */
static inline u8 mw_opening_lock(unsigned long ip)
{
	struct mw_lock_cpu *lc = this_cpu_ptr(&mw_lock_cpu);
	struct mw_held *best = NULL;
	int i;

	if (ip < mw_spin_lock_start || ip >= mw_spin_lock_end || !lc->nr_held)
		return 0;
	for (i = 0; i < MW_HELD_SLOTS; i++) {
		struct mw_held *h = &lc->held[i];

		if (h->lock && h->opened && h->task == (unsigned long)current &&
		    (!best || h->ts > best->ts))
			best = h;
	}
	return best ? best->kind + 1 : 0;
}

/* ------------------------------------------------------- sleeping holds */

extern atomic_t mw_nr_sleep_open;
extern atomic64_t mw_slot_overflow;

void mw_sleep_hold_begin(void *lock, unsigned long ret, int mode);
void mw_sleep_hold_end(void *lock, u64 now);
void mw_sleep_wait(void *lock, u64 now, bool acquired);
void mw_sleep_holds_in_flight(u64 *held);

/* ---------------------------------------------------------------- waits */

void mw_contention_begin(void *data, void *lock, unsigned int flags);
void mw_contention_end(void *data, void *lock, int ret);

/* ----------------------------------------------------- lock and trylock */

/*
 * The context of a lock hook: raw (untraced) irqs off from its read of
 * the flag to its last write, which stop's grace period waits for, and
 * the preempt count raised without tracing, so that pfn_valid()'s
 * rcu_read_lock_sched() does not open a window of ours.  Leaving does not
 * reschedule: a wakeup that arrived meanwhile is an interrupt, which
 * reschedules on its own way out once irqs are back on; a hook that
 * rescheduled itself would open a scheduler window between a lock hook
 * and its acquisition and lose the acquisition's lock tag.
 */
#define mw_hook_enter(flags)					\
	do {							\
		raw_local_irq_save(flags);			\
		__preempt_count_inc();				\
		barrier();					\
	} while (0)

/* preempt_enable_no_resched_notrace(), which modules are not given */
#define mw_hook_exit(flags)					\
	do {							\
		barrier();					\
		__preempt_count_dec();				\
		raw_local_irq_restore(flags);			\
	} while (0)

int mw_lock_hooks_register(void);
void mw_lock_hooks_unregister(void);
void mw_lock_hooks_free(void);

int mw_try_hooks_init(void);
int mw_try_hooks_register(void);
void mw_try_hooks_unregister(void);
u64 mw_try_missed(void);

/* ------------------------------------------------------------ tracepoints */

struct mw_tp_hook {
	const char *name;
	void *probe;
	struct tracepoint *tp;
};

extern struct mw_tp_hook mw_tp_hooks[];
extern const int mw_nr_tp_hooks;

/* Holds still open when recording stopped: neither measured nor lost. */
extern u64 mw_held_at_stop[MW_LOCK_KINDS];

/* ------------------------------------------------------------------ dump */

struct proc_dir_entry;
int mw_dump_create(struct proc_dir_entry *dir);

#endif /* MMLAT_WINDOWS_H */
