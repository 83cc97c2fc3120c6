// SPDX-License-Identifier: GPL-2.0
/*
 * mixed driver: runs the four other drivers at once (they live next to this
 * binary) and sums their ops, so all mm paths load the guest together.
 * With a seed (-S N), part i gets the seed 4N + i, so that the parts' start
 * delays and layouts differ.  pages and pages_per_s are the sums of the
 * parts' (a sum of rates over each part's own time to its stop), pages_s
 * the parts' longest.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "common.h"

static const char * const parts[] = { "munmap", "exit", "truncate", "fork" };
#define NR_PARTS (sizeof(parts) / sizeof(parts[0]))

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	char self[4096], bin[4200], dur[32], size[32], line[256], seed[32];
	unsigned long long part_ops[NR_PARTS] = { 0 }, v;
	uint64_t ops = 0, bytes = 0, pages = 0;
	double pages_s = 0, pages_per_s = 0, d;
	FILE *out[NR_PARTS];
	pid_t pid[NR_PARTS];
	ssize_t n;
	size_t i;
	double t0;
	int fds[2], st, failed = 0;

	mm_parse(argc, argv, &o, "");
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		mm_die("readlink /proc/self/exe");
	self[n] = '\0';
	snprintf(dur, sizeof(dur), "%d", (int)o.duration);
	/* The parts share the guest, so each gets a quarter of the region. */
	snprintf(size, sizeof(size), "%zu", o.size_mib / 4 ? o.size_mib / 4 : 1);
	mm_setup(&o);
	t0 = mm_now();
	for (i = 0; i < NR_PARTS; i++) {
		snprintf(bin, sizeof(bin), "%s/mmlat-%s", dirname(strdup(self)),
			 parts[i]);
		if (pipe(fds))
			mm_die("pipe");
		pid[i] = fork();
		if (pid[i] < 0)
			mm_die("fork");
		if (!pid[i]) {
			dup2(fds[1], 1);
			close(fds[0]);
			snprintf(seed, sizeof(seed), "%lu",
				 o.seed ? o.seed * NR_PARTS + i : 0);
			execl(bin, bin, "-d", dur, "-s", size, "-S", seed,
			      (char *)NULL);
			mm_die(bin);
		}
		close(fds[1]);
		out[i] = fdopen(fds[0], "r");
	}
	for (i = 0; i < NR_PARTS; i++) {
		for (;;) {
			if (!fgets(line, sizeof(line), out[i])) {
				/* Our own stop signal interrupts the read. */
				if (!ferror(out[i]) || errno != EINTR)
					break;
				clearerr(out[i]);
				kill(pid[i], SIGTERM);
				continue;
			}
			if (sscanf(line, "ops=%llu", &v) == 1)
				part_ops[i] = v;
			else if (sscanf(line, "bytes=%llu", &v) == 1)
				bytes += v;
			else if (sscanf(line, "pages=%llu", &v) == 1)
				pages += v;
			else if (sscanf(line, "pages_per_s=%lf", &d) == 1)
				pages_per_s += d;
			else if (sscanf(line, "pages_s=%lf", &d) == 1 &&
				 d > pages_s)
				pages_s = d;
		}
		/* Pass an early stop on to the parts still running. */
		if (mm_stop)
			kill(pid[i], SIGTERM);
	}
	for (i = 0; i < NR_PARTS; i++) {
		while (waitpid(pid[i], &st, 0) < 0)
			kill(pid[i], SIGTERM);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "error: mmlat-%s failed\n", parts[i]);
			failed = 1;
		}
		ops += part_ops[i];
	}
	if (failed)
		return 1;
	mm_report("mixed", mm_now() - t0, ops, bytes);
	printf("pages=%llu\npages_s=%.6f\npages_per_s=%.3f\n",
	       (unsigned long long)pages, pages_s, pages_per_s);
	for (i = 0; i < NR_PARTS; i++)
		printf("%s_ops=%llu\n", parts[i], part_ops[i]);
	printf("region_mib=%zu\n", o.size_mib);
	return 0;
}
