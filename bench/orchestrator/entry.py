"""The entry: every knob checked and the plan built, before anything is
written or built. A bad value stops the run in well under a second,
naming the knob, the value and what it allows (as cyclictest checks all
its options before it starts)."""
import os
import shutil
from dataclasses import dataclass

from plan import calib, instruments, knobs, versions, workloads
from plan.model import AUTO, CALIB_CELL, Calibration, Plan, Round

from . import git, qemu, steps
from .say import Refused, log
from .variants import Resolver

# The kernel command line's size on x86 (COMMAND_LINE_SIZE), and what
# bench/qemu.sh and the other job keys take of it at most.
COMMAND_LINE_SIZE = 2048
COMMAND_LINE_RESERVED = 256


@dataclass
class Entry:
    plan: Plan
    values: dict                # every knob's value
    partials: list              # steps.Partial, written at the config stage
    untested: dict              # variant -> its version, of the untested ones


def _die(name, value, takes):
    raise knobs.KnobError(name, value, takes)


def asks_plugin(values):
    """Whether TRACE names the QEMU plugin itself (TRACE=auto chooses it
    only where it can run: orchestrator/machine.py)."""
    return values["TRACE"] != instruments.AUTO and instruments.of(values["TRACE"]).qemu_plugin


def check_instrument(values):
    """The QEMU plugin (TRACE=plugin) needs icount, whose instruction
    count is its clock, and one vCPU (plugin/README.md)."""
    if not asks_plugin(values):
        return
    if values["ACCEL"] != "tcg-icount":
        raise Refused("TRACE=%s times windows in guest instructions: it needs "
                      "ACCEL=tcg-icount, not %s" % (values["TRACE"], values["ACCEL"]))
    if values["SMP"] not in ("", "1"):
        raise Refused("TRACE=%s runs one vCPU (QEMU 10.0 gives a round-robin vCPU's "
                      "callbacks the index of the vCPU that translated the code): SMP=%s"
                      % (values["TRACE"], values["SMP"]))


def check_knobs(values):
    knobs.check(values)
    check_instrument(values)
    if values["KSRC"] and not git.is_tree(values["KSRC"]):
        _die("KSRC", values["KSRC"], knobs.knob("KSRC").takes(values))
    # Every icount boot runs one QEMU (SMP>1 needs 8.1 or later): one named
    # by ICOUNT_QEMU is checked here; the pinned one is provisioned after
    # the packages, and checked again before the boots.
    if values["ACCEL"] == "tcg-icount" and values["ICOUNT_QEMU"]:
        _, why = qemu.icount_qemu(values["SMP"] or 1)
        if why:
            raise Refused("SMP=%s with ACCEL=tcg-icount: %s" % (values["SMP"] or 1, why))
    if values["EXECUTOR"] != "local":
        check_lava(values)


def check_lava(values):
    """A LAVA executor's QEMU jobs run under icount only (a kvm or tcg-mt
    guest keeps the worker's time, which a lab shares between jobs)."""
    executor = values["EXECUTOR"]
    if values["LAVA_DEVICE_TYPE"] == "qemu" and values["ACCEL"] not in ("auto", "tcg-icount"):
        raise Refused("EXECUTOR=%s runs its QEMU jobs under tcg-icount, not ACCEL=%s: a kvm or "
                      "tcg-mt guest keeps the worker's time, which a lab shares between jobs"
                      % (executor, values["ACCEL"]))
    if asks_plugin(values):
        raise Refused("EXECUTOR=%s: TRACE=%s loads a QEMU plugin, which a LAVA job's QEMU does "
                      "not; TRACE=windows is the instrument inside the guest"
                      % (executor, values["TRACE"]))
    if executor == "lava-local" and (not shutil.which("lava-run") or os.geteuid() != 0):
        raise Refused("EXECUTOR=lava-local runs lava-run (Debian's lava-dispatcher) as root")
    if executor == "lava":
        from .lava.executor import Server
        server = Server(values["LAVA_IDENTITY"])
        server.call("its version", "system.version")


def resolve_variants(values):
    resolver = Resolver(values)
    out = []
    for spec in values["VARIANTS"].split():
        v = resolver.resolve(spec)
        if v.name in [x.name for x in out]:
            _die("VARIANTS", values["VARIANTS"], "each variant once: '%s' is given twice" % v.name)
        out.append(v)
    if values["KSRC"] and not any(v.ref for v in out):
        raise Refused("KSRC=%s is set, but no variant is one of its refs (VARIANTS='%s'): give "
                      "BASELINE=<ref> PATCHED=<ref>, or name=git:<ref> specs"
                      % (values["KSRC"], values["VARIANTS"]))
    # Kernels of other versions build with other configs: a comparison
    # across them is asked for, never stumbled into.
    if len({v.version for v in out}) > 1 and values["CROSS"] != "yes":
        raise Refused("VARIANTS mixes kernel versions (%s): their configs differ, so set "
                      "CROSS=yes to compare across versions (the report then lists the config "
                      "differences that matter)"
                      % ", ".join("%s Linux %s" % (v.name, v.version) for v in out))
    return out


def check_workloads(values):
    """Every entry of WORKLOADS and SWEEP's, in order, each once; and the
    sweeps."""
    entries = values["WORKLOADS"].split()
    if CALIB_CELL in entries:
        raise Refused("calib is the calibration boot (CALIB_WORKLOADS=calib), not a workload")
    try:
        for w in entries:
            workloads.parse_entry(w)
        sweeps = [workloads.parse_sweep(spec) for spec in values["SWEEP"].split()]
    except workloads.EntryError as e:
        raise Refused(str(e)) from None
    for sw in sweeps:
        entries += [w for w in sw.workloads if w not in entries]
    if not entries:
        raise Refused("nothing to run: WORKLOADS and SWEEP are both empty")
    return entries, sweeps


def calibration(values, entries):
    request, where = values["CALIB"], values["CALIB_WORKLOADS"].split()
    if not request:
        for w in where:
            if w != CALIB_CELL:
                try:
                    workloads.check_name("CALIB_WORKLOADS entry '%s'" % w, w)
                except workloads.EntryError as e:
                    raise Refused(str(e)) from None
        return None
    # Calibration is read through the instrument, in the boots that carry
    # its windows (TRACE=auto's choices both have them).
    if values["TRACE"] != instruments.AUTO and not instruments.of(values["TRACE"]).windows_boot:
        raise Refused("CALIB needs traced boots, whose instrument reads its windows: TRACE=%s "
                      "records no windows" % values["TRACE"])
    try:
        windows = calib.parse(request)
    except calib.CalibError as e:
        _die("CALIB", request, "%s (%s)" % (calib.GRAMMAR, e))
    size = len("mmlat.calib=" + calib.guest_form(windows))
    if size > COMMAND_LINE_SIZE - COMMAND_LINE_RESERVED:
        _die("CALIB", request, "at most %d bytes of the guest's kernel command line, not %d (%d "
             "windows)" % (COMMAND_LINE_SIZE - COMMAND_LINE_RESERVED, size, len(windows)))
    for w in where:
        if w != CALIB_CELL and w not in entries:
            raise Refused("CALIB_WORKLOADS names '%s', which is neither calib nor one of "
                          "WORKLOADS (%s)" % (w, " ".join(entries)))
    return Calibration(request=request, windows=windows, workloads=where)


def repeats(values, variants):
    """REPEAT as the plan has it, and its first round. REPEAT=auto's rule
    compares BASELINE with PATCHED, which must be variants of the run."""
    if values["REPEAT"] != "auto":
        n = int(values["REPEAT"])
        return n, [Round(index=1, first=1, last=n, reason="REPEAT=%d" % n)]
    names = [v.name for v in variants]
    for knob in ("BASELINE", "PATCHED"):
        given = values[knob]
        # a variant's name, a spec NAME=..., or a ref of KSRC, as the
        # analysis takes them (load.variant_named)
        if given.partition("=")[0] not in names and given not in [v.ref for v in variants]:
            raise Refused("REPEAT=auto compares BASELINE with PATCHED, but %s='%s' is none of "
                          "the variants (%s)" % (knob, values[knob], " ".join(names)))
    return "auto", [AUTO.round(1)]


def plan_run(values, steps_dir):
    """The run's Entry from the knobs' values; raises KnobError or Refused.
    steps_dir: where STEPS=each puts its partial series."""
    check_knobs(values)
    variants = resolve_variants(values)
    untested = {v.name: v.version for v in variants if not versions.tested(v.version)}
    for name, version in untested.items():
        log("warning: variant '%s' is Linux %s: not a tested version (mmlat is tested on %s); "
            "it runs once its config fragments, guest modules and classes.txt's functions have "
            "been checked against it" % (name, version, ", ".join(versions.TESTED)))
    step_list, partials = [], []
    if values["STEPS"] == "each":
        if len(variants) != 2:
            _die("VARIANTS", values["VARIANTS"], "with STEPS=each exactly two variants, a "
                 "baseline and a patched one whose series directories start with the baseline's")
        step_list, stepped, partials = steps.plan(
            variants[0], variants[1], steps_dir, os.path.abspath(values["PATCHES_DIR"]),
            values["KSRC"])
        variants = variants[:1] + stepped
    entries, sweeps = check_workloads(values)
    cal = calibration(values, entries)
    repeat, rounds = repeats(values, variants)
    # trace and boots as given until the machine resolves TRACE
    # (Plan.resolve_trace), once ACCEL and SMP are known
    plan = Plan(run_id=values["RUN_ID"], variants=variants, steps=step_list, workloads=entries,
                sweeps=sweeps, boots=[], trace=values["TRACE"], calibration=cal,
                duration_s=int(values["DURATION"]), repeat=repeat, rounds=rounds,
                flavor=values["FLAVOR"], cross=values["CROSS"] == "yes",
                executor=values["EXECUTOR"])
    return Entry(plan=plan, values=values, partials=partials, untested=untested)
