"""Integration test of the QEMU plugin (plugin/, TRACE=plugin): the 6.1
mainline kernel under tcg-icount, a short munmap cell booted once per
repeat with the plugin, and the same cell without it (TRACE=none); and a
calibration boot through bench/qemu.sh with the plugin's event log.
Checks that one boot gives latency, work, windows and holds, that the
plugin reads injected calibration windows exactly, and that it leaves the
guest's results as they are without it. The orchestrator builds the
kernel if it is not, and provisions the plugin's QEMU."""
import json
import os
import subprocess

import pytest

import checks
from mmlat import calibrate, load, parse, plugin_events, spikes
from plan import calib, knobs
from plan.model import GuestJob

VARIANT = "mainline"
WORKLOAD = "munmap"
# Every kind at three lengths, twice: the read-back is exact or it is not.
CALIB = "preempt/irq/spin/ptl/ptl_nested:10/100/1000x2"


def orchestrate(results, run_id, trace):
    env = dict(os.environ, PYTHONPATH="analysis:bench", RESULTS_DIR=str(results),
               RUN_ID=run_id, TRACE=trace, CALIB="", VARIANTS=VARIANT, WORKLOADS=WORKLOAD,
               DURATION="3", REPEAT="1", ACCEL="tcg-icount", SMP="1")
    proc = subprocess.run(checks.ORCHESTRATOR, cwd=checks.ROOT, env=env, text=True,
                          capture_output=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same cell and seed booted without an instrument and with the
    plugin."""
    results = tmp_path_factory.mktemp("results")
    return {trace: orchestrate(results, trace, trace) for trace in ("none", "plugin")}


def boot_dir(run_dir):
    return run_dir / "cells" / VARIANT / WORKLOAD / "clean" / "r1"


def test_one_boot_per_repeat_gives_latency_work_windows_and_holds(runs):
    run_dir = runs["plugin"]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["boots"] == ["clean"] and meta["qemu"].startswith("QEMU emulator version 10.0.")
    cell = json.loads((boot_dir(run_dir) / "cell.json").read_text())
    assert cell["status"] == "ok" and cell["instrument"] == "plugin", cell["cause"]
    assert "-plugin" in cell["qemu_cmdline"]
    [c] = load.load_run(str(run_dir))["cells"]
    assert c["cyclictest"]["count"] > 0 and c["ops_per_s"] > 0
    for tracer in load.TRACERS:
        w = c["windows"][tracer]
        assert w["present"] and w["by_class"] and w["max"]["open_stack"], tracer
    assert {s["lock"] for s in c["locks"]["sites"]} >= {"pte", "i_mmap", "anon_vma"}
    # munmap's zap path holds the PTE lock: its lock calls were hooked
    assert "pte-lock-zap" in c["windows"]["preemptoff"]["by_class"]
    assert c["counters"].windows > 0 and c["counters"].unmatched == 0


def test_every_wakeup_is_recorded_and_matches_cyclictests_histogram(runs):
    """The plugin's per-wakeup records (wakeups.txt) of the same boot:
    one a cyclictest sample while recording ran, their latencies the
    histogram's but for the return to user space and the clock read that
    cyclictest's own include, and its spikes each with a verdict."""
    [c] = load.load_run(str(runs["plugin"]))["cells"]
    log = spikes.parse_wakeups(boot_dir(runs["plugin"]) / "plugin" / "wakeups.txt")
    assert log.shift == 3
    ours = sorted(w.latency_ns / 1000 for w in log.wakeups)
    hist = c["lat_hist"]
    theirs = sorted(us for us, n in hist.items() for _ in range(n))
    # cyclictest also measures before the first mark and after the second
    assert 0.9 * len(theirs) <= len(ours) <= len(theirs)
    # the median and the tail: the spikes are the same wakeups; cyclictest's
    # histogram floors each sample to a whole us
    for q in (0.5, 0.999, 1.0):
        gap = spikes.quantile(theirs, q) - spikes.quantile(ours, q)
        assert -1 < gap <= 10, (q, gap)
    assert all(w.expiry_insn <= w.clock_insn <= w.run_insn for w in log.wakeups)
    # an irq-off window open at the expiry has closed by the time the
    # timer's interrupt runs, inside an irq-off window of its own: it is
    # found among the closed ones (a fifth of munmap's wakeups; 0.2 % when
    # the interrupt's window hid them)
    held_irq = sum(any(h.kind == "irq" for h in w.held) for w in log.wakeups)
    assert held_irq >= 0.05 * len(log.wakeups), held_irq
    boot = c["spikes"]
    assert boot.wakeups == len(log.wakeups) and boot.spikes
    assert all(s.latency_us * 1000 > boot.threshold_ns for s in boot.spikes)


def test_the_plugin_leaves_the_guest_as_it_is(runs):
    """The same kernel, image and seed with and without the plugin: the
    same cyclictest histogram and workload counts, byte for byte. Under
    icount a boot is a function of its kernel, image, job and QEMU
    (bench/qemu.sh: nothing reaches the guest at a host-timed point), and
    the plugin reads the guest, never writes it: what it changes is how
    fast the host runs the guest, which the guest cannot see."""
    without, with_ = (boot_dir(runs[t]) / "guest" for t in ("none", "plugin"))
    for name in ("cyclictest.hist", "workload.txt", "dmesg.txt"):
        assert (without / name).read_bytes() == (with_ / name).read_bytes(), name


def sh(*args, env):
    proc = subprocess.run(list(args), cwd=checks.ROOT, env=env, text=True, capture_output=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def test_calibration_windows_read_back_exactly(runs, tmp_path):
    """Each injected window's reading is its busy wait's length plus a
    constant per kind (the instructions between the hook and the module's
    clock reads): slope 1, no residual, every window read."""
    values = knobs.read(os.environ)
    env = dict(os.environ, **values)
    env.update(ACCEL="tcg-icount", SMP="1", CELL_TIMEOUT="900")
    kernel = checks.ROOT / "build" / "kernels" / VARIANT
    obj = json.loads((kernel / "build.json").read_text())["obj_dir"]
    etc, base, module = tmp_path / "etc", tmp_path / "base.cpio", tmp_path / "module.cpio"
    sh("/usr/bin/python3", "-m", "plan", "guest-config", str(etc),
       env=dict(env, PYTHONPATH=str(checks.ROOT / "bench")))
    sh("bash", "guest/initramfs.sh", "base", str(base), str(etc), env=env)
    sh("bash", "guest/initramfs.sh", "module", obj, str(module), env=env)
    initrd = tmp_path / "calib.cpio"
    initrd.write_bytes(base.read_bytes() + module.read_bytes())
    so = sh("bash", "plugin/build.sh", "plugin", env=env)
    consts = sh("bash", "plugin/build.sh", "offsets", obj, str(tmp_path), env=env)
    shift = values["ICOUNT_SHIFT"]
    plugin = ",".join([so, "map=%s" % (kernel / "System.map"), "consts=" + consts,
                       "classes=%s" % (checks.ROOT / "guest/classes.txt"), "shift=" + shift,
                       "mark=rb_simple_write", "log_us=5"])
    guest_knobs = {k.job_key: values[k.name] for k in knobs.KNOBS if k.job_key}
    job = GuestJob(workload="idle", params="", knobs=dict(guest_knobs, duration="2", trace="none"),
                   seed=1, calib=calib.guest_form(calib.parse(CALIB)))
    out = tmp_path / "boot"
    sh("bash", "bench/qemu.sh", str(out), str(kernel), str(initrd), job.cmdline(), plugin,
       env=env)
    guest = out / "guest"
    rows = plugin_events.calibration_readings(
        plugin_events.parse_events(out / "plugin" / "events.txt"),
        parse.parse_calib(guest / "calib.txt"), parse.SymbolMap(guest / "kallsyms.txt"))
    assert len(rows) == len(calib.parse(CALIB))
    assert all(r["reading_us"] is not None for r in rows), rows
    shift_ns = 2 ** int(shift)
    for kind in calibrate.KINDS:
        # reading = inside + b, b the guest's own instructions between the
        # hook and the clock reads (preempt 118, ptl_nested 309 on 6.1): a
        # whole number of instructions, the same at every length (slope 1),
        # to within one instruction
        excess_ns = [round((reading - inside) * 1000)
                     for inside, reading in ((r["inside_us"], r["reading_us"])
                                             for r in rows if r["kind"] == kind)]
        b_ns = min(excess_ns)
        assert 0 < b_ns < calibrate.B_LIMIT_US * 1000, (kind, excess_ns)
        assert round(b_ns / shift_ns) * shift_ns == pytest.approx(b_ns, abs=1), (kind, excess_ns)
        # an interrupt taken inside a window with irqs on lengthens that
        # window, so its reading: one such window a kind is allowed, longer,
        # never shorter; none where irqs are off
        longer = [e for e in excess_ns if e - b_ns >= shift_ns]
        assert len(longer) <= (0 if kind == "irq" else 1), (kind, excess_ns)
