/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event log: single windows of at least log_us, and the marks that
 * start and stop recording, one a line with their vCPU instruction count,
 * so that single windows can be matched to what the guest did (the
 * calibration module's injected windows).  Format: plugin/README.md.
 */
#ifndef MMLAT_PLUGIN_EVENTS_H
#define MMLAT_PLUGIN_EVENTS_H

#include "types.h"
#include <stdio.h>

/* Start the log in f (NULL: no log). */
void events_init(FILE *f, u64 log_ns);

void events_window(unsigned int cpu, const char *kind, u64 begin,
		   u64 len_ns, u8 lock, const u64 *stack,
		   unsigned int depth);

void events_mark(unsigned int cpu, const char *what, u64 insns);

void events_close(void);

#endif
