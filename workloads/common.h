/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMLAT_COMMON_H
#define MMLAT_COMMON_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct mm_opts {
	double duration;	/* seconds */
	size_t size_mib;
	int nr;			/* threads, processes or mappings */
	const char *dir;
	/*
	 * A driver's own options: mm_parse() hands it every option of its
	 * extra string that it does not know itself, with the argument.
	 */
	void (*own_opt)(const char *prog, int opt, const char *arg);
};

extern volatile sig_atomic_t mm_stop;

void mm_parse(int argc, char **argv, struct mm_opts *o, const char *extra);
/* A positive decimal number, or exits with a message naming prog. */
long mm_parse_num(const char *prog, const char *s);
void mm_setup(const struct mm_opts *o);
double mm_now(void);
void mm_die(const char *what) __attribute__((noreturn));
/* Exits with "error: " and the message, for failures without an errno. */
void mm_fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void *mm_map_anon(size_t len);
/* Shared anonymous memory, zeroed and faulted in: counters across forks. */
void *mm_map_shared(size_t len);
/* An unlinked file of len bytes in dir; the caller maps and closes it. */
int mm_tmpfile(const char *dir, const char *tag, size_t len);
void mm_touch(char *p, size_t len);
void mm_report(const char *name, double secs, uint64_t ops, uint64_t bytes);

#endif
