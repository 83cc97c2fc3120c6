// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim driver (reverse-map walks under reclaim): a working set of -s MiB
 * (the runner's 16), half anonymous memory and half a tmpfs file, runs in a
 * memory cgroup whose memory.max is half the working set, on a system with
 * swap (the guest runner's zram), and is touched over and over, so that
 * reclaim keeps swapping its pages out and faults keep bringing them back.
 *
 * The anonymous half is written by the task in the cgroup, the leader,
 * which then forks K readers (-k, default 4) that keep reading it.  Nobody
 * writes it after the fork, so every page stays shared by K + 1 mappings
 * in the leader's anon_vma tree, and folio_referenced() and try_to_unmap()
 * walk K + 1 vmas under the anon_vma lock for each of its pages.  The file
 * half is mapped N times (-n, default 16) by the leader after the fork, as
 * imap does, and read through every mapping, so that rmap_walk_file() walks
 * N vmas under the i_mmap lock for each of its pages.
 *
 * memory.max drives reclaim, not memory.reclaim: a fault charged beyond the
 * limit reclaims right away in the faulting task, so the rmap walks follow
 * the touching at whatever rate it runs, and nothing needs pacing;
 * memory.reclaim reclaims only when written to, in bursts whose size and
 * spacing would be one more parameter.  Half the working set leaves room
 * for the page tables, which the limit counts too, and still makes every
 * pass refault about half of the pages.
 *
 * The driver itself stays outside the cgroup: it checks that -g DIR
 * (default /sys/fs/cgroup) is a cgroup v2 directory whose children get the
 * memory controller and that swap is on, creates the cgroup in DIR, forks
 * the leader, which moves itself into it before it forks the readers, and
 * once the leader has stopped and reaped its readers and exited, reads the
 * cgroup's counters and removes it.  ops are complete touch passes: the
 * leader's (both halves, the file through each of its mappings) and the
 * readers' (the anonymous half).  pgscan, pgsteal, workingset_refault_*
 * and oom_kill are the cgroup's (memory.stat, memory.events); pswpin and
 * pswpout the whole system's over the run (/proc/vmstat), printed only
 * when the kernel counts them (CONFIG_VM_EVENT_COUNTERS).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include "common.h"

#define MAX_READERS	64
/* memory.stat and /proc/vmstat of 6.1 take about 1.5 and 5 KiB */
#define STAT_SIZE	16384

struct counters {
	uint64_t leader_passes;
	uint64_t reader_passes[MAX_READERS];
};

static int nr_readers = 4;
static const char *cgroup_parent = "/sys/fs/cgroup";

static void own_opt(const char *prog, int opt, const char *arg)
{
	switch (opt) {
	case 'k':
		nr_readers = mm_parse_num(prog, arg);
		if (nr_readers > MAX_READERS)
			mm_fail("-k %d: at most %d readers", nr_readers,
				MAX_READERS);
		break;
	case 'g':
		cgroup_parent = arg;
		break;
	}
}

/* The whole of a small file into buf, NUL-terminated; -1 and errno if not. */
static ssize_t read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return -1;
		}
		if (!n)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return len;
}

static void read_stat(const char *path, char *buf)
{
	if (read_text(path, buf, STAT_SIZE) < 0)
		mm_die(path);
}

/* dir/file into path, of PATH_MAX bytes. */
static void path_in(char *path, const char *dir, const char *file)
{
	if (snprintf(path, PATH_MAX, "%s/%s", dir, file) >= PATH_MAX)
		mm_fail("path too long: %s/%s", dir, file);
}

static void read_cgroup_stat(const char *dir, const char *file, char *buf)
{
	char path[PATH_MAX];

	path_in(path, dir, file);
	read_stat(path, buf);
}

/* A file of the cgroup dir, written at once as cgroup files want it. */
static int write_cgroup(const char *dir, const char *file, const char *fmt,
			...)
{
	char path[PATH_MAX], val[64];
	va_list ap;
	int fd, len, ret = 0;

	path_in(path, dir, file);
	va_start(ap, fmt);
	len = vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	if (write(fd, val, len) != len)
		ret = -1;
	close(fd);
	return ret;
}

/* The value of the line "key value" of memory.stat or /proc/vmstat. */
static bool stat_find(const char *text, const char *key,
		      unsigned long long *val)
{
	size_t len = strlen(key);
	const char *line;

	for (line = text; line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (!strncmp(line, key, len) && line[len] == ' ') {
			*val = strtoull(line + len + 1, NULL, 10);
			return true;
		}
	}
	return false;
}

static unsigned long long stat_value(const char *text, const char *path,
				     const char *key)
{
	unsigned long long val;

	if (!stat_find(text, key, &val))
		mm_fail("no %s in %s", key, path);
	return val;
}

/* /proc/vmstat counts events only with CONFIG_VM_EVENT_COUNTERS. */
static void print_vmstat_delta(const char *before, const char *after,
			       const char *key)
{
	unsigned long long v0, v1;

	if (stat_find(before, key, &v0) && stat_find(after, key, &v1))
		printf("%s=%llu\n", key, v1 - v0);
}

static bool has_word(const char *text, const char *word)
{
	size_t len = strlen(word);
	const char *p;

	for (p = strstr(text, word); p; p = strstr(p + 1, word))
		if ((p == text || p[-1] == ' ') &&
		    (!p[len] || p[len] == ' ' || p[len] == '\n'))
			return true;
	return false;
}

static void check_cgroup_parent(const char *dir)
{
	char path[PATH_MAX], controllers[256];
	struct statfs fs;

	if (statfs(dir, &fs))
		mm_fail("cgroup parent %s: %s (it must be a cgroup v2 directory; the guest runner mounts cgroup2 at /sys/fs/cgroup)",
			dir, strerror(errno));
	if (fs.f_type != CGROUP2_SUPER_MAGIC)
		mm_fail("cgroup parent %s is not a cgroup v2 directory (the guest runner mounts cgroup2 at /sys/fs/cgroup)",
			dir);
	path_in(path, dir, "cgroup.subtree_control");
	if (read_text(path, controllers, sizeof(controllers)) < 0)
		mm_die(path);
	if (!has_word(controllers, "memory"))
		mm_fail("the memory controller is not enabled for the children of %s (echo +memory > %s)",
			dir, path);
}

/* Without swap, reclaim would not touch the anonymous half at all. */
static void check_swap(void)
{
	char swaps[4096];

	if (read_text("/proc/swaps", swaps, sizeof(swaps)) < 0)
		mm_die("/proc/swaps (is the kernel built with CONFIG_SWAP?)");
	/* a header line, then one line per active swap area */
	if (!strchr(swaps, '\n') || !strchr(swaps, '\n')[1])
		mm_fail("no swap is active (/proc/swaps): the guest runner sets up zram swap for this workload");
}

/* Read one byte of every page; false if told to stop before the end. */
static bool read_pages(const char *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char sink;
	size_t off;

	for (off = 0; off < len; off += pg) {
		if (mm_stop)
			return false;
		sink = ((const volatile char *)p)[off];
	}
	(void)sink;
	return true;
}

static void reader_loop(const char *anon, size_t len, uint64_t *passes)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	while (read_pages(anon, len))
		(*passes)++;
	_exit(0);
}

/*
 * One pass of the leader: each page of the file through all N mappings
 * before the next page, then the anonymous half.  Page by page, a page is
 * in all its mappings as soon as it is back, so reclaim finds it there;
 * mapping by mapping, the 8 MiB file of the default working set, as large
 * as the whole limit, was reclaimed from the first mappings before the
 * last had it.  The file comes first: behind the anonymous half, which K
 * readers keep refaulting, the leader did not reach it in a 3 s cell.
 */
static bool leader_pass(const char *anon, size_t anon_len, char **maps, int n,
			size_t file_len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char sink;
	size_t off;
	int i;

	for (off = 0; off < file_len; off += pg) {
		if (mm_stop)
			return false;
		for (i = 0; i < n; i++)
			sink = ((const volatile char *)maps[i])[off];
	}
	(void)sink;
	return read_pages(anon, anon_len);
}

/*
 * The task in the cgroup: it faults the working set, forks the readers,
 * maps the file, and touches everything until the deadline (its own
 * alarm: a fork does not inherit one) or until told to stop.
 */
static void run_leader(const char *cgroup, const struct mm_opts *o,
		       size_t anon_len, size_t file_len, struct counters *c)
{
	pid_t readers[MAX_READERS];
	int fd, i, st, failed = 0;
	char **maps;
	char *anon;

	alarm((unsigned int)o->duration);
	if (write_cgroup(cgroup, "cgroup.procs", "%d", getpid()))
		mm_die("joining the cgroup");
	anon = mm_map_anon(anon_len);
	mm_touch(anon, anon_len);
	for (i = 0; i < nr_readers; i++) {
		readers[i] = fork();
		if (readers[i] < 0)
			mm_die("fork");
		if (!readers[i])
			reader_loop(anon, anon_len, &c->reader_passes[i]);
	}
	/* After the fork: the readers map the anonymous half only. */
	fd = mm_tmpfile(o->dir, "reclaim", file_len);
	maps = calloc(o->nr, sizeof(*maps));
	if (!maps)
		mm_die("calloc");
	for (i = 0; i < o->nr; i++) {
		maps[i] = mmap(NULL, file_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		if (maps[i] == MAP_FAILED)
			mm_die("mmap");
	}
	mm_touch(maps[0], file_len);
	while (leader_pass(anon, anon_len, maps, o->nr, file_len))
		c->leader_passes++;
	for (i = 0; i < nr_readers; i++)
		kill(readers[i], SIGTERM);
	for (i = 0; i < nr_readers; i++) {
		while (waitpid(readers[i], &st, 0) < 0)
			if (errno != EINTR)
				mm_die("waitpid (reader)");
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "error: reader %d failed (status %#x)\n",
				i, st);
			failed = 1;
		}
	}
	_exit(failed);
}

/*
 * Readers orphaned by a leader that was killed leave on their own
 * (PR_SET_PDEATHSIG), perhaps just after the leader has been reaped.
 */
static void remove_cgroup(const char *path)
{
	int tries;

	for (tries = 0; rmdir(path); tries++) {
		if (errno != EBUSY || tries == 100)
			mm_die(path);
		usleep(20000);
	}
}

int main(int argc, char **argv)
{
	static char vmstat0[STAT_SIZE], vmstat1[STAT_SIZE];
	static char memstat[STAT_SIZE], events[STAT_SIZE];
	struct mm_opts o = { .own_opt = own_opt };
	char cgroup[PATH_MAX], name[32];
	size_t anon_len, file_len, limit;
	uint64_t reader_passes = 0, ops;
	struct counters *c;
	pid_t leader;
	double t0, secs;
	int i, st;

	mm_parse(argc, argv, &o, "k:n:g:f:");
	if (!o.nr)
		o.nr = 16;
	if (o.size_mib < 2)
		mm_fail("-s %zu: the working set is at least 2 MiB, half anonymous and half file",
			o.size_mib);
	check_cgroup_parent(cgroup_parent);
	check_swap();
	anon_len = o.size_mib / 2 << 20;
	file_len = (o.size_mib << 20) - anon_len;
	limit = (o.size_mib << 20) / 2;
	c = mm_map_shared(sizeof(*c));
	snprintf(name, sizeof(name), "mmlat-reclaim.%d", getpid());
	path_in(cgroup, cgroup_parent, name);
	if (mkdir(cgroup, 0755))
		mm_die(cgroup);
	if (write_cgroup(cgroup, "memory.max", "%zu", limit)) {
		fprintf(stderr, "error: %s/memory.max: %s\n", cgroup,
			strerror(errno));
		rmdir(cgroup);
		return 1;
	}
	read_stat("/proc/vmstat", vmstat0);
	mm_setup(&o);
	t0 = mm_now();
	leader = fork();
	if (leader < 0)
		mm_die("fork");
	if (!leader)
		run_leader(cgroup, &o, anon_len, file_len, c);
	while (waitpid(leader, &st, 0) < 0) {
		if (errno != EINTR)
			mm_die("waitpid");
		kill(leader, SIGTERM);
	}
	secs = mm_now() - t0;
	read_stat("/proc/vmstat", vmstat1);
	read_cgroup_stat(cgroup, "memory.stat", memstat);
	read_cgroup_stat(cgroup, "memory.events", events);
	remove_cgroup(cgroup);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		mm_fail("the leader failed (status %#x; the cgroup's oom_kill count: %llu)",
			st, stat_value(events, "memory.events", "oom_kill"));
	for (i = 0; i < nr_readers; i++)
		reader_passes += c->reader_passes[i];
	ops = c->leader_passes + reader_passes;
	mm_report("reclaim", secs, ops,
		  c->leader_passes * (anon_len + o.nr * file_len) +
		  reader_passes * anon_len);
	printf("k=%d\nn=%d\nregion_mib=%zu\nmemory_max=%zu\n", nr_readers,
	       o.nr, o.size_mib, limit);
	printf("leader_passes=%llu\nreader_passes=%llu\n",
	       (unsigned long long)c->leader_passes,
	       (unsigned long long)reader_passes);
	printf("pgscan=%llu\npgsteal=%llu\n",
	       stat_value(memstat, "memory.stat", "pgscan"),
	       stat_value(memstat, "memory.stat", "pgsteal"));
	printf("workingset_refault_anon=%llu\nworkingset_refault_file=%llu\n",
	       stat_value(memstat, "memory.stat", "workingset_refault_anon"),
	       stat_value(memstat, "memory.stat", "workingset_refault_file"));
	printf("oom_kill=%llu\n",
	       stat_value(events, "memory.events", "oom_kill"));
	print_vmstat_delta(vmstat0, vmstat1, "pswpin");
	print_vmstat_delta(vmstat0, vmstat1, "pswpout");
	return 0;
}
