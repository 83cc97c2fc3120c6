/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Hold times of the PTE, i_mmap and anon_vma locks per lock call site, as
 * the guest module keeps them (guest/modules/mmlat_windows, "Lock hold
 * times"): a lock call from a lock user (guest/classes.txt) on a lock of a
 * known kind, checked at its address in guest memory, opens a hold; the
 * unlock of that lock closes it.  Trylocks count when they return 1.
 */
#ifndef MMLAT_PLUGIN_LOCKS_H
#define MMLAT_PLUGIN_LOCKS_H

#include <stdbool.h>
#include "types.h"
#include <stdio.h>

#include "records.h"

/* The lock kinds and modes are the module's (mmlat_records.h). */
extern const char * const lock_name[MW_LOCK_KINDS];
extern const char * const mode_name[MW_MODE_NONE + 1];

/*
 * Read the lock users of classes.txt (rows with a lock; names with a *
 * skipped, as the module does) and find them in System.map; extra: colon-
 * separated names added (the module's sites=).  False with a message.
 */
bool locks_init(unsigned int nr_cpus, const char *classes, const char *extra);

/* What the kernel's i_mmap and anon_vma locks are (offsets.c). */
int lock_mode(int kind);
bool lock_family_hooked(int mode);

/* The hooks, at the entry of the lock functions; mode for sleeping ones. */
void lock_spin_lock(unsigned int cpu);
void lock_spin_unlock(unsigned int cpu);
void lock_sleep_lock(unsigned int cpu, int mode);
void lock_sleep_unlock(unsigned int cpu);
void lock_try_entry(unsigned int cpu, int mode);

/*
 * Trylock returns: a return site is the instruction after a call of a
 * hooked trylock from a lock user (checked when it is translated); the
 * hook there reads the trylock's result.
 */
bool lock_is_try_return(u64 vaddr, int *mode);
void lock_try_return(unsigned int cpu, u64 vaddr, int mode);

/* The lock tag of a preempt-off window opening at ip (0: none). */
u8 lock_opening_tag(unsigned int cpu, u64 ip);

/* Recording stopped: count the holds still open. */
void locks_stop(void);

/* For the dump. */
unsigned int lock_nr_users(void);
const char *lock_user_name(unsigned int i, u64 *size);
unsigned int lock_nr_missing(void);
const char *lock_tag(u8 lock);
struct mw_lock_site *lock_sites_of(unsigned int cpu);
/* The dump's totals but those the sites sum to (mw_sites_total()). */
void lock_totals(struct mw_lock_totals *t);
unsigned int lock_nr_cpus(void);

#endif
