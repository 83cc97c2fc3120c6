// SPDX-License-Identifier: GPL-2.0
/*
 * The lock users: the functions whose lock calls count, as text ranges
 * looked up at load, sorted for mw_user_of().  They are the functions of
 * guest/classes.txt's rows with a lock (Kbuild generates lock_users.h from
 * the table and the kernel's System.map), and those the module parameter
 * sites names; names missing in the running kernel (inlined) are counted
 * and skipped.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kallsyms.h>
#include <linux/kprobes.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "mmlat_windows.h"
#include "lock_users.h"

static char *sites;
module_param(sites, charp, 0444);
MODULE_PARM_DESC(sites, "extra comma-separated lock user functions");

#define MAX_USERS	192

struct mw_lock_user mw_users[MAX_USERS];
int mw_nr_users, mw_nr_missing;
static char *extra_sites;

/* The text of a kernel function, [start, end), or an error. */
int mw_func_range(const char *name, unsigned long *start, unsigned long *end)
{
	/*
	 * A disabled probe is never armed: it is only a name lookup, as
	 * kallsyms_lookup_name() is not exported.
	 */
	struct kprobe kp = { .symbol_name = name,
			     .flags = KPROBE_FLAG_DISABLED };
	char buf[KSYM_SYMBOL_LEN];
	unsigned long off, size;
	char *slash;
	int ret;

	ret = register_kprobe(&kp);
	if (ret)
		return ret;
	*start = (unsigned long)kp.addr;
	unregister_kprobe(&kp);
	sprint_symbol(buf, *start);
	strreplace(buf, ' ', '\0');	/* a module's: "f+0x0/0x40 [mod]" */
	slash = strrchr(buf, '/');
	if (!slash || kstrtoul(slash + 1, 16, &size))
		return -EINVAL;
	*slash = '\0';
	/* the kprobe may sit past the entry (e.g. after an endbr) */
	slash = strrchr(buf, '+');
	if (slash && !kstrtoul(slash + 1, 16, &off))
		*start -= off;
	*end = *start + size;
	return 0;
}

static void mw_add_user(const char *name)
{
	struct mw_lock_user *u;
	unsigned long start, end;
	int i;

	if (mw_func_range(name, &start, &end)) {
		mw_nr_missing++;
		return;
	}
	for (i = 0; i < mw_nr_users; i++)	/* functions may be listed twice */
		if (mw_users[i].start == start)
			return;
	if (mw_nr_users >= MAX_USERS) {
		pr_warn("more than %d lock users, %s left out\n", MAX_USERS,
			name);
		return;
	}
	u = &mw_users[mw_nr_users++];
	u->start = start;
	u->end = end;
	u->name = name;
	u->through = false;
	for (i = 0; lock_through[i]; i++)
		if (!strcmp(name, lock_through[i]))
			u->through = true;
}

int mw_users_init(void)
{
	char *p, *name;
	int i;

	for (i = 0; i < ARRAY_SIZE(lock_users); i++)
		mw_add_user(lock_users[i]);
	if (sites) {
		extra_sites = kstrdup(sites, GFP_KERNEL);
		if (!extra_sites)
			return -ENOMEM;
		p = extra_sites;
		while ((name = strsep(&p, ",")))
			if (*name)
				mw_add_user(name);
	}
	sort(mw_users, mw_nr_users, sizeof(mw_users[0]), mw_lock_user_cmp, NULL);
	return 0;
}

void mw_users_free(void)
{
	kfree(extra_sites);
}
