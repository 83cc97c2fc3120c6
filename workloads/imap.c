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
 *
 * -w W: W processes unmap all of the file's mappings at the same time, in
 * place of the truncation.  Truncations cannot: ftruncate() holds the
 * inode lock across unmap_mapping_range(), so two truncations of one file
 * take turns.  A direct-I/O write to a block device takes no inode lock,
 * and before it overwrites the device's page cache it unmaps that from
 * every vma (invalidate_inode_pages2_range()).  So with -w the file is a
 * zram device of the same size, which the driver adds through zram's
 * control directory (-z, default /sys/class/zram-control) and removes at
 * the end, and each of the W writers has the N mappings (W times N vmas in
 * all), reads the first page of each (fault-around maps the pages around
 * it too) and writes the whole device with O_DIRECT, in a loop.  The
 * unmap walks every page table entry of every vma's range, populated or
 * not, so one page a mapping makes a short read-in for a long unmap.  The
 * second process maps and unmaps one page of the device.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "common.h"

#define MAX_WRITERS	8

static sigjmp_buf bus_env;
static uint64_t ops;
/* pages faulted into a mapping (then zapped by the truncate) */
static volatile uint64_t pages;

/* -w: direct-I/O writers of a zram device; 0: truncate a tmpfs file */
static int nr_writers;
static const char *zram_control = "/sys/class/zram-control";

/* What the writers share: their operations and the pages each read in. */
struct writer_counts {
	uint64_t ops;
	volatile uint64_t pages[MAX_WRITERS];
};

static void own_opt(const char *prog, int opt, const char *arg)
{
	switch (opt) {
	case 'w':
		nr_writers = mm_parse_num(prog, arg);
		if (nr_writers > MAX_WRITERS)
			mm_fail("-w %d: at most %d writers", nr_writers,
				MAX_WRITERS);
		break;
	case 'z':
		zram_control = arg;
		break;
	}
}

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
	for (i = 0; i < n && !mm_stop; i++)
		for (off = 0; off < len; off += pg) {
			sink = ((volatile char *)maps[i])[off];
			pages++;
		}
	(void)sink;
	return !mm_stop;
}

/* The whole of a small sysfs file into buf, NUL-terminated, or fails. */
static void read_attr(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		mm_fail("%s: %s (-w needs zram: CONFIG_ZRAM, and its control directory, -z)",
			path, strerror(errno));
	n = read(fd, buf, size - 1);
	if (n < 0)
		mm_die(path);
	buf[n] = '\0';
	close(fd);
}

static void write_attr(const char *path, const char *val)
{
	ssize_t len = (ssize_t)strlen(val);
	int fd;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		mm_die(path);
	if (write(fd, val, len) != len)
		mm_die(path);
	close(fd);
}

/* A new zram device of len bytes, opened for direct I/O; its number in *id. */
static int zram_open(size_t len, int *id)
{
	char path[PATH_MAX], val[32];
	char *end;
	long nr;
	int fd;

	snprintf(path, sizeof(path), "%s/hot_add", zram_control);
	read_attr(path, val, sizeof(val));
	errno = 0;
	nr = strtol(val, &end, 10);
	if (errno || end == val || (*end && *end != '\n') || nr < 0)
		mm_fail("%s: not a device number: '%s'", path, val);
	*id = (int)nr;
	snprintf(path, sizeof(path), "/sys/block/zram%d/disksize", *id);
	snprintf(val, sizeof(val), "%zu", len);
	write_attr(path, val);
	snprintf(path, sizeof(path), "/dev/zram%d", *id);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd < 0)
		mm_die(path);
	return fd;
}

static void zram_remove(int id)
{
	char path[PATH_MAX], val[16];

	snprintf(path, sizeof(path), "%s/hot_remove", zram_control);
	snprintf(val, sizeof(val), "%d", id);
	write_attr(path, val);
}

/*
 * A writer: read the first page of each of its mappings in (from the page
 * cache, or from the device when a write has just invalidated it), then
 * overwrite the whole device with one direct-I/O write, which unmaps the
 * device's pages from every writer's mappings first.  The buffer is left
 * zero, which zram stores without compressing.  A concurrent writer's
 * read-in can map a page again before the write's second invalidation,
 * which then fails, and the kernel logs a page cache invalidation failure
 * on direct I/O: expected here.
 */
static void write_loop(int fd, char **maps, int n, size_t len,
		       struct writer_counts *counts, int me)
{
	char *buf = mm_map_anon(len);
	volatile char sink;
	ssize_t done;
	int i;

	while (!mm_stop) {
		for (i = 0; i < n && !mm_stop; i++) {
			sink = *(volatile char *)maps[i];
			counts->pages[me]++;
		}
		if (mm_stop)
			break;
		done = pwrite(fd, buf, len, 0);
		if (done < 0 && errno == EINTR)
			continue;
		if (done < 0)
			mm_die("pwrite (O_DIRECT)");
		if ((size_t)done != len)
			mm_fail("pwrite (O_DIRECT): wrote %zd of %zu bytes",
				done, len);
		__atomic_fetch_add(&counts->ops, 1, __ATOMIC_RELAXED);
	}
	(void)sink;
}

static void map_n(char **maps, int n, size_t len, int prot, int fd)
{
	int i;

	for (i = 0; i < n; i++) {
		maps[i] = mmap(NULL, len, prot, MAP_SHARED, fd, 0);
		if (maps[i] == MAP_FAILED)
			mm_die("mmap");
	}
}

/*
 * -w: the writers, this process the first, the others forked after the
 * mappings, so that each has its own N vmas of the device.
 */
static void run_writers(struct mm_opts *o, char **maps, size_t len,
			volatile uint64_t *remaps)
{
	struct writer_counts *counts = mm_map_shared(sizeof(*counts));
	pid_t writers[MAX_WRITERS];
	pid_t kid;
	double t0;
	int fd, id, i;

	fd = zram_open(len, &id);
	mm_setup(o);
	kid = fork();
	if (kid < 0)
		mm_die("fork");
	if (!kid)
		remap_loop(fd, o->duration, remaps);
	map_n(maps, o->nr, len, PROT_READ, fd);
	mm_count_pages(counts->pages, nr_writers);
	t0 = mm_now();
	for (i = 1; i < nr_writers; i++) {
		writers[i] = fork();
		if (writers[i] < 0)
			mm_die("fork");
		if (!writers[i]) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			write_loop(fd, maps, o->nr, len, counts, i);
			_exit(0);
		}
	}
	write_loop(fd, maps, o->nr, len, counts, 0);
	for (i = 1; i < nr_writers; i++)
		kill(writers[i], SIGTERM);
	kill(kid, SIGTERM);
	for (i = 1; i < nr_writers; i++)
		waitpid(writers[i], NULL, 0);
	waitpid(kid, NULL, 0);
	mm_report("imap", mm_now() - t0, counts->ops,
		  counts->ops * nr_writers * o->nr * len);
	mm_report_pages(t0);
	printf("n=%d\nwriters=%d\nremaps=%llu\nregion_mib=%zu\n", o->nr,
	       nr_writers, (unsigned long long)*remaps, o->size_mib);
	for (i = 0; i < o->nr; i++)
		munmap(maps[i], len);
	close(fd);
	zram_remove(id);
}

int main(int argc, char **argv)
{
	struct mm_opts o = { .own_opt = own_opt };
	volatile uint64_t *remaps;
	char **maps;
	pid_t kid;
	size_t len;
	double t0;
	int fd;

	mm_parse(argc, argv, &o, "n:f:w:z:");
	if (!o.nr)
		o.nr = 64;
	len = o.size_mib << 20;
	remaps = mmap(NULL, sizeof(*remaps), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (remaps == MAP_FAILED)
		mm_die("mmap counter");
	maps = calloc(o.nr, sizeof(*maps));
	if (!maps)
		mm_die("calloc");
	if (nr_writers) {
		run_writers(&o, maps, len, remaps);
		return 0;
	}
	fd = mm_tmpfile(o.dir, "imap", len);
	mm_setup(&o);
	/* Forked before the N mappings exist, so it has none of them. */
	kid = fork();
	if (kid < 0)
		mm_die("fork");
	if (!kid)
		remap_loop(fd, o.duration, remaps);
	map_n(maps, o.nr, len, PROT_READ | PROT_WRITE, fd);
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
