// SPDX-License-Identifier: GPL-2.0
/*
 * The window module's records and dump lines (guest/modules/include/
 * mmlat_records.h and mmlat_dump.h), built for the host as the QEMU
 * plugin builds them (plugin/src/records.h): counts the windows and lock
 * holds read from stdin in two CPUs' records, as the module and the
 * plugin count theirs, and prints both dumps, for test_records_dump.py
 * to read back with the analysis's parser.
 *
 * usage: records_dump TABLE_SIZE THRESH_NS < EVENTS > DUMPS
 *   win CPU KIND LOCK NS DEPTH FRAME...   a window of NS, opened with
 *                                         this stack and lock tag
 *   unmatched CPU KIND                    an end with no window open
 *   edge CPU KIND                         an end of a window opened
 *                                         before recording started
 *   hold CPU RET KIND MODE NS             a lock hold at call site RET
 *   lost CPU RET KIND MODE                a hold whose unlock went unseen
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "records.h"

#define CPUS	2

static void frame(FILE *f, u64 ip)
{
	if (ip == MW_IDLE_IP)
		fputs("[idle]", f);
	else
		fprintf(f, "fn_%llx+0x0/0x10", ip);
}

#define mw_dump_printf	fprintf
#define mw_dump_frame	frame
#include "mmlat_dump.h"

static const char * const kind_name[2] = { "preempt", "irq" };
static const char * const lock_name[MW_LOCK_KINDS] = MW_LOCK_NAMES;
static const char * const mode_name[MW_MODE_NONE + 1] = MW_MODE_NAMES;

static struct mw_win_stats stats[CPUS][2];
static struct mw_win_key *keys[CPUS][2];
static struct mw_lock_site sites[CPUS][MW_MAX_SITES];
static u64 site_overflow;

static const char *tag(u8 lock)
{
	return lock ? lock_name[lock - 1] : "none";
}

/* A window that ends: open (gen 1), or as it was left before recording. */
static void window_end(unsigned int cpu, int kind, struct mw_win_start *s,
		       u64 ns, unsigned int size, u64 thresh)
{
	struct mw_win_stats *st = &stats[cpu][kind];
	unsigned int i;

	if (!mw_win_close(s, st, 1))
		return;
	if (mw_win_count(st, s, ns)) {
		/* the stack at its end: the opener's, outermost first */
		st->max_depth = s->depth;
		for (i = 0; i < s->depth; i++)
			st->max_stack[i] = s->stack[s->depth - 1 - i];
	}
	if (ns >= thresh)
		mw_win_key_add(st, keys[cpu][kind], size, s, ns);
}

static struct mw_lock_site *site(unsigned int cpu, u64 ret, int kind,
				 int mode)
{
	struct mw_lock_site *s = mw_site_find(sites[cpu], ret, kind, mode);

	if (!s)
		site_overflow++;
	return s;
}

static void dump(unsigned int size, u64 thresh)
{
	struct mw_win_stats t;
	struct mw_lock_totals lt = { .nonlock = 0 };
	struct mw_lock_site sum;
	unsigned int cpu, c, i, j;
	int kind;

	printf("mmlat_windows %d\n", MW_DUMP_VERSION);
	printf("param clock=test thresh_ns=%llu table_size=%u cpus=%d\n",
	       thresh, size, CPUS);
	for (kind = 0; kind < 2; kind++) {
		memset(&t, 0, sizeof(t));
		for (cpu = 0; cpu < CPUS; cpu++)
			mw_win_stats_sum(&t, &stats[cpu][kind]);
		mw_dump_kind(stdout, kind_name[kind], &t, tag(t.max_lock));
	}
	for (cpu = 0; cpu < CPUS; cpu++)
		for (kind = 0; kind < 2; kind++)
			for (i = 0; i < size; i++)
				if (keys[cpu][kind][i].depth)
					mw_dump_key(stdout, kind_name[kind], cpu,
						    &keys[cpu][kind][i],
						    tag(keys[cpu][kind][i].lock));

	printf("mmlat_locks %d\n", MW_DUMP_VERSION);
	printf("param clock=test\n");
	lt.site_overflow = site_overflow;
	for (cpu = 0; cpu < CPUS; cpu++)
		mw_sites_total(&lt, sites[cpu]);
	mw_dump_lock_totals(stdout, lock_name, &lt);
	for (cpu = 0; cpu < CPUS; cpu++) {
		for (i = 0; i < MW_MAX_SITES; i++) {
			bool seen = false;

			if (!sites[cpu][i].ret)
				continue;
			for (c = 0; c < cpu; c++)
				for (j = 0; j < MW_MAX_SITES; j++)
					seen |= mw_same_site(&sites[c][j],
							     &sites[cpu][i]);
			if (seen)
				continue;
			memset(&sum, 0, sizeof(sum));
			for (c = 0; c < CPUS; c++)
				for (j = 0; j < MW_MAX_SITES; j++)
					if (mw_same_site(&sites[c][j],
							 &sites[cpu][i]))
						mw_site_sum(&sum, &sites[c][j]);
			mw_dump_site(stdout, &sum, lock_name[sum.kind],
				     mode_name[sum.mode]);
		}
	}
}

int main(int argc, char **argv)
{
	unsigned int size, cpu, depth, i, lock;
	struct mw_win_start s;
	struct mw_lock_site *st;
	char word[16];
	u64 thresh, ns, ret;
	int kind, lk, mode;

	if (argc != 3)
		return 2;
	size = strtoul(argv[1], NULL, 0);
	thresh = strtoull(argv[2], NULL, 0);
	for (cpu = 0; cpu < CPUS; cpu++)
		for (kind = 0; kind < 2; kind++)
			keys[cpu][kind] = calloc(size, sizeof(struct mw_win_key));
	while (scanf("%15s %u", word, &cpu) == 2 && cpu < CPUS) {
		memset(&s, 0, sizeof(s));
		if (!strcmp(word, "win")) {
			if (scanf("%d %u %llu %u", &kind, &lock, &ns, &depth) != 4 ||
			    depth > MW_OPEN_DEPTH)
				return 1;
			for (i = 0; i < depth; i++)
				if (scanf("%llx", &s.stack[i]) != 1)
					return 1;
			s.depth = depth;
			s.lock = lock;
			s.active = 1;
			s.gen = 1;
			window_end(cpu, kind, &s, ns, size, thresh);
		} else if (!strcmp(word, "unmatched") || !strcmp(word, "edge")) {
			if (scanf("%d", &kind) != 1)
				return 1;
			s.active = word[0] == 'e';
			s.gen = word[0] == 'e' ? 0 : 1;
			window_end(cpu, kind, &s, 0, size, thresh);
		} else if (!strcmp(word, "hold") || !strcmp(word, "lost")) {
			if (scanf("%llx %d %d", &ret, &lk, &mode) != 3)
				return 1;
			st = site(cpu, ret, lk, mode);
			if (word[0] == 'l') {
				if (st)
					st->lost++;
			} else if (scanf("%llu", &ns) != 1) {
				return 1;
			} else if (st) {
				mw_site_hold(st, ns);
			}
		} else {
			return 1;
		}
	}
	dump(size, thresh);
	return 0;
}
