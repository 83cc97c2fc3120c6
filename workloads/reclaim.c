// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim driver (reverse-map walks under reclaim): anonymous memory of
 * half of -s MiB (the runner's 16) and a tmpfs file of -F MiB (default 1)
 * run in a memory cgroup whose memory.max is as large as the anonymous
 * memory alone, on a system with swap (the guest runner's zram), so that
 * reclaim keeps swapping pages of both out and faults keep bringing them
 * back.  tmpfs pages are swap-backed: they share the anonymous LRU lists
 * with the anonymous pages and count as anonymous in memory.stat
 * (workingset_refault_anon), but their reverse map is the file's.
 *
 * The anonymous memory is written by the task in the cgroup, the leader,
 * which then forks K readers (-k, default 4) that keep reading it.  Nobody
 * writes it after the fork, so its pages stay shared, and
 * folio_referenced() and try_to_unmap() walk the K + 1 vmas of the
 * leader's anon_vma tree under the anon_vma lock for each of them.
 *
 * Before all that, the leader maps the file N times (-n, default 16), as
 * imap does, but not into the readers (MADV_DONTFORK), and reads every
 * page through every mapping, so that writing the anonymous memory pushes
 * the file's pages to reclaim at once.  From then on it touches the anonymous
 * memory no more: it watches the file with mincore() and reads each page
 * that reclaim took back in, through the first mapping and then through
 * all N mappings, page by page (in memory first, the pages come back into
 * a mapping 16 at a time, by fault-around).  So every resident page of
 * the file is mapped N times, and rmap_walk_file() walks N vmas under the
 * i_mmap lock for it (a walk stops early only once it has found every
 * mapping): in folio_referenced() when the page is scanned on the
 * inactive and on the active list, in try_to_unmap() when it is
 * reclaimed.  The leader leaves the pages alone in between, so that they
 * turn cold and are reclaimed in their turn.
 *
 * An earlier leader read the whole file through its N mappings, and the
 * anonymous memory, each pass, among the readers: a page reclaim took
 * costs N faults to bring back, and behind the readers' refaults that
 * leader did not finish one pass of the then 8 MiB file in a 3 s cell, so
 * the file's pages were walked only in the one mapping that had faulted
 * them in.  The file is small for the same reason, and because the N
 * mappings' page tables count against memory.max too: the driver refuses
 * n and F whose page tables could exceed half of it.
 *
 * memory.max drives reclaim, not memory.reclaim: a fault charged beyond the
 * limit reclaims right away in the faulting task, so the rmap walks follow
 * the touching at whatever rate it runs, and nothing needs pacing;
 * memory.reclaim reclaims only when written to, in bursts whose size and
 * spacing would be one more parameter.  Nor memory.high: it reclaims only
 * when a charge crosses it, so a cgroup whose working set once got in
 * above it stays there without reclaim.  The leader, when a look at the
 * file finds every page in memory, sleeps a millisecond before the next
 * (a bound on how long a reclaimed page stays out, not a rate).
 *
 * Every page here is touched through several mappings (the readers', the
 * file's N), so a page that two of them touched before it was scanned on
 * the inactive list is activated, and the cgroup's few thousand pages can all
 * turn active within some tens of milliseconds.  Reclaim then has only
 * the active list to work on, and it ages that list (shrink_active_list())
 * only when the cgroup's statistics say the inactive list is short
 * (inactive_is_low()).  6.1 flushes those statistics in reclaim itself;
 * 6.12 and 7.3 flush them there only when the kernel's flusher, every 2 s,
 * is late (mem_cgroup_flush_stats_ratelimited()), so for up to 2 s their
 * reclaim goes by the counts of before the turn, scans nothing, and after
 * its retries the charge OOM-kills the leader.  Hence the driver reads the
 * cgroup's memory.stat every STAT_REFRESH_US while the leader runs: the
 * read flushes the statistics on every version, so reclaim goes by
 * current counts on 6.12 and 7.3 as it does on 6.1.  stat_refreshes and
 * stat_refresh_s say how often that ran and how long it took, on the one
 * vCPU the workload runs on.
 *
 * The driver itself stays outside the cgroup: it checks that -g DIR
 * (default /sys/fs/cgroup) is a cgroup v2 directory whose children get the
 * memory controller and that swap is on, creates the cgroup in DIR, forks
 * the leader, which moves itself into it before it forks the readers, and
 * once the leader has stopped and reaped its readers and exited, reads the
 * cgroup's counters and removes it.  ops are complete passes of the
 * readers over the anonymous memory plus the leader's file passes, each a
 * look at the file that found pages reclaim had taken and read them back
 * in through all N mappings; file_pages_back counts those pages, and
 * file_majflt and file_minflt are the leader's own faults (getrusage())
 * over the same time, after the file's first population, which took
 * file_fill_s seconds.  bytes is what the readers and the leader read.
 * pgscan, pgsteal, pgrefill (pages scanned on the active list),
 * pgactivate, pgdeactivate, workingset_refault_* and oom_kill are the
 * cgroup's (memory.stat, memory.events); pswpin and pswpout the whole
 * system's over the run (/proc/vmstat), printed only when the kernel
 * counts them (CONFIG_VM_EVENT_COUNTERS).
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
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include "common.h"

#define MAX_READERS	64
/* memory.stat and /proc/vmstat of 6.1 take about 1.5 and 5 KiB */
#define STAT_SIZE	16384

struct counters {
	uint64_t leader_passes;
	uint64_t file_pages_back;	/* read back in through all N maps */
	uint64_t leader_bytes;
	uint64_t leader_majflt, leader_minflt;
	double fill_s;			/* the file's first population */
	uint64_t reader_passes[MAX_READERS];
	/*
	 * Pages read, counted as read: [0] the leader's, a page through one
	 * mapping each, after the file's first population; [1 + i] reader
	 * i's.  The driver's fine-grained work (pages=).
	 */
	uint64_t pages[1 + MAX_READERS];
};

static int nr_readers = 4;
static size_t file_mib = 1;
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
	case 'F':
		file_mib = mm_parse_num(prog, arg);
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

/*
 * Read one byte of every page, adding one to *count per page; false if
 * told to stop before the end.
 */
static bool read_pages(const char *p, size_t len, volatile uint64_t *count)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	volatile char sink;
	size_t off;

	for (off = 0; off < len; off += pg) {
		if (mm_stop)
			return false;
		sink = ((const volatile char *)p)[off];
		(*count)++;
	}
	(void)sink;
	return true;
}

static void reader_loop(const char *anon, size_t len, uint64_t *passes,
			volatile uint64_t *pages)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	while (read_pages(anon, len, pages))
		(*passes)++;
	_exit(0);
}

/* Read the page at off through all n mappings, in mapping order. */
static void read_page_everywhere(char **maps, int n, size_t off,
				 volatile uint64_t *count)
{
	volatile char sink;
	int i;

	for (i = 0; i < n; i++) {
		sink = ((const volatile char *)maps[i])[off];
		(*count)++;
	}
	(void)sink;
}

/*
 * Read back in the pages of the file that vec marks as not in memory:
 * first each page itself, through the first mapping, then each page
 * through all N mappings, page by page, so that it is in all its mappings
 * as soon as it can be.  Once the pages are in memory, one fault of a
 * mapping maps its neighbours there too (fault-around), where one fault
 * per page and mapping would map a page that is still out only.
 */
static size_t bring_back(char **maps, int n, size_t file_len,
			 const unsigned char *vec, struct counters *c)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t i, back = 0;
	volatile char sink;

	for (i = 0; i < file_len / pg; i++) {
		if (mm_stop)
			return 0;
		if (!(vec[i] & 1))
			sink = ((const volatile char *)maps[0])[i * pg];
	}
	(void)sink;
	for (i = 0; i < file_len / pg; i++) {
		if (vec[i] & 1)
			continue;
		if (mm_stop)
			break;
		read_page_everywhere(maps, n, i * pg, &c->pages[0]);
		back++;
	}
	c->file_pages_back += back;
	c->leader_bytes += (uint64_t)back * n * pg;
	return back;
}

/*
 * One look at the file: the pages that are not in memory (mincore() of
 * the first mapping), which reclaim has unmapped from all N mappings and
 * swapped out, are read back in through all of them.  Returns the number
 * of such pages; the caller sleeps when there were none.
 */
static size_t leader_pass(char **maps, int n, size_t file_len,
			  unsigned char *vec, struct counters *c)
{
	if (mincore(maps[0], file_len, vec))
		mm_die("mincore");
	return bring_back(maps, n, file_len, vec, c);
}

/*
 * The task in the cgroup: it maps the file N times and faults it in,
 * faults the anonymous memory in, forks the readers, and keeps the file's
 * pages in all N mappings until the deadline (its own alarm: a fork does
 * not inherit one) or until told to stop.
 */
static void run_leader(const char *cgroup, const struct mm_opts *o,
		       size_t anon_len, size_t file_len, struct counters *c)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	pid_t readers[MAX_READERS];
	int fd, i, st, failed = 0;
	struct rusage ru0, ru;
	double t0;
	unsigned char *vec;
	char **maps;
	char *anon;

	alarm((unsigned int)o->duration);
	if (write_cgroup(cgroup, "cgroup.procs", "%d", getpid()))
		mm_die("joining the cgroup");
	/*
	 * The file first: among the readers the leader would have a fifth
	 * of the CPU for its N-fold population (at n=256 more than a 3 s
	 * cell), and written after it, the anonymous memory pushes the
	 * file's pages to reclaim at once.  Not inherited by the readers,
	 * so that they map the anonymous memory only.
	 */
	t0 = mm_now();
	fd = mm_tmpfile(o->dir, "reclaim", file_len);
	maps = calloc(o->nr, sizeof(*maps));
	vec = malloc(file_len / pg);
	if (!maps || !vec)
		mm_die("malloc");
	for (i = 0; i < o->nr; i++) {
		maps[i] = mmap(NULL, file_len, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		if (maps[i] == MAP_FAILED)
			mm_die("mmap");
		if (madvise(maps[i], file_len, MADV_DONTFORK))
			mm_die("madvise");
	}
	/* The whole file in, as if reclaim had taken every page. */
	memset(vec, 0, file_len / pg);
	bring_back(maps, o->nr, file_len, vec, c);
	c->fill_s = mm_now() - t0;
	anon = mm_map_anon(anon_len);
	mm_touch(anon, anon_len);
	for (i = 0; i < nr_readers; i++) {
		readers[i] = fork();
		if (readers[i] < 0)
			mm_die("fork");
		if (!readers[i])
			reader_loop(anon, anon_len, &c->reader_passes[i],
				    &c->pages[1 + i]);
	}
	c->file_pages_back = 0;
	c->pages[0] = 0;
	getrusage(RUSAGE_SELF, &ru0);
	while (!mm_stop) {
		if (leader_pass(maps, o->nr, file_len, vec, c))
			c->leader_passes++;
		else
			usleep(1000);
	}
	getrusage(RUSAGE_SELF, &ru);
	c->leader_majflt = ru.ru_majflt - ru0.ru_majflt;
	c->leader_minflt = ru.ru_minflt - ru0.ru_minflt;
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
 * How often the driver reads the cgroup's memory.stat while the leader
 * runs (see the top of the file): on 6.12 and 7.3 no boot of the k and n
 * sweeps was OOM-killed at 2.5 times this period.
 */
#define STAT_REFRESH_US	20000

/* The reads of memory.stat while the leader ran, and their time. */
struct stat_refresh {
	int fd;
	uint64_t count;
	double secs;
};

/*
 * Read the cgroup's memory.stat to the end and drop what it says: the
 * read flushes the cgroup's statistics, which is all it is for.
 */
static void refresh_stat(struct stat_refresh *r)
{
	static char buf[STAT_SIZE];
	double t0 = mm_now();
	off_t off = 0;
	ssize_t n;

	while ((n = pread(r->fd, buf, sizeof(buf), off)) > 0)
		off += n;
	if (n < 0 && errno != EINTR)
		mm_die("memory.stat");
	r->count++;
	r->secs += mm_now() - t0;
}

/*
 * The leader's wait status, once it has exited; until then the cgroup's
 * statistics are refreshed every STAT_REFRESH_US, and a stop is passed on.
 */
static int wait_leader(pid_t leader, struct stat_refresh *r)
{
	const struct timespec period = {
		.tv_sec = STAT_REFRESH_US / 1000000,
		.tv_nsec = STAT_REFRESH_US % 1000000 * 1000L,
	};
	bool stop_sent = false;
	pid_t pid;
	int st;

	for (;;) {
		pid = waitpid(leader, &st, WNOHANG);
		if (pid == leader)
			return st;
		if (pid < 0 && errno != EINTR)
			mm_die("waitpid");
		if (mm_stop && !stop_sent) {
			kill(leader, SIGTERM);
			stop_sent = true;
		}
		refresh_stat(r);
		nanosleep(&period, NULL);
	}
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
	char cgroup[PATH_MAX], path[PATH_MAX], name[32];
	size_t anon_len, file_len, limit;
	uint64_t reader_passes = 0, ops;
	size_t pt_max;
	struct counters *c;
	pid_t leader;
	double t0, secs;
	struct stat_refresh refresh = { 0 };
	int i, st;

	mm_parse(argc, argv, &o, "k:n:g:f:F:");
	if (!o.nr)
		o.nr = 16;
	if (o.size_mib < 2)
		mm_fail("-s %zu: at least 2 MiB, half of it anonymous memory and memory.max",
			o.size_mib);
	anon_len = o.size_mib / 2 << 20;
	file_len = file_mib << 20;
	limit = anon_len;
	/* PTE pages of one mapping of F MiB, at any alignment: F/2 + 1 */
	pt_max = (size_t)o.nr * ((file_mib + 1) / 2 + 1) *
		 (size_t)sysconf(_SC_PAGESIZE);
	if (pt_max > limit / 2)
		mm_fail("-n %d -F %zu -s %zu: the page tables of %d mappings of %zu MiB (up to %zu KiB) would take more than half of memory.max (%zu KiB)",
			o.nr, file_mib, o.size_mib, o.nr, file_mib,
			pt_max >> 10, limit >> 10);
	check_cgroup_parent(cgroup_parent);
	check_swap();
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
	path_in(path, cgroup, "memory.stat");
	refresh.fd = open(path, O_RDONLY);
	if (refresh.fd < 0)
		mm_die(path);
	read_stat("/proc/vmstat", vmstat0);
	mm_count_pages(c->pages, 1 + nr_readers);
	mm_setup(&o);
	t0 = mm_now();
	leader = fork();
	if (leader < 0)
		mm_die("fork");
	if (!leader)
		run_leader(cgroup, &o, anon_len, file_len, c);
	st = wait_leader(leader, &refresh);
	secs = mm_now() - t0;
	read_stat("/proc/vmstat", vmstat1);
	close(refresh.fd);
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
		  c->leader_bytes + reader_passes * anon_len);
	mm_report_pages(t0);
	printf("k=%d\nn=%d\nregion_mib=%zu\nanon_mib=%zu\nfile_mib=%zu\nmemory_max=%zu\n",
	       nr_readers, o.nr, o.size_mib, anon_len >> 20, file_mib, limit);
	printf("leader_passes=%llu\nreader_passes=%llu\n",
	       (unsigned long long)c->leader_passes,
	       (unsigned long long)reader_passes);
	printf("file_fill_s=%.3f\n", c->fill_s);
	printf("file_pages_back=%llu\nfile_majflt=%llu\nfile_minflt=%llu\n",
	       (unsigned long long)c->file_pages_back,
	       (unsigned long long)c->leader_majflt,
	       (unsigned long long)c->leader_minflt);
	printf("pgscan=%llu\npgsteal=%llu\n",
	       stat_value(memstat, "memory.stat", "pgscan"),
	       stat_value(memstat, "memory.stat", "pgsteal"));
	printf("pgrefill=%llu\npgactivate=%llu\npgdeactivate=%llu\n",
	       stat_value(memstat, "memory.stat", "pgrefill"),
	       stat_value(memstat, "memory.stat", "pgactivate"),
	       stat_value(memstat, "memory.stat", "pgdeactivate"));
	printf("workingset_refault_anon=%llu\nworkingset_refault_file=%llu\n",
	       stat_value(memstat, "memory.stat", "workingset_refault_anon"),
	       stat_value(memstat, "memory.stat", "workingset_refault_file"));
	printf("stat_refreshes=%llu\nstat_refresh_s=%.3f\n",
	       (unsigned long long)refresh.count, refresh.secs);
	printf("oom_kill=%llu\n",
	       stat_value(events, "memory.events", "oom_kill"));
	print_vmstat_delta(vmstat0, vmstat1, "pswpin");
	print_vmstat_delta(vmstat0, vmstat1, "pswpout");
	return 0;
}
