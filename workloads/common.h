/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMLAT_COMMON_H
#define MMLAT_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The seed (-S N, the runner's mmlat.seed, the repeat index) varies per boot
 * what any code change varies anyway, so that boots of one kernel under
 * icount, otherwise nearly identical, sample the phases a patch shifts:
 * - the start of the work, delayed by 0 to MM_START_JITTER_US - 1 us after
 *   the driver's setup (mm_setup()), against cyclictest's 500 us period and
 *   the timer tick;
 * - the layout: mm_parse() maps MM_LAYOUT_PAD_MAX pages or fewer (at least
 *   one) of PROT_NONE padding first, so every later mapping of the driver
 *   (regions, files, thread stacks) sits at a different offset within its
 *   page table (512 pages) and page-table page.
 * Seed 0 (no -S) varies nothing.  The driver prints seed=, start_delay_us=,
 * layout_pad_pages= and layout_base= (the padding's address, which shows
 * whether the kernel's own ASLR varies between boots).
 */
#define MM_START_JITTER_US	10000
#define MM_LAYOUT_PAD_MAX	512

struct mm_opts {
	double duration;	/* seconds */
	unsigned long seed;	/* -S, 0: vary nothing */
	size_t size_mib;
	int nr;			/* threads, processes or mappings */
	const char *dir;
	/*
	 * A driver's own options: mm_parse() hands it every option of its
	 * extra string that it does not know itself, with the argument.
	 */
	void (*own_opt)(const char *prog, int opt, const char *arg);
};

extern volatile sig_atomic_t mm_stop;

void mm_parse(int argc, char **argv, struct mm_opts *o, const char *extra);
/* A positive decimal number, or exits with a message naming prog. */
long mm_parse_num(const char *prog, const char *s);
void mm_setup(const struct mm_opts *o);
double mm_now(void);
void mm_die(const char *what) __attribute__((noreturn));
/* Exits with "error: " and the message, for failures without an errno. */
void mm_fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void *mm_map_anon(size_t len);
/* Shared anonymous memory, zeroed and faulted in: counters across forks. */
void *mm_map_shared(size_t len);
/* An unlinked file of len bytes in dir; the caller maps and closes it. */
int mm_tmpfile(const char *dir, const char *tag, size_t len);
void mm_touch(char *p, size_t len);
/* The seed's next pseudo-random number (splitmix64). */
uint64_t mm_rand(void);
void mm_report(const char *name, double secs, uint64_t ops, uint64_t bytes);

/*
 * Work in units finer than operations ("pages": what one is depends on the
 * driver, see results/README.md), counted up to the stop: the driver keeps
 * its counters in one array (shared memory when other processes add to it)
 * and registers it; the first stop signal sums it and notes the time, so
 * work done after the stop (the operation in flight, which drivers finish)
 * does not count, and the part of it done before does.
 */
void mm_count_pages(volatile uint64_t *counters, int nr);
/*
 * Prints pages=, pages_s= (t0 to the stop, or to now without a stop) and
 * pages_per_s=.
 */
void mm_report_pages(double t0);
/* The time of the first stop signal, or now without one. */
double mm_stop_time(void);
/* mm_touch() that adds one to *count per page, atomically. */
void mm_touch_count(char *p, size_t len, volatile uint64_t *count);

#endif
