/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The plugin's record in the guest module's dump formats, "mmlat_windows
 * 3" and "mmlat_locks 3" (guest/modules/mmlat_windows/README.md), which
 * analysis/mmlat/parse.py reads (parse_windows, parse_locks).  The param
 * lines say clock=icount: lengths are guest instructions times 2^shift ns.
 */
#ifndef MMLAT_PLUGIN_DUMP_H
#define MMLAT_PLUGIN_DUMP_H

#include <stdbool.h>
#include <stdio.h>

void dump_windows(FILE *f, bool running);
void dump_locks(FILE *f, bool running);

#endif
