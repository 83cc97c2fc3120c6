// SPDX-License-Identifier: GPL-2.0
/*
 * truncate driver: several processes keep a tmpfs file mapped MAP_SHARED
 * and faulted in while the parent truncates it to 0 and back, so every
 * cycle unmaps the pages from all of their page tables.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "common.h"

static sigjmp_buf bus_env;

/* A fault while the file is truncated to 0 is expected: retry it. */
static void on_sigbus(int sig)
{
	(void)sig;
	siglongjmp(bus_env, 1);
}

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	volatile uint64_t pages = 0;	/* written, then truncated */
	uint64_t ops = 0;
	pid_t *kids;
	size_t len;
	double t0;
	int fd, i;
	char *p;

	mm_parse(argc, argv, &o, "p:f:");
	if (!o.nr)
		o.nr = 2;
	len = o.size_mib << 20;
	fd = mm_tmpfile(o.dir, "truncate", len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		mm_die("mmap");
	kids = calloc(o.nr, sizeof(*kids));
	if (!kids)
		mm_die("calloc");
	mm_setup(&o);
	for (i = 0; i < o.nr; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			mm_die("fork");
		if (!kids[i]) {
			/* Keep faulting the file back into this mm. */
			signal(SIGBUS, on_sigbus);
			sigsetjmp(bus_env, 1);
			while (!mm_stop)
				mm_touch(p, len);
			_exit(0);
		}
	}
	mm_count_pages(&pages, 1);
	t0 = mm_now();
	while (!mm_stop) {
		mm_touch_count(p, len, &pages);
		if (ftruncate(fd, 0) || ftruncate(fd, len))
			mm_die("ftruncate");
		ops++;
	}
	for (i = 0; i < o.nr; i++) {
		kill(kids[i], SIGTERM);
		waitpid(kids[i], NULL, 0);
	}
	mm_report("truncate", mm_now() - t0, ops, ops * len);
	mm_report_pages(t0);
	printf("processes=%d\nregion_mib=%zu\n", o.nr, o.size_mib);
	return 0;
}
