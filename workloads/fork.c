// SPDX-License-Identifier: GPL-2.0
/*
 * fork driver: a parent with a large anonymous, private file and shared file
 * RSS forks repeatedly; the children exit at once, so the cost is copying
 * and tearing down the page tables of a populated mm.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include "common.h"

static char *map_file(const char *dir, size_t len, int flags)
{
	int fd = mm_tmpfile(dir, "fork", len);
	void *p;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	if (p == MAP_FAILED)
		mm_die("mmap file");
	close(fd);
	return p;
}

int main(int argc, char **argv)
{
	struct mm_opts o = { 0 };
	volatile uint64_t pages = 0;	/* copied by completed forks */
	uint64_t ops = 0;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t len;
	double t0;
	int st;

	mm_parse(argc, argv, &o, "f:");
	len = o.size_mib << 20;
	/* Half anonymous, a quarter each private and shared file pages. */
	mm_touch(mm_map_anon(len / 2), len / 2);
	mm_touch(map_file(o.dir, len / 4, MAP_PRIVATE), len / 4);
	mm_touch(map_file(o.dir, len / 4, MAP_SHARED), len / 4);
	mm_count_pages(&pages, 1);
	mm_setup(&o);
	t0 = mm_now();
	while (!mm_stop) {
		pid_t pid = fork();

		if (pid < 0)
			mm_die("fork");
		if (!pid)
			_exit(0);
		/* one fork copies the page tables of the whole region */
		pages += len / pg;
		while (waitpid(pid, &st, 0) < 0)
			;
		ops++;
	}
	mm_report("fork", mm_now() - t0, ops, ops * len);
	mm_report_pages(t0);
	printf("region_mib=%zu\n", o.size_mib);
	return 0;
}
