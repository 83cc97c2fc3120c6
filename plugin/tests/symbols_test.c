// SPDX-License-Identifier: GPL-2.0
/*
 * Test driver for plugin/src/symbols.c (tests/unit/test_plugin.py):
 * symbols_test MAP ADDR... prints each address as the plugin prints a
 * frame, one a line; symbols_test MAP -r NAME prints NAME's text range.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbols.h"

int main(int argc, char **argv)
{
	char buf[320];
	u64 start, end;
	int i;

	if (argc < 3 || !symbols_load(argv[1]))
		return 2;
	if (!strcmp(argv[2], "-r")) {
		if (argc != 4 || !symbol_range(argv[3], &start, &end))
			return 1;
		printf("%llx %llx\n", start, end);
		return 0;
	}
	for (i = 2; i < argc; i++) {
		symbol_format(strtoull(argv[i], NULL, 16), buf, sizeof(buf));
		puts(buf);
	}
	return 0;
}
