// SPDX-License-Identifier: GPL-2.0
/*
 * System.map: one "ADDRESS TYPE NAME" a line.  Text symbols (t, T, w, W)
 * go into an address-sorted table for frames; every symbol into a name
 * table for lookups.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

struct text_sym {
	u64 addr;
	const char *name;
};

static struct text_sym *text;
static size_t nr_text;
/* name -> GArray of u64 addresses, in file order */
static GHashTable *by_name;
/*
 * The kernel's text and init text: a frame elsewhere is a module's (or
 * bogus), and the last symbol of each has no size but the section's end.
 */
static u64 text_start, text_end, init_start, init_end;

static int cmp_text(const void *a, const void *b)
{
	const struct text_sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool is_text_type(char t)
{
	return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

static void add_name(const char *name, u64 addr)
{
	GArray *a = g_hash_table_lookup(by_name, name);

	if (!a) {
		a = g_array_new(false, false, sizeof(u64));
		g_hash_table_insert(by_name, (gpointer)name, a);
	}
	g_array_append_val(a, addr);
}

bool symbols_load(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512], type, name[256];
	u64 addr;
	size_t cap = 0;

	if (!f) {
		fprintf(stderr, "mmlat plugin: cannot open System.map %s\n",
			path);
		return false;
	}
	by_name = g_hash_table_new(g_str_hash, g_str_equal);
	while (fgets(line, sizeof(line), f)) {
		char *copy;

		if (sscanf(line, "%llx %c %255s", &addr, &type,
			   name) != 3)
			continue;
		copy = g_strdup(name);
		add_name(copy, addr);
		if (!strcmp(name, "_stext"))
			text_start = addr;
		else if (!strcmp(name, "_etext"))
			text_end = addr;
		else if (!strcmp(name, "_sinittext"))
			init_start = addr;
		else if (!strcmp(name, "_einittext"))
			init_end = addr;
		if (!is_text_type(type))
			continue;
		if (nr_text == cap) {
			cap = cap ? 2 * cap : 65536;
			text = g_renew(struct text_sym, text, cap);
		}
		text[nr_text].addr = addr;
		text[nr_text].name = copy;
		nr_text++;
	}
	fclose(f);
	if (!nr_text) {
		fprintf(stderr, "mmlat plugin: no text symbols in %s\n", path);
		return false;
	}
	qsort(text, nr_text, sizeof(*text), cmp_text);
	if (!text_start || !text_end) {
		fprintf(stderr, "mmlat plugin: %s has no _stext/_etext\n", path);
		return false;
	}
	return true;
}

/*
 * Index of the text symbol at or below addr, or -1; of aliases at one
 * address, the last in sorted order.
 */
static long text_index(u64 addr)
{
	size_t lo = 0, hi = nr_text;

	if (!(addr >= text_start && addr < text_end) &&
	    !(addr >= init_start && addr < init_end))
		return -1;
	if (addr < text[0].addr)
		return -1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (text[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The first text symbol above text[i]'s address, or its section's end. */
static u64 text_next(size_t i)
{
	u64 addr = text[i].addr, end;

	end = addr >= init_start && addr < init_end ? init_end : text_end;
	while (i < nr_text && text[i].addr == addr)
		i++;
	return i < nr_text && text[i].addr < end ? text[i].addr : end;
}

size_t symbol_ranges(const char *name, u64 *start, u64 *end,
		     size_t max)
{
	GArray *a = by_name ? g_hash_table_lookup(by_name, name) : NULL;
	size_t i, n = 0;

	for (i = 0; a && i < a->len && n < max; i++) {
		u64 addr = g_array_index(a, u64, i);
		long t = text_index(addr);

		if (t < 0 || text[t].addr != addr)
			continue;	/* not text: a variable of that name */
		start[n] = addr;
		end[n] = text_next(t);
		n++;
	}
	return n;
}

bool symbol_range(const char *name, u64 *start, u64 *end)
{
	return symbol_ranges(name, start, end, 1) == 1;
}

u64 symbol_addr(const char *name)
{
	GArray *a = by_name ? g_hash_table_lookup(by_name, name) : NULL;

	return a && a->len ? g_array_index(a, u64, 0) : 0;
}

void symbol_format(u64 addr, char *buf, size_t len)
{
	long i = text_index(addr);

	if (i < 0) {
		snprintf(buf, len, "0x%llx", addr);
		return;
	}
	snprintf(buf, len, "%s+0x%llx/0x%llx", text[i].name,
		 addr - text[i].addr, text_next(i) - text[i].addr);
}
