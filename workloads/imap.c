// SPDX-License-Identifier: GPL-2.0
/*
 * imap driver (i_mmap fan-out): one process maps a tmpfs file MAP_SHARED
 * N times (-n, default 64) at distinct addresses and faults every mapping
 * in, then truncates the file to 0 and back in a loop, so that each cycle
 * unmap_mapping_range() walks all N vmas of the file under its i_mmap lock,
 * and refaults them.  Meanwhile a second process keeps mapping and
 * unmapping one page of the same file, so the file's vma tree changes
 * while the walk runs: a lockbreak that finds the tree changed has to
 * restart the walk.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "common.h"

static sigjmp_buf bus_env;
static uint64_t ops;
/* pages faulted into a mapping (then zapped by the truncate) */
static volatile uint64_t pages;

/* A fault while the file is truncated to 0 is expected: retry it. */
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_env, 1);
}

/*
 * The second task: map and unmap one page of the file until the deadline
 * (its own alarm: a fork does not inherit one) or until told to stop.  It
 * stops by itself because the truncating process cannot tell it to while
 * it is inside a truncate, and a walk that restarts whenever the tree
 * changed might not end while this task keeps changing it.
 */
static void remap_loop(int fd, double duration, volatile uint64_t *remaps)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	void *q;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	alarm((unsigned int)duration);
	while (!mm_stop) {
		q = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
		if (q == MAP_FAILED)
			mm_die("mmap (remap)");
		if (munmap(q, pg))
			mm_die("munmap (remap)");
		(*remaps)++;
	}
	_exit(0);
}

/*
 * Fault the file into every mapping: the first one by writing, which
 * allocates the pages, the others by reading, which maps the pages
 * around the faulting one too (fault-around), so that a cycle's cost is
 * mostly setting up and zapping N times the file's PTEs, not faults.
 * Returns false if told to stop meanwhile: a cycle with large N takes
 * seconds.
 */
static bool refault(char **maps, int n, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char sink;
	size_t off;
	int i;

	mm_touch_count(maps[0], len, &pages);
	for (i = 1; i < n && !mm_stop; i++)
		for (off = 0; off < len; off += pg) {
			sink = ((volatile char *)maps[i])[off];
			pages++;
		}
	(void)sink;
	return !mm_stop;
}

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	volatile uint64_t *remaps;
	char **maps;
	pid_t kid;
	size_t len;
	double t0;
	int fd, i;

	mm_parse(argc, argv, &o, "n:f:");
	if (!o.nr)
		o.nr = 64;
	len = o.size_mib << 20;
	fd = mm_tmpfile(o.dir, "imap", len);
	remaps = mmap(NULL, sizeof(*remaps), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (remaps == MAP_FAILED)
		mm_die("mmap counter");
	maps = calloc(o.nr, sizeof(*maps));
	if (!maps)
		mm_die("calloc");
	mm_setup(&o);
	/* Forked before the N mappings exist, so it has none of them. */
	kid = fork();
	if (kid < 0)
		mm_die("fork");
	if (!kid)
		remap_loop(fd, o.duration, remaps);
	for (i = 0; i < o.nr; i++) {
		maps[i] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			       fd, 0);
		if (maps[i] == MAP_FAILED)
			mm_die("mmap");
	}
	signal(SIGBUS, on_sigbus);
	mm_count_pages(&pages, 1);
	t0 = mm_now();
	while (!mm_stop) {
		if (sigsetjmp(bus_env, 1))
			continue;
		if (!refault(maps, o.nr, len))
			break;
		if (ftruncate(fd, 0) || ftruncate(fd, len))
			mm_die("ftruncate");
		ops++;
	}
	kill(kid, SIGTERM);
	waitpid(kid, NULL, 0);
	mm_report("imap", mm_now() - t0, ops, ops * o.nr * len);
	mm_report_pages(t0);
	printf("n=%d\nremaps=%llu\nregion_mib=%zu\n", o.nr,
	       (unsigned long long)*remaps, o.size_mib);
	return 0;
}
