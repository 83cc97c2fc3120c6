/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest kernel's symbols, from the build's System.map: addresses by
 * name (the plugin hooks functions by name, so it follows a new kernel
 * version without a port) and names by address (frames printed as the
 * guest's sprint_symbol() prints them).
 */
#ifndef MMLAT_PLUGIN_SYMBOLS_H
#define MMLAT_PLUGIN_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include "types.h"

/* Load System.map; false with a message on stderr. */
bool symbols_load(const char *path);

/*
 * The text range [start, end) of a function, the first of that name; end
 * is the next text symbol, as kallsyms sizes it.  False when absent.
 */
bool symbol_range(const char *name, u64 *start, u64 *end);

/* The address of any symbol (text, data or per-CPU), 0 when absent. */
u64 symbol_addr(const char *name);

/* Every text symbol of that name (static functions repeat): count. */
size_t symbol_ranges(const char *name, u64 *start, u64 *end,
		     size_t max);

/*
 * addr as "func+0x1a/0x40", or as "0xffffffffa0001234" outside the
 * kernel's text (a module's code, which System.map does not know).
 */
void symbol_format(u64 addr, char *buf, size_t len);

#endif
