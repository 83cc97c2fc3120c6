// SPDX-License-Identifier: GPL-2.0
/* Frames printed through System.map, as the guest's sprint_symbol(). */
#include "frames.h"
#include "stack.h"
#include "symbols.h"

void print_frame(FILE *f, u64 ip)
{
	char buf[320];

	if (ip == MW_IDLE_IP) {
		fputs("[idle]", f);
		return;
	}
	symbol_format(ip, buf, sizeof(buf));
	fputs(buf, f);
}

void print_frames(FILE *f, const u64 *stack, unsigned int depth)
{
	unsigned int i;

	for (i = 0; i < depth; i++) {
		if (i)
			fputc(',', f);
		print_frame(f, stack[i]);
	}
}
