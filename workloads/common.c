// SPDX-License-Identifier: GPL-2.0
/* Shared option parsing, stop handling, timing and output for the drivers. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "common.h"

volatile sig_atomic_t mm_stop;

static uint64_t rand_state;
static unsigned long seed;
static long start_delay_us;
static long pad_pages;
static void *pad_addr;

static volatile uint64_t *page_counters;
static int nr_page_counters;
static volatile uint64_t stop_pages;
static volatile double stop_s;

static uint64_t sum_pages(void)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < nr_page_counters; i++)
		sum += page_counters[i];
	return sum;
}

/* The first stop notes the time and the work done until then. */
static void on_signal(int sig)
{
	(void)sig;
	if (!mm_stop) {
		stop_pages = sum_pages();
		stop_s = mm_now();
	}
	mm_stop = 1;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s -d SECONDS [-s MIB] [-S SEED] [-t|-p|-n N] [-f DIR]\n",
		prog);
	exit(2);
}

long mm_parse_num(const char *prog, const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v <= 0) {
		fprintf(stderr, "%s: invalid number '%s'\n", prog, s);
		exit(2);
	}
	return v;
}

uint64_t mm_rand(void)
{
	uint64_t z = (rand_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * The seed's layout padding, mapped before anything else of the driver:
 * top-down mmap() places the driver's mappings below it.  Its length and
 * the start delay are drawn here, in this order, whatever the driver
 * draws later.
 */
static void seed_layout(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	rand_state = seed;
	if (!seed)
		return;
	pad_pages = 1 + (long)(mm_rand() % MM_LAYOUT_PAD_MAX);
	start_delay_us = (long)(mm_rand() % MM_START_JITTER_US);
	pad_addr = mmap(NULL, pad_pages * pg, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pad_addr == MAP_FAILED)
		mm_die("mmap (layout padding)");
}

void mm_parse(int argc, char **argv, struct mm_opts *o, const char *extra)
{
	char optstr[24] = "d:s:S:";
	char *end;
	int c;

	strncat(optstr, extra, sizeof(optstr) - strlen(optstr) - 1);
	/* no default: the runner always passes the run's DURATION */
	o->duration = 0;
	o->size_mib = 64;
	o->dir = "/dev/shm";
	while ((c = getopt(argc, argv, optstr)) != -1) {
		switch (c) {
		case 'd':
			o->duration = mm_parse_num(argv[0], optarg);
			break;
		case 's':
			o->size_mib = mm_parse_num(argv[0], optarg);
			break;
		case 'S':
			errno = 0;
			o->seed = strtoul(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-') {
				fprintf(stderr, "%s: invalid seed '%s'\n",
					argv[0], optarg);
				exit(2);
			}
			break;
		case 't':
		case 'p':
		case 'n':
			o->nr = mm_parse_num(argv[0], optarg);
			break;
		case 'f':
			o->dir = optarg;
			break;
		default:
			if (c == '?' || !o->own_opt)
				usage(argv[0]);
			o->own_opt(argv[0], c, optarg);
		}
	}
	if (optind != argc || !o->duration)
		usage(argv[0]);
	seed = o->seed;
	seed_layout();
}

/*
 * Stop on SIGTERM/SIGINT and on the deadline, whichever comes first, after
 * the seed's start delay.
 */
void mm_setup(const struct mm_opts *o)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec delay = {
		.tv_sec = start_delay_us / 1000000,
		.tv_nsec = start_delay_us % 1000000 * 1000,
	};

	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGALRM);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	if (start_delay_us)
		nanosleep(&delay, NULL);
	alarm((unsigned int)o->duration);
}

double mm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void mm_die(const char *what)
{
	fprintf(stderr, "error: %s: %s\n", what, strerror(errno));
	exit(1);
}

void mm_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *mm_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		mm_die("mmap");
	return p;
}

void *mm_map_shared(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		mm_die("mmap shared");
	memset(p, 0, len);
	return p;
}

int mm_tmpfile(const char *dir, const char *tag, size_t len)
{
	char *path;
	int fd;

	if (asprintf(&path, "%s/mmlat-%s.XXXXXX", dir, tag) < 0)
		mm_die("asprintf");
	fd = mkstemp(path);
	if (fd < 0)
		mm_die(path);
	unlink(path);
	free(path);
	if (ftruncate(fd, len))
		mm_die("ftruncate");
	return fd;
}

void mm_touch(char *p, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < len; i += pg)
		p[i] = 1;
}

void mm_touch_count(char *p, size_t len, volatile uint64_t *count)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t i;

	for (i = 0; i < len; i += pg) {
		p[i] = 1;
		/* children of one driver may share a counter */
		__atomic_fetch_add(count, 1, __ATOMIC_RELAXED);
	}
}

void mm_report(const char *name, double secs, uint64_t ops, uint64_t bytes)
{
	printf("workload=%s\n", name);
	printf("duration_s=%.3f\n", secs);
	printf("ops=%llu\n", (unsigned long long)ops);
	printf("bytes=%llu\n", (unsigned long long)bytes);
	printf("ops_per_s=%.3f\n", secs > 0 ? ops / secs : 0.0);
	printf("seed=%lu\nstart_delay_us=%ld\nlayout_pad_pages=%ld\nlayout_base=%#lx\n",
	       seed, start_delay_us, pad_pages, (unsigned long)pad_addr);
}

void mm_count_pages(volatile uint64_t *counters, int nr)
{
	page_counters = counters;
	nr_page_counters = nr;
}

double mm_stop_time(void)
{
	return mm_stop ? stop_s : mm_now();
}

void mm_report_pages(double t0)
{
	uint64_t pages = mm_stop ? stop_pages : sum_pages();
	double secs = mm_stop_time() - t0;

	printf("pages=%llu\n", (unsigned long long)pages);
	printf("pages_s=%.6f\n", secs);
	printf("pages_per_s=%.3f\n", secs > 0 ? pages / secs : 0.0);
}
