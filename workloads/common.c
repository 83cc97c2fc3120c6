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

static void on_signal(int sig)
{
	(void)sig;
	mm_stop = 1;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-d SECONDS] [-s MIB] [-t|-p|-n N] [-f DIR]\n", prog);
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

void mm_parse(int argc, char **argv, struct mm_opts *o, const char *extra)
{
	char optstr[16] = "d:s:";
	int c;

	strncat(optstr, extra, sizeof(optstr) - strlen(optstr) - 1);
	o->duration = 10;
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
	if (optind != argc)
		usage(argv[0]);
}

/* Stop on SIGTERM/SIGINT and on the deadline, whichever comes first. */
void mm_setup(const struct mm_opts *o)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
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

void mm_report(const char *name, double secs, uint64_t ops, uint64_t bytes)
{
	printf("workload=%s\n", name);
	printf("duration_s=%.3f\n", secs);
	printf("ops=%llu\n", (unsigned long long)ops);
	printf("bytes=%llu\n", (unsigned long long)bytes);
	printf("ops_per_s=%.3f\n", secs > 0 ? ops / secs : 0.0);
}
