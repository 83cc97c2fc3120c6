// SPDX-License-Identifier: GPL-2.0
/*
 * anonchain driver (anon_vma chains): W chains (-w, default 2) of D
 * long-lived tasks each (-D, default 16) under one root task, each task
 * forked by the one above it, and at the bottom of every chain a leaf that
 * keeps exiting and being forked again.
 *
 * The root writes every page of an anonymous region of -s MiB (the
 * runner's 16) before it forks; every task below it writes one page in
 * every 16 of the region before it forks in turn, so that each level has
 * an anon_vma with pages of its own.  A task at depth d then has d + 1
 * anon_vmas on the chain of each of its anonymous vmas (the region, the
 * stack, the data): its fork copies that chain in anon_vma_clone(), one
 * link at a time under the root anon_vma's lock, and its exit takes the
 * chain apart in unlink_anon_vmas() under the same lock.  The leaves (fork,
 * write one page in 16, exit) repeat both over chains of D + 1 without
 * end.  Every task of every chain hangs in the root anon_vma's interval
 * tree, and the W chains take the one root lock.
 *
 * ops are leaf respawns.  The memory taken is the region once and 1/16 of
 * it per task below the root, W * (D + 1) of them with the leaves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "common.h"

/* Every task below the root writes one page in this many. */
#define TOUCH_STRIDE	16

static int depth = 16;
static int width = 2;

static void own_opt(const char *prog, int opt, const char *arg)
{
	switch (opt) {
	case 'D':
		depth = mm_parse_num(prog, arg);
		break;
	case 'w':
		width = mm_parse_num(prog, arg);
		break;
	}
}

/*
 * A write fault on each page copies it into this task's own anon_vma;
 * count, if not NULL, gets one per page.
 */
static void touch_share(char *region, size_t len, volatile uint64_t *count)
{
	size_t step = TOUCH_STRIDE * (size_t)sysconf(_SC_PAGESIZE);
	size_t off;

	for (off = 0; off < len; off += step) {
		region[off] = 1;
		if (count)
			(*count)++;
	}
}

/*
 * Wait for a child; a stop signal meanwhile is passed on to it, so that a
 * chain whose root went away (PR_SET_PDEATHSIG) still stops from the top.
 * False if the child failed.
 */
static bool reap(pid_t kid)
{
	int st;

	while (waitpid(kid, &st, 0) < 0) {
		if (errno != EINTR)
			mm_die("waitpid");
		kill(kid, SIGTERM);
	}
	return WIFEXITED(st) && !WEXITSTATUS(st);
}

/*
 * The tasks of a chain, from depth 1 down: each writes its share of the
 * region, then forks the next level and waits for it, except the one at
 * depth D, which forks leaves one after the other until told to stop.
 */
static void chain_task(char *region, size_t len, uint64_t *respawns,
		       volatile uint64_t *pages)
{
	int level = 1;
	pid_t kid;

	for (;;) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		touch_share(region, len, NULL);
		if (level == depth || mm_stop)
			break;
		kid = fork();
		if (kid < 0)
			mm_die("fork");
		if (kid)
			_exit(reap(kid) ? 0 : 1);
		level++;
	}
	while (!mm_stop) {
		kid = fork();
		if (kid < 0)
			mm_die("fork (leaf)");
		if (!kid) {
			touch_share(region, len, pages);
			_exit(0);
		}
		if (!reap(kid))
			mm_fail("a leaf failed");
		(*respawns)++;
	}
	_exit(0);
}

/*
 * Sleep until the deadline or a stop signal.  The signals stay blocked
 * between the test and the sleep, so that one coming in between is not
 * lost.
 */
static void wait_for_stop(void)
{
	sigset_t stop, old;

	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGALRM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	while (!mm_stop)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(int argc, char **argv)
{
	struct mm_opts o = { .own_opt = own_opt };
	uint64_t *respawns, ops = 0;
	uint64_t *pages;	/* written by the leaves, per chain */
	int i, nr_chains, failed = 0;
	pid_t *chains;
	char *region;
	size_t len;
	double t0;

	mm_parse(argc, argv, &o, "D:w:");
	len = o.size_mib << 20;
	respawns = mm_map_shared(width * sizeof(*respawns));
	pages = mm_map_shared(width * sizeof(*pages));
	mm_count_pages(pages, width);
	chains = calloc(width, sizeof(*chains));
	if (!chains)
		mm_die("calloc");
	region = mm_map_anon(len);
	mm_touch(region, len);
	/*
	 * A process group of our own: the stop reaches every task at once,
	 * whichever fork or wait it is in, instead of passing down a chain of
	 * D waits.
	 */
	if (setpgid(0, 0))
		mm_die("setpgid");
	mm_setup(&o);
	t0 = mm_now();
	for (nr_chains = 0; nr_chains < width && !mm_stop; nr_chains++) {
		chains[nr_chains] = fork();
		if (chains[nr_chains] < 0)
			mm_die("fork");
		if (!chains[nr_chains])
			chain_task(region, len, &respawns[nr_chains],
				   &pages[nr_chains]);
	}
	wait_for_stop();
	kill(0, SIGTERM);
	for (i = 0; i < nr_chains; i++) {
		if (!reap(chains[i]))
			failed = 1;
		ops += respawns[i];
	}
	if (failed)
		mm_fail("a chain failed");
	mm_report("anonchain", mm_now() - t0, ops, ops * len / TOUCH_STRIDE);
	mm_report_pages(t0);
	printf("depth=%d\nwidth=%d\nregion_mib=%zu\n", depth, width,
	       o.size_mib);
	return 0;
}
