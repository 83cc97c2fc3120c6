/* SPDX-License-Identifier: GPL-2.0 */
/* Frames and stacks printed as the guest module prints them. */
#ifndef MMLAT_PLUGIN_FRAMES_H
#define MMLAT_PLUGIN_FRAMES_H

#include "types.h"
#include <stdio.h>

/* One frame: "func+0x1a/0x200", "[idle]" for MW_IDLE_IP. */
void print_frame(FILE *f, u64 ip);

/* Frames joined by commas. */
void print_frames(FILE *f, const u64 *stack, unsigned int depth);

#endif
