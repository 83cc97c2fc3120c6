// SPDX-License-Identifier: GPL-2.0
/*
 * munmap driver: threads of one mm, each pinned to its own CPU, map, touch
 * and unmap large and small anonymous regions so that every munmap has to
 * shoot down TLB entries on the other CPUs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include "common.h"

#define NR_SMALL	64

struct worker {
	pthread_t tid;
	int cpu;
	size_t len;
	uint64_t ops, small_ops, bytes;
	volatile uint64_t *pages;	/* mapped, touched and unmapped */
};

static void *run(void *arg)
{
	struct worker *w = arg;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *small[NR_SMALL];
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	while (!mm_stop) {
		char *p = mm_map_anon(w->len);

		mm_touch_count(p, w->len, w->pages);
		if (munmap(p, w->len))
			mm_die("munmap");
		w->ops++;
		w->bytes += w->len;
		for (i = 0; i < NR_SMALL; i++) {
			small[i] = mm_map_anon(pg);
			small[i][0] = 1;
			(*w->pages)++;
		}
		for (i = 0; i < NR_SMALL; i++)
			if (munmap(small[i], pg))
				mm_die("munmap");
		w->small_ops += NR_SMALL;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	uint64_t ops = 0, small_ops = 0, bytes = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	volatile uint64_t *pages;
	struct worker *w;
	double t0;
	int i;

	mm_parse(argc, argv, &o, "t:");
	if (!o.nr)
		o.nr = ncpu > 1 ? ncpu : 2;
	w = calloc(o.nr, sizeof(*w));
	pages = calloc(o.nr, sizeof(*pages));
	if (!w || !pages)
		mm_die("calloc");
	mm_count_pages(pages, o.nr);
	mm_setup(&o);
	t0 = mm_now();
	for (i = 0; i < o.nr; i++) {
		w[i].cpu = i % ncpu;
		w[i].len = o.size_mib << 20;
		w[i].pages = &pages[i];
		if (pthread_create(&w[i].tid, NULL, run, &w[i]))
			mm_die("pthread_create");
	}
	for (i = 0; i < o.nr; i++) {
		pthread_join(w[i].tid, NULL);
		ops += w[i].ops;
		small_ops += w[i].small_ops;
		bytes += w[i].bytes;
	}
	mm_report("munmap", mm_now() - t0, ops, bytes);
	mm_report_pages(t0);
	printf("threads=%d\nregion_mib=%zu\nsmall_ops=%llu\n", o.nr,
	       o.size_mib, (unsigned long long)small_ops);
	return 0;
}
