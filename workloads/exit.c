// SPDX-License-Identifier: GPL-2.0
/*
 * exit driver: children fault in a large RSS and exit, so the kernel tears
 * down a fully populated mm (exit_mmap, free_pgtables) each time.
 */
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>
#include "common.h"

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	volatile uint64_t *pages;	/* faulted in by the children */
	uint64_t ops = 0;
	int running = 0, st;
	size_t len;
	double t0;

	mm_parse(argc, argv, &o, "p:");
	if (!o.nr)
		o.nr = 2;
	len = o.size_mib << 20;
	pages = mm_map_shared(sizeof(*pages));
	mm_count_pages(pages, 1);
	mm_setup(&o);
	t0 = mm_now();
	while (!mm_stop || running) {
		while (!mm_stop && running < o.nr) {
			pid_t pid = fork();

			if (pid < 0)
				mm_die("fork");
			if (!pid) {
				mm_touch_count(mm_map_anon(len), len, pages);
				_exit(0);
			}
			running++;
		}
		if (wait(&st) < 0)
			continue;	/* interrupted by the stop signal */
		running--;
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "error: child failed (status %d)\n", st);
			return 1;
		}
		ops++;
	}
	mm_report("exit", mm_now() - t0, ops, ops * len);
	mm_report_pages(t0);
	printf("processes=%d\nregion_mib=%zu\n", o.nr, o.size_mib);
	return 0;
}
