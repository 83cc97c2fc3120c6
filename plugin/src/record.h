/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every recorder shares: per-vCPU time, and whether the measured
 * interval is running.
 *
 * Time is each vCPU's own count of executed guest instructions (an inline
 * add before every instruction, so an instruction cut short by an
 * exception or an I/O recompile counts as QEMU's icount counts it).  Under
 * -icount shift=S a guest instruction is 2^S ns of virtual time: lengths
 * are printed in those ns, not the host's.
 *
 * Recording follows the guest module's start/stop: hooks do nothing while
 * it is off, and record_gen tells windows begun in an earlier interval.
 */
#ifndef MMLAT_PLUGIN_RECORD_H
#define MMLAT_PLUGIN_RECORD_H

#include <stdbool.h>
#include "types.h"

extern bool recording;
extern u64 record_gen;
extern unsigned int icount_shift;

/* The vCPU's executed instructions so far, the hooked one included. */
u64 vcpu_insns(unsigned int cpu);

static inline u64 insns_to_ns(u64 insns)
{
	return insns << icount_shift;
}

#endif
