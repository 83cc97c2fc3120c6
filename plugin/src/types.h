/* SPDX-License-Identifier: GPL-2.0 */
/* The kernel's fixed-size types, for kernel-style code outside it. */
#ifndef MMLAT_PLUGIN_TYPES_H
#define MMLAT_PLUGIN_TYPES_H

#include <stdbool.h>
#include <stddef.h>

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int s32;
typedef long long s64;

#define U64_MAX		(~0ULL)

#endif
