// SPDX-License-Identifier: GPL-2.0
/*
 * mmlat QEMU plugin: every preempt-off and irq-off window of the guest
 * kernel, and its PTE-lock, i_mmap and anon_vma holds, recorded from
 * outside the guest.  Under -icount the guest's clock is its instruction
 * count, and what a plugin runs between two guest instructions costs the
 * guest no time: the kernel under test runs unchanged and unperturbed.
 *
 * The hooks are the first instructions of kernel functions found by name
 * in the build's System.map: the functions every outermost transition of
 * a PREEMPT_TRACER/IRQSOFF_TRACER kernel calls (trace_preempt_off/on,
 * trace_hardirqs_off/on and their variants), stop/start_critical_timings
 * from the idle loop, and the lock functions.  Each decides as the
 * kernel's own tracepoint would fire (the outermost transition, not in
 * NMI), reading the kernel's state from guest memory.
 *
 * Arguments (-plugin FILE,ARG=VALUE,...): see plugin/README.md.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

#include "dump.h"
#include "events.h"
#include "guest.h"
#include "kconst.h"
#include "locks.h"
#include "record.h"
#include "stack.h"
#include "symbols.h"
#include "wakeups.h"
#include "windows.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

enum hook_type {
	H_PREEMPT_OFF, H_PREEMPT_ON,
	H_IRQ_OFF, H_IRQ_OFF_CALLER, H_IRQ_ON,
	H_IDLE_STOP, H_IDLE_START,
	H_NMI_ENTER, H_NMI_EXIT,
	H_MARK,
	H_SPIN_LOCK, H_SPIN_UNLOCK, H_SLEEP_LOCK, H_SLEEP_UNLOCK,
	H_TRY,
	H_CLOCK, H_TIMER_WAKE, H_SWITCH,
};

struct hook {
	enum hook_type type;
	int mode;		/* lock hooks: the lock mode */
};

/* need: 1 the kernel must have it, 0 optional, -1 a lock hook */
struct hook_func {
	const char *name;
	struct hook hook;
	int need;
};

static const struct hook_func hook_funcs[] = {
	{ "trace_preempt_off", { H_PREEMPT_OFF }, 1 },
	{ "trace_preempt_on", { H_PREEMPT_ON }, 1 },
	{ "trace_hardirqs_off", { H_IRQ_OFF }, 1 },
	{ "trace_hardirqs_off_finish", { H_IRQ_OFF } },
	{ "trace_hardirqs_off_caller", { H_IRQ_OFF_CALLER } },
	{ "trace_hardirqs_on", { H_IRQ_ON }, 1 },
	{ "trace_hardirqs_on_prepare", { H_IRQ_ON } },
	{ "trace_hardirqs_on_caller", { H_IRQ_ON } },
	{ "stop_critical_timings", { H_IDLE_STOP }, 1 },
	{ "start_critical_timings", { H_IDLE_START }, 1 },
	{ "irqentry_nmi_enter", { H_NMI_ENTER }, 1 },
	{ "irqentry_nmi_exit", { H_NMI_EXIT }, 1 },
	{ "_raw_spin_lock", { H_SPIN_LOCK, MW_SPIN }, -1 },
	{ "_raw_spin_unlock", { H_SPIN_UNLOCK, MW_SPIN }, -1 },
	{ "mutex_lock", { H_SLEEP_LOCK, MW_MUTEX }, -1 },
	{ "mutex_unlock", { H_SLEEP_UNLOCK, MW_MUTEX }, -1 },
	{ "down_write", { H_SLEEP_LOCK, MW_RWSEM_W }, -1 },
	{ "down_read", { H_SLEEP_LOCK, MW_RWSEM_R }, -1 },
	{ "up_write", { H_SLEEP_UNLOCK, MW_RWSEM_W }, -1 },
	{ "up_read", { H_SLEEP_UNLOCK, MW_RWSEM_R }, -1 },
	{ "_raw_spin_trylock", { H_TRY, MW_SPIN }, -1 },
	{ "mutex_trylock", { H_TRY, MW_MUTEX }, -1 },
	{ "down_read_trylock", { H_TRY, MW_RWSEM_R }, -1 },
	{ "down_write_trylock", { H_TRY, MW_RWSEM_W }, -1 },
	{ "__hrtimer_run_queues", { H_CLOCK }, 0 },
	{ "hrtimer_wakeup", { H_TIMER_WAKE }, 0 },
	{ "__switch_to", { H_SWITCH }, 0 },
};

/* The hooks of the per-wakeup records: all of them, or no records. */
static const enum hook_type wakeup_hooks[] = {
	H_CLOCK, H_TIMER_WAKE, H_SWITCH,
};

/*
 * The idle loop's callers of stop/start_critical_timings(), where the
 * kernel fires power:cpu_idle, which the guest module cuts windows at
 * (printk calls them too, and is no idle).
 */
static const char * const idle_funcs[] = {
	"cpu_idle_poll", "default_idle_call", "cpuidle_enter_state",
};

#define MAX_IDLE_RANGES	8

static struct {
	u64 start, end;
} idle_ranges[MAX_IDLE_RANGES];
static unsigned int nr_idle_ranges;

bool recording;
u64 record_gen;
unsigned int icount_shift = 3;

static qemu_plugin_u64 insn_count;
static GHashTable *hooks;	/* vaddr -> struct hook */
/* vaddr -> struct try_site: the trylock return sites translated so far */
static GHashTable *try_sites;
static bool with_locks = true;
static bool with_wakeups = true;
static unsigned int wakeup_hooks_found;
static unsigned int marks_seen;
static char *out_dir;
static bool regs_ready;
static qemu_plugin_id_t plugin_id;
/*
 * Until the mark starts recording, only what must follow the guest from
 * its first instruction is hooked: the mark, and the irq and NMI hooks
 * that mirror tracing_irq_cpu and NMI context.  At the mark the plugin is
 * reset, QEMU's translations dropped, and every block translated again
 * with the instruction count and every hook.  The kernel's boot and the
 * runner's set-up, half of a boot's instructions, then run at the speed of
 * a boot without the plugin; what the guest sees does not change.
 */
static bool instrumented;

u64 vcpu_insns(unsigned int cpu)
{
	return qemu_plugin_u64_get(insn_count, cpu);
}

static bool in_idle_code(u64 ret)
{
	unsigned int i;

	for (i = 0; i < nr_idle_ranges; i++)
		if (ret >= idle_ranges[i].start && ret < idle_ranges[i].end)
			return true;
	return false;
}

/*
 * The kernel's per-CPU tracing_irq_cpu, which the trace_hardirqs_off
 * family sets and the _on family clears, and which they test to fire the
 * irq tracepoints on the outermost transition only: mirrored per vCPU by
 * the same rule, from the first instruction the vCPU runs (its copy
 * starts at 0 as the kernel's), so that no hook reads it from guest
 * memory.  Returns the value before the call and updates the mirror.
 */
static bool *irq_traced;

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void plugin_exit(qemu_plugin_id_t id, void *udata);

static void instrument_all(qemu_plugin_id_t id)
{
	instrumented = true;
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
}

/* Hooked before the mark: what the mirrors need from the first instruction. */
static bool hooked_before_mark(enum hook_type type)
{
	switch (type) {
	case H_MARK:
	case H_NMI_ENTER:
	case H_NMI_EXIT:
	case H_IRQ_OFF:
	case H_IRQ_OFF_CALLER:
	case H_IRQ_ON:
		return true;
	default:
		return false;
	}
}

static bool irq_trace_set(unsigned int cpu, bool on)
{
	bool was = irq_traced[cpu];

	irq_traced[cpu] = on;
	return was;
}

/*
 * The mark function: its first call starts recording, its second stops
 * it (bench's runner writes tracing_on just before its measurement and
 * just after, on clean and traced boots alike).
 */
static void mark(unsigned int cpu)
{
	marks_seen++;
	if (marks_seen == 1) {
		record_gen++;
		recording = true;
		if (!instrumented)
			qemu_plugin_reset(plugin_id, instrument_all);
		events_mark(cpu, "start", vcpu_insns(cpu));
	} else if (marks_seen == 2) {
		recording = false;
		locks_stop();
		events_mark(cpu, "stop", vcpu_insns(cpu));
	}
}

static void hook_exec(unsigned int cpu, void *udata)
{
	const struct hook *h = udata;

	bool was;

	guest_hook_begin(cpu);
	switch (h->type) {
	case H_MARK:
		mark(cpu);
		return;
	case H_NMI_ENTER:
		guest_nmi_enter();
		return;
	case H_NMI_EXIT:
		guest_nmi_exit();
		return;
	case H_IRQ_OFF:
	case H_IRQ_OFF_CALLER:
		was = irq_trace_set(cpu, true);
		if (!recording || was)
			return;
		break;
	case H_IRQ_ON:
		was = irq_trace_set(cpu, false);
		if (!recording || !was)
			return;
		break;
	default:
		if (!recording)
			return;
		break;
	}
	switch (h->type) {
	case H_PREEMPT_OFF:
		if (!guest_in_nmi()) {
			u64 ip = guest_reg(R_RDI);

			win_begin(cpu, W_PREEMPT, ip, guest_reg(R_RSI),
				  with_locks ? lock_opening_tag(cpu, ip) : 0);
		}
		break;
	case H_PREEMPT_ON:
		if (!guest_in_nmi())
			win_end(cpu, W_PREEMPT);
		break;
	case H_IRQ_OFF:
	case H_IRQ_OFF_CALLER:
		if (guest_in_nmi())
			break;
		hook_stack_read();
		win_begin(cpu, W_IRQ, hook_return_address(),
			  h->type == H_IRQ_OFF ? hook_parent_address() :
			  guest_reg(R_RDI), 0);
		break;
	case H_IRQ_ON:
		if (!guest_in_nmi())
			win_end(cpu, W_IRQ);
		break;
	case H_IDLE_STOP:
		if (in_idle_code(hook_return_address()))
			win_idle_enter(cpu);
		break;
	case H_IDLE_START:
		if (in_idle_code(hook_return_address()))
			win_idle_exit(cpu);
		break;
	case H_SPIN_LOCK:
		lock_spin_lock(cpu);
		break;
	case H_SPIN_UNLOCK:
		lock_spin_unlock(cpu);
		break;
	case H_SLEEP_LOCK:
		lock_sleep_lock(cpu, h->mode);
		break;
	case H_SLEEP_UNLOCK:
		lock_sleep_unlock(cpu);
		break;
	case H_TRY:
		lock_try_entry(cpu, h->mode);
		break;
	case H_CLOCK:
		wake_clock(cpu, guest_reg(R_RSI));
		break;
	case H_TIMER_WAKE:
		wake_timer(cpu, guest_reg(R_RDI));
		break;
	case H_SWITCH:
		wake_switch(cpu, guest_reg(R_RSI));
		break;
	default:
		break;
	}
}

struct try_site {
	u64 vaddr;
	int mode;
};

static void try_return_exec(unsigned int cpu, void *udata)
{
	const struct try_site *t = udata;

	guest_hook_begin(cpu);
	if (recording)
		lock_try_return(cpu, t->vaddr, t->mode);
}

/* The return site at va, made once however often its TB is translated. */
static struct try_site *try_site(u64 va, int mode)
{
	struct try_site *t = g_hash_table_lookup(try_sites, &va);

	if (!t) {
		t = g_new(struct try_site, 1);
		t->vaddr = va;
		t->mode = mode;
		g_hash_table_insert(try_sites, &t->vaddr, t);
	}
	return t;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;

	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		u64 va = qemu_plugin_insn_vaddr(insn);
		struct hook *h;
		int mode;

		/* first, so that a hook's count includes its instruction */
		if (instrumented)
			qemu_plugin_register_vcpu_insn_exec_inline_per_vcpu(insn,
									    QEMU_PLUGIN_INLINE_ADD_U64,
									    insn_count, 1);
		if (!guest_kernel_addr(va))
			continue;
		h = g_hash_table_lookup(hooks, &va);
		if (h && (instrumented || hooked_before_mark(h->type))) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, hook_exec,
							       QEMU_PLUGIN_CB_R_REGS,
							       h);
		} else if (!h && instrumented && !i && with_locks &&
			   lock_is_try_return(va, &mode)) {
			/* a return site begins a TB: the call ended one */
			qemu_plugin_register_vcpu_insn_exec_cb(insn,
							       try_return_exec,
							       QEMU_PLUGIN_CB_R_REGS,
							       try_site(va, mode));
		}
	}
}

static void vcpu_init(qemu_plugin_id_t id, unsigned int cpu)
{
	if (regs_ready)
		return;
	if (!guest_regs_init())
		exit(1);
	regs_ready = true;
}

static FILE *open_out(const char *name)
{
	g_autofree char *path = g_build_filename(out_dir, name, NULL);
	FILE *f = fopen(path, "w");

	if (!f)
		fprintf(stderr, "mmlat plugin: cannot write %s\n", path);
	return f;
}

static void plugin_exit(qemu_plugin_id_t id, void *udata)
{
	FILE *f;

	if (recording)
		locks_stop();
	events_close();
	wakeups_close();
	f = open_out("windows.txt");
	if (f) {
		dump_windows(f, recording);
		fclose(f);
	}
	if (!with_locks)
		return;
	f = open_out("locks.txt");
	if (f) {
		dump_locks(f, recording);
		fclose(f);
	}
}

static void add_hook(u64 addr, const struct hook *h)
{
	u64 *key = g_new(u64, 1);

	*key = addr;
	g_hash_table_insert(hooks, key, (gpointer)h);
}

static bool is_wakeup_hook(enum hook_type type)
{
	unsigned int i;

	for (i = 0; i < G_N_ELEMENTS(wakeup_hooks); i++)
		if (wakeup_hooks[i] == type)
			return true;
	return false;
}

static bool hook_functions(const char *mark_func)
{
	static const struct hook mark_hook = { H_MARK };
	u64 start, end;
	unsigned int i;

	hooks = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (i = 0; i < G_N_ELEMENTS(hook_funcs); i++) {
		const struct hook_func *hf = &hook_funcs[i];

		/*
		 * Lock hooks: the spinlock always (the PTE lock), the rest
		 * for the families of the kernel's i_mmap and anon_vma locks.
		 */
		if (hf->need < 0 &&
		    (!with_locks ||
		     ((hf->hook.type == H_TRY || hf->hook.mode != MW_SPIN) &&
		      !lock_family_hooked(hf->hook.mode))))
			continue;
		if (is_wakeup_hook(hf->hook.type) && !with_wakeups)
			continue;
		if (symbol_range(hf->name, &start, &end)) {
			add_hook(start, &hf->hook);
			wakeup_hooks_found += is_wakeup_hook(hf->hook.type);
		} else if (hf->need > 0) {
			fprintf(stderr,
				"mmlat plugin: System.map has no %s: the kernel needs CONFIG_PREEMPT_TRACER and CONFIG_IRQSOFF_TRACER\n",
				hf->name);
			return false;
		}
	}
	try_sites = g_hash_table_new(g_int64_hash, g_int64_equal);
	for (i = 0; i < G_N_ELEMENTS(idle_funcs); i++) {
		if (nr_idle_ranges < MAX_IDLE_RANGES &&
		    symbol_range(idle_funcs[i], &start, &end)) {
			idle_ranges[nr_idle_ranges].start = start;
			idle_ranges[nr_idle_ranges].end = end;
			nr_idle_ranges++;
		}
	}
	if (mark_func) {
		if (!symbol_range(mark_func, &start, &end)) {
			fprintf(stderr, "mmlat plugin: no mark function %s in System.map\n",
				mark_func);
			return false;
		}
		add_hook(start, &mark_hook);
	} else {
		recording = true;
		record_gen = 1;
		instrumented = true;
	}
	return true;
}

/* Is the argument's key (its first kl characters) this one? */
static bool arg_is(const char *k, size_t kl, const char *key)
{
	return kl == strlen(key) && !strncmp(k, key, kl);
}

static bool parse_u(const char *v, unsigned int *out)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (!*v || *end || n > ~0U)
		return false;
	*out = n;
	return true;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
					   const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *map = NULL, *consts = NULL, *classes = NULL;
	const char *sites = NULL, *mark_func = NULL;
	unsigned int thresh_us = 5, table_size = 4096, log_us = 0, cpus;
	struct qemu_plugin_scoreboard *counts;
	FILE *log = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *k = argv[i], *v = eq ? eq + 1 : "";
		size_t kl = eq ? (size_t)(eq - argv[i]) : strlen(argv[i]);
		bool ok = true;

		if (arg_is(k, kl, "map"))
			map = v;
		else if (arg_is(k, kl, "consts"))
			consts = v;
		else if (arg_is(k, kl, "classes"))
			classes = v;
		else if (arg_is(k, kl, "out"))
			out_dir = g_strdup(v);
		else if (arg_is(k, kl, "sites"))
			sites = v;
		else if (arg_is(k, kl, "mark"))
			mark_func = *v ? v : NULL;
		else if (arg_is(k, kl, "shift"))
			ok = parse_u(v, &icount_shift) && icount_shift < 32;
		else if (arg_is(k, kl, "thresh_us"))
			ok = parse_u(v, &thresh_us);
		else if (arg_is(k, kl, "table_size"))
			ok = parse_u(v, &table_size) && table_size &&
			     !(table_size & (table_size - 1));
		else if (arg_is(k, kl, "log_us"))
			ok = parse_u(v, &log_us);
		else if (arg_is(k, kl, "locks"))
			ok = qemu_plugin_bool_parse("locks", v, &with_locks);
		else if (arg_is(k, kl, "wakeups"))
			ok = qemu_plugin_bool_parse("wakeups", v, &with_wakeups);
		else
			ok = false;
		if (!ok) {
			fprintf(stderr, "mmlat plugin: bad argument '%s' (see plugin/README.md)\n",
				argv[i]);
			return -1;
		}
	}
	if (!map || !consts || !out_dir || (with_locks && !classes)) {
		fprintf(stderr,
			"mmlat plugin: needs map=System.map, consts=FILE, out=DIR%s\n",
			with_locks ? ", classes=classes.txt (or locks=off)" : "");
		return -1;
	}
	if (!info->system_emulation || strcmp(info->target_name, "x86_64")) {
		fprintf(stderr, "mmlat plugin: x86_64 system emulation only\n");
		return -1;
	}
	/*
	 * QEMU 10.0 compiles the translating vCPU's index into a TB unless
	 * TCG runs multi-threaded (accel/tcg/plugin-gen.c, gen_cpu_index()),
	 * and icount runs every vCPU round-robin on one thread: with two
	 * vCPUs the index a callback or an inline count gets is the wrong
	 * one as soon as one vCPU runs a TB the other translated.
	 */
	if (info->system.max_vcpus > 1) {
		fprintf(stderr,
			"mmlat plugin: one vCPU only: QEMU's round-robin TCG gives plugins the vCPU that translated a TB, not the one running it\n");
		return -1;
	}
	cpus = info->system.max_vcpus;
	if (!symbols_load(map) || !kconst_load(consts) ||
	    !guest_percpu_init(cpus))
		return -1;
	if (with_locks && !locks_init(cpus, classes, sites))
		return -1;
	if (!hook_functions(mark_func))
		return -1;
	if (log_us) {
		log = open_out("events.txt");
		if (!log)
			return -1;
	}
	if (with_wakeups) {
		FILE *f;

		if (wakeup_hooks_found != G_N_ELEMENTS(wakeup_hooks)) {
			fprintf(stderr,
				"mmlat plugin: System.map lacks __hrtimer_run_queues, hrtimer_wakeup or __switch_to: no wakeups.txt (wakeups=off)\n");
			return -1;
		}
		f = open_out("wakeups.txt");
		if (!f)
			return -1;
		wakeups_init(f, cpus);
	}
	irq_traced = g_new0(bool, cpus);
	windows_init(cpus, table_size, (u64)thresh_us * 1000,
		     (u64)log_us * 1000);
	events_init(log, (u64)log_us * 1000);
	counts = qemu_plugin_scoreboard_new(sizeof(u64));
	insn_count = qemu_plugin_scoreboard_u64(counts);
	plugin_id = id;
	qemu_plugin_register_vcpu_init_cb(id, vcpu_init);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, plugin_exit, NULL);
	return 0;
}
