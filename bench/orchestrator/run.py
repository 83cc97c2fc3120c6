"""A run, stage by stage: the entry's checks and plan; the run's locks;
the packages; configs, trees and kernels; the guest images and the
machine; meta.json; then the boots, round by round, through the
executor. Complete boots are never rewritten: a rerun with the same
RUN_ID resumes, a new RUN_ID starts afresh.

Faults: a signal (SIGINT, SIGTERM, SIGHUP) stops the run and its guests
and builds at once; SIGKILL stops them through their parent-death signal.
A full disk under RESULTS_DIR stops the run before the boot it cannot
keep. Either way only complete boots stay, the cause is named, and a rerun
with the same RUN_ID does the rest; a second run on a RUN_ID in progress
is refused."""
import glob
import os
import shutil
import time

from plan import knobs

from . import analysis, children, entry, executor, images, kernels, locks, machine, packages, qemu
from . import records, rounds, signals, steps
from .children import guarded
from .paths import Build, Run
from .say import Refused, log, note, shown
from .scheduler import Scheduler

DEPS = os.path.join(knobs.ROOT, "bench/deps.sh")


def leaf_environment(values):
    """The leaves read the knobs they take from the environment: every
    knob's value, the defaults included."""
    os.environ.update(values)


def build_stage(e, build):
    """Stages 1 and 2: configs, then trees, then kernels; returns {variant:
    (config folder, config sha256)} and {variant: series sha256}."""
    plan, values = e.plan, e.values
    log("stage 1/4: config (%s)" % plan.flavor)
    for partial in e.partials:
        steps.write_partial(partial)
    configs = kernels.make_configs(build, plan.variants, values["KSRC"])
    kernels.check_configs(configs, plan.cross)
    stepped = " ".join(s.variant for s in plan.steps)
    log("stage 2/4: kernels (%s%s)" % (values["VARIANTS"],
                                       "; STEPS=each: " + stepped if stepped else ""))
    patches = os.path.abspath(values["PATCHES_DIR"])
    shas = kernels.make_trees(build, plan.variants, values["KSRC"], patches)
    for v in plan.variants:
        config, sha = configs[v.name]
        kernels.build_kernel(build, v, config, shas[v.name], sha, values["KSRC"], patches)
    return configs, shas


def run(values):
    """The whole run; returns the exit status."""
    t0 = time.monotonic()
    build = Build(values["BUILD_DIR"], values["FLAVOR"], values["CONFIG_FRAGMENT"])
    e = entry.plan_run(values, build.steps)
    results = os.path.abspath(values["RESULTS_DIR"])
    run_paths = Run(os.path.join(results, e.plan.run_id))
    leaf_environment(values)
    signals.install()
    imgs = images.Images(build, e.plan.run_id)
    sched = None
    try:
        locks.run_lock(run_paths.lock, e.plan.run_id)
        build_lock = locks.build_lock(build.lock, e.plan.run_id)
        guarded(["bash", DEPS])
        # the pinned icount QEMU, unless ICOUNT_QEMU names another (a LAVA
        # server's jobs run its devices' QEMU)
        if values["EXECUTOR"] != "lava" and values["ACCEL"] in ("tcg-icount", "auto") \
                and not values["ICOUNT_QEMU"]:
            qemu.provision()
        configs, shas = build_stage(e, build)
        names = e.plan.variant_names
        log("stage 3/4: guest images")
        imgs.make_base(build, names)
        mach = machine.resolve(values, imgs.kernel(names[0]), imgs.base)
        e.plan.resolve_trace(mach.trace)
        # Only the windows and holds depend on classes.txt; the check
        # kernels carry no window module.
        instrument = e.plan.instrument
        if instrument.windows_boot and e.plan.flavor == "bench":
            analysis.drift(values, [build.kernel(n) for n in names])
        imgs.make_initrds(build, names,
                          modules=bool(e.plan.calibration) or e.plan.trace == "windows")
        if instrument.qemu_plugin:
            log("stage 3/4: the QEMU plugin")
            imgs.make_plugin(build, names)
        locks.release(build_lock)
        os.makedirs(run_paths.cells, exist_ok=True)
        if os.path.exists(run_paths.meta):
            meta = records.check_resume(e.plan.run_id, run_paths.meta, e, mach, configs)
            log("resuming run %s" % e.plan.run_id)
            if e.plan.repeat != "auto" and meta.plan.rounds != e.plan.rounds:
                # another REPEAT=N: its one round
                meta.plan.rounds, meta.plan.repeat = e.plan.rounds, e.plan.repeat
                meta.knobs["REPEAT"] = values["REPEAT"]
                records.write_meta(run_paths, meta)
        else:
            records.copy_kernels(run_paths, build, names)
            meta = records.new_meta(e, mach, configs, build, imgs, packages.versions())
            records.write_meta(run_paths, meta)
        log("stage 4/4: boots (%s, %d vCPU, %ds each, %s per cell, %d at once) into %s"
            % (mach.accel, mach.smp, e.plan.duration_s, " ".join(e.plan.boots), mach.jobs,
               shown(run_paths.dir)))
        boots_t0 = time.monotonic()
        sched = Scheduler(run_paths, e.plan, executor.make(e.plan.executor, run_paths.dir, values),
                          mach, imgs, values, {n: (configs[n][1], shas[n]) for n in names})
        ran, total = rounds.run_rounds(sched, meta, run_paths, values)
        if sched.host_fault:
            raise Refused("run %s stopped: %s; its complete boots are kept in %s: make room and "
                          "rerun with RUN_ID=%s to do the rest"
                          % (e.plan.run_id, sched.host_fault, run_paths.dir, e.plan.run_id))
        log("matrix done in %ds (boots %ds, %d at once): %d of %d boots run, %d failed, in %s"
            % (time.monotonic() - t0, time.monotonic() - boots_t0, mach.jobs, ran, total,
               sched.failed, shown(run_paths.dir)))
    except signals.Stopped as stop:
        children.stop()
        n = sched.cancel_all() if sched else 0
        # Every staging folder: also one whose boot was about to start or
        # had just ended (the run lock says no other run owns any of them).
        for staging in glob.glob(os.path.join(glob.escape(run_paths.cells), "*/*/*/.r*.tmp")):
            shutil.rmtree(staging, ignore_errors=True)
        raise Refused("run %s stopped by %s%s; its complete boots are kept in %s: rerun with "
                      "RUN_ID=%s to do the rest"
                      % (e.plan.run_id, stop.name, ", %d boots in progress discarded" % n
                         if n else "", run_paths.dir, e.plan.run_id),
                      128 + stop.signum) from None
    finally:
        imgs.remove()
    if e.plan.flavor == "bench":
        records.point_latest(results, run_paths.dir)
    # STRICT=1 (the safety boots): any failed boot of the run, resumed ones
    # included, fails the run with every cause listed.
    if values["STRICT"] == "1":
        bad = records.failed_boots(run_paths)
        for path, cause in bad:
            note("    %s: %s" % (path, cause))
        if bad:
            raise Refused("%d of %d boots failed in %s (causes above)"
                          % (len(bad), total, shown(run_paths.dir)))
    return 0


def build_kernels(values):
    """make kernels: the kernels of VARIANTS, built, nothing booted."""
    build = Build(values["BUILD_DIR"], values["FLAVOR"], values["CONFIG_FRAGMENT"])
    entry.check_knobs(values)
    variants = entry.resolve_variants(values)
    leaf_environment(values)
    signals.install()
    try:
        build_lock = locks.build_lock(build.lock, "make kernels")
        guarded(["bash", DEPS])
        configs = kernels.make_configs(build, variants, values["KSRC"])
        kernels.check_configs(configs, values["CROSS"] == "yes")
        patches = os.path.abspath(values["PATCHES_DIR"])
        shas = kernels.make_trees(build, variants, values["KSRC"], patches)
        for v in variants:
            config, sha = configs[v.name]
            kernels.build_kernel(build, v, config, shas[v.name], sha, values["KSRC"], patches)
        locks.release(build_lock)
    except signals.Stopped as stop:
        children.stop()
        raise Refused("make kernels stopped by %s" % stop.name, 128 + stop.signum) from None
    return 0
