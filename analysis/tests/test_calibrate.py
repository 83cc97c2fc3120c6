"""Calibration checks: on a real TRACE=max calibration cell (mainline,
tcg-icount, the max tracer reset per window) and copies of it with one
figure broken; on the fit with known answers; and on TRACE=windows cells
built here in the window module's snapshot format, whose readings and
overheads are known."""
import json
import re
import shutil
from pathlib import Path

import pytest

from dataclasses import replace

import fakerun
from fakerun import make_run
from mmlat import calibrate
from mmlat.__main__ import main
from plan import calib

FIX = Path(__file__).parent / "fixtures" / "calib-6.1-tcg"
REQUEST = calib.parse("preempt:200/1000/5000,irq:200/1000/5000")


@pytest.fixture
def cell(tmp_path):
    dst = tmp_path / "guest"
    shutil.copytree(FIX, dst)
    return dst


# ------------------------------------------------------------------ the fit

def test_fit_recovers_known_slope_and_overhead():
    inside = [10.3, 20.1, 50.4, 100.2, 200.3, 500.1, 1000.4, 2000.2, 5000.3]
    f = calibrate.fit([(x, 1.0 * x + 1.5) for x in inside])
    assert f["a"] == pytest.approx(1.0) and f["b_us"] == pytest.approx(1.5)
    assert f["n"] == 9 and f["max_residual_us"] == pytest.approx(0, abs=1e-9)
    assert calibrate.check_fit("preempt", f) == []


def test_fit_ignores_an_interrupt_inside_one_window():
    # as in a real patched idle boot: one 200 us PTE-lock hold read 21 us
    # long because a timer interrupt landed inside it
    inside = [10.2, 20.4, 50.1, 100.2, 200.2, 500.2, 1000.3, 2000.2, 5000.2] * 3
    points = [(x, x + 1.86) for x in inside]
    points[4] = (points[4][0], points[4][1] + 21.0)
    f = calibrate.fit(points)
    assert f["a"] == pytest.approx(1.0) and f["b_us"] == pytest.approx(1.86)
    assert f["max_residual_us"] == pytest.approx(21.0)


def test_slope_off_by_three_percent_fails():
    f = calibrate.fit([(x, 1.03 * x + 1.0) for x in (10, 100, 1000, 5000)])
    assert f["a"] == pytest.approx(1.03)
    assert calibrate.check_fit("irq", f) == [
        "irq: reading = 1.0300 * inside +1.0 us: a is off by more than 1 %"]


def test_overhead_above_goal_is_reported_above_limit_fails():
    # 5 us misses the 2 us goal but fails nothing; 25 us means broken.
    assert calibrate.check_fit("spin", calibrate.fit([(10, 15), (1000, 1005)])) == []
    assert calibrate.check_fit("spin", calibrate.fit([(10, 35), (1000, 1025)])) == [
        "spin: 25.0 us added to every window (b), more than 20 us: the measurement is broken"]


def test_one_length_cannot_be_fitted():
    f = calibrate.fit([(100, 101), (100, 102)])
    assert f["a"] is None
    assert "inject at least two lengths" in calibrate.check_fit("ptl", f)[0]


# ------------------------------------- TRACE=max: a real cell, the tracer read

def test_real_tracer_cell_passes_and_fits_the_tracer_cost(cell):
    result, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert failures == []
    assert result["source"] == "tracer"
    rows = result["windows"]
    assert [r["class"] for r in rows] == ["calibration"] * 6
    assert [r["reading_us"] for r in rows] == [219, 1019, 5019, 213, 1013, 5013]
    # The max tracer adds its own hooks to every window: 18.6 us on
    # preempt-off and 12.9 us on irq-off windows here, in slope one.
    fits = result["fits"]
    assert fits["preempt"]["a"] == pytest.approx(1.0, abs=1e-4)
    assert fits["preempt"]["b_us"] == pytest.approx(18.6, abs=0.1)
    assert fits["irq"]["a"] == pytest.approx(1.0, abs=1e-4)
    assert fits["irq"]["b_us"] == pytest.approx(12.9, abs=0.1)
    assert result["cyclictest"]["max_us"] >= 5000 - 500
    text = calibrate.format_result(result)
    # Theil-Sen by hand: slopes 1.0, 1.000018, 1.000022; b = median of
    # 219 - a * 200.376, 1019 - a * 1000.376, 5019 - a * 5000.288
    assert "fit preempt    reading = 1.0000 * inside +18.62 us" in text
    assert "b above the 2 us goal" in text


def test_tracer_reading_far_off_fails(cell):
    calib = cell / "calib.txt"
    calib.write_text(calib.read_text().replace("tracer_us=5019", "tracer_us=2488", 1))
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert failures[0] == ("window 3 (preempt 5000 us): read 2488.0 us, outside the "
                           "5000.3 us inside and 5893.7 us around the window")
    # slopes 1.0, 0.4727, 0.3673: a = 0.4727; b = median(124.3, 546.1, 124.3)
    assert failures[1:] == [
        "preempt: reading = 0.4727 * inside +124.3 us: a is off by more than 1 %",
        "preempt: 124.3 us added to every window (b), more than 20 us: the measurement is broken"]


def test_tracer_beyond_the_time_around_the_window_fails(cell):
    calib = cell / "calib.txt"
    calib.write_text(calib.read_text().replace("tracer_us=219", "tracer_us=700", 1))
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert failures[0].startswith("window 1 (preempt 200 us): read 700.0 us, outside")


def test_window_attributed_elsewhere_fails(cell):
    trace = cell / "calib" / "1.trace"
    trace.write_text(trace.read_text().replace("mmlat_calib_preempt_window", "unmap_page_range"))
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert failures == ["window 1 (preempt 200 us): attributed to pte-lock-zap "
                        "(started at unmap_page_range)"]


def test_cyclictest_missing_the_window_fails(cell):
    js = cell / "cyclictest.json"
    text = js.read_text()
    peak = max(int(v) for v in re.findall(r'"max": (\d+)', text))
    js.write_text(text.replace('"max": %d' % peak, '"max": 2000'))
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert len(failures) == 1 and failures[0].startswith("cyclictest max 2000 us")


def test_missing_and_extra_windows_are_named(cell):
    _, failures = calibrate.check_cell(str(cell), REQUEST[:5], "max")
    assert failures[0] == "5 windows requested, 6 recorded"
    (cell / "calib.txt").unlink()
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert "the calibration did not run" in failures[0]


def test_no_reading_at_all_fails(cell):
    calib = cell / "calib.txt"
    calib.write_text(re.sub(r" tracer_us=\d+", "", calib.read_text()))
    _, failures = calibrate.check_cell(str(cell), REQUEST, "max")
    assert failures[0] == "TRACE=max, but the boot has no tracer readings"


# ---------------------------- TRACE=windows: readings from snapshot deltas

# The calibration functions' keys in the window module's dumps ({} takes
# the counters), and keys of other code that change between every two
# snapshots.
CALIB_KEYS = {
    "preempt": "key preempt cpu=0 {} lock=none stack=mmlat_calib_preempt_window+0x2a/0x60,"
               "mmlat_calib_write+0x8c/0x140,proc_reg_write+0x53/0xa0",
    "irq": "key irq cpu=0 {} lock=none stack=mmlat_calib_irq_window+0x30/0x70,"
           "mmlat_calib_write+0x8c/0x140,proc_reg_write+0x53/0xa0",
    "spin": "key preempt cpu=0 {} lock=none stack=_raw_spin_lock+0x1a/0x40,"
            "mmlat_calib_spin_window+0x25/0x80,mmlat_calib_write+0x8c/0x140",
    "ptl": "site lock=pte mode=spin {} at=mmlat_calib_ptl_hold+0x1c/0x70",
}
CALIB_KEYS["ptl_nested"] = CALIB_KEYS["ptl"]
# Windows the PTE-lock kinds open around the hold: not their reading.
SIDE_KEYS = {
    "ptl": "key preempt cpu=0 {} lock=pte stack=_raw_spin_lock+0x1a/0x40,"
           "mmlat_calib_ptl_hold+0x1c/0x70,mmlat_calib_write+0x8c/0x140",
    "ptl_nested": "key preempt cpu=0 {} lock=none stack=mmlat_calib_ptl_nested_window+0x12/0x40,"
                  "mmlat_calib_write+0x8c/0x140",
}
# The guest's own windows and holds; the first two have the preempt
# calibration function in their stack (an interrupt inside the window;
# the reschedule a long window ends with, seen in real boots), which must
# not count as the window.
NOISE_KEYS = ["key preempt cpu=0 {} lock=none stack=_raw_spin_lock+0x1a/0x40,"
              "hrtimer_interrupt+0x10/0x200,__sysvec_apic_timer_interrupt+0x5c/0x110,"
              "mmlat_calib_preempt_window+0x2a/0x60",
              "key preempt cpu=0 {} lock=none stack=preempt_schedule_thunk+0x16/0x18,"
              "mmlat_calib_preempt_window+0xa6/0xa8,mmlat_calib_write+0xfe/0x150",
              "key preempt cpu=0 {} lock=pte stack=_raw_spin_lock+0x1a/0x40,"
              "zap_pte_range+0x1ab/0x600,zap_pmd_range+0x12a/0x1f0",
              "key irq cpu=0 {} lock=none stack=_raw_spin_lock_irqsave+0x20/0x50,"
              "free_unref_page_list+0x101/0x300",
              "site lock=pte mode=spin {} at=zap_pte_range+0x1ab/0x600"]


def _dumps(counters):
    """The two dumps (format 3 of guest/modules/mmlat_windows) of counters."""
    windows = ["mmlat_windows 3", "param clock=local_clock thresh_ns=5000 cpus=1 running=1",
               "kind preempt n=1 total_ns=1 max_ns=1 max_lock=none",
               "kind irq n=1 total_ns=1 max_ns=1 max_lock=none"]
    locks = ["mmlat_locks 3", "param clock=local_clock running=1",
             "total lock=pte holds=0 lost=0 discarded=0 in_flight=0"]
    for key, c in counters.items():
        fields = "n=%d total_ns=%d max_ns=%d" % (c["n"], c["total"], c["max"])
        if key.startswith("site"):
            fields += (" lost=0 discarded=%d slept=0 waits=0 wait_total_ns=0 wait_max_ns=0"
                       % c["discarded"])
        (locks if key.startswith("site") else windows).append(
            key.format(fields) + " buckets=")
    return "\n".join(windows) + "\n", "\n".join(locks) + "\n"


def windows_cell(guest, request, a=1.0, b_ns=1200, extra=None):
    """A TRACE=windows calibration cell whose readings are a * inside + b;
    extra(i, kind, counters, reading_ns) may tamper with window i's
    counters."""
    (guest / "calib").mkdir(parents=True)
    shutil.copy(FIX / "cyclictest.json", guest / "cyclictest.json")
    counters = {k: dict(n=0, total=0, max=0, discarded=0)
                for k in list(CALIB_KEYS.values()) + list(SIDE_KEYS.values()) + NOISE_KEYS}

    def add(key, ns):
        c = counters[key]
        c["n"] += 1
        c["total"] += ns
        c["max"] = max(c["max"], ns)

    def snapshot(i):
        win, locks = _dumps(counters)
        (guest / "calib" / ("%d.windows" % i)).write_text(win)
        (guest / "calib" / ("%d.locks" % i)).write_text(locks)

    lines = []
    snapshot(0)
    for i, (kind, us) in enumerate(request, 1):
        inside = us * 1000 + 317
        reading = int(a * inside + b_ns)
        outer = reading + 2500
        lines.append("type=%s ns=%d outer_ns=%d cpu=0" % (kind, inside, outer))
        add(CALIB_KEYS[kind], reading)
        if kind in SIDE_KEYS:
            add(SIDE_KEYS[kind], reading + 800)
        for key in NOISE_KEYS:     # the guest's own windows, the cats' too
            add(key, 40000 + 1000 * i)
            add(key, 9000)
        if extra:
            extra(i, kind, counters, reading)
        snapshot(i)
    (guest / "calib.txt").write_text("\n".join(lines) + "\n")
    return guest


# Lengths and kinds of the synthetic cells (the integration test injects
# others: 30, 300, 3000 us).
W_REQUEST = calib.parse(
    "preempt/irq/spin/ptl/ptl_nested:10/50/200/1000/4000x2")


def test_windows_cell_reads_each_window_from_its_own_key(tmp_path):
    guest = windows_cell(tmp_path / "guest", W_REQUEST, b_ns=1200)
    result, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == []
    assert result["source"] == "windows"
    rows = result["windows"]
    assert len(rows) == 50
    assert [r["reading_us"] for r in rows[:5]] == [11.517] * 5
    for kind in calibrate.KINDS:
        f = result["fits"][kind]
        assert f["n"] == 10
        assert f["a"] == pytest.approx(1.0, abs=1e-6)
        assert f["b_us"] == pytest.approx(1.2, abs=1e-3)


def test_the_runs_trace_says_what_reads_the_windows(tmp_path):
    """meta.json's TRACE, not the files a boot has, chooses the reading: a
    window-module boot checked as a max-tracer run has no reading."""
    guest = windows_cell(tmp_path / "guest", W_REQUEST, b_ns=1200)
    result, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == [] and result["source"] == "windows"
    result, failures = calibrate.check_cell(str(guest), W_REQUEST, "max")
    assert failures[0] == "TRACE=max, but the boot has no tracer readings"
    assert result["source"] is None


def test_windows_cell_with_a_slope_off_by_three_percent_fails(tmp_path):
    guest = windows_cell(tmp_path / "guest", W_REQUEST, a=1.03, b_ns=500)
    _, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert "ptl: reading = 1.0300 * inside +0.5 us: a is off by more than 1 %" in failures
    assert sum("a is off by more than 1 %" in f for f in failures) == 5


def test_two_windows_in_one_calibration_key_are_flagged(tmp_path):
    def twice(i, kind, counters, reading):
        if i == 7:      # the 50 us irq window of round one
            c = counters[CALIB_KEYS["irq"]]
            c["n"] += 1
            c["total"] += 3000
    guest = windows_cell(tmp_path / "guest", W_REQUEST, extra=twice)
    result, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == ["window 7 (irq 50 us): the irq key of mmlat_calib_irq_window "
                        "counted 2 windows for one"]
    assert result["windows"][6]["reading_us"] is None
    assert result["fits"]["irq"]["n"] == 9


def _discard(*windows):
    """Tamper: the PTE-lock holds of these windows were discarded."""
    def discard(i, kind, counters, reading):
        if i in windows:
            c = counters[CALIB_KEYS[kind]]
            c["n"] -= 1
            c["total"] -= reading
            c["discarded"] += 1
    return discard


def test_a_discarded_hold_is_listed_not_failed(tmp_path):
    # The window module discards a hold whose task was preempted between
    # the lock call and the acquisition: no reading, and nothing broken.
    guest = windows_cell(tmp_path / "guest", W_REQUEST, extra=_discard(4))
    result, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == []
    row = result["windows"][3]
    assert (row["kind"], row["reading_us"], row["discarded"]) == ("ptl", None, True)
    assert result["fits"]["ptl"]["n"] == 9
    assert ("1 PTE-lock holds discarded by the window module (preempted before the lock "
            "was taken): ptl 10 us") in calibrate.format_result(result)


def test_a_kind_with_every_hold_discarded_fails(tmp_path):
    nested = [i for i, (kind, _) in enumerate(W_REQUEST, 1) if kind == "ptl_nested"]
    guest = windows_cell(tmp_path / "guest", W_REQUEST, extra=_discard(*nested))
    _, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == ["ptl_nested: no window of this kind was read"]


def test_reading_beyond_the_time_around_the_window_fails(tmp_path):
    def late(i, kind, counters, reading):
        if i == 13:     # spin 200 us read 5 us past its section
            counters[CALIB_KEYS["spin"]]["total"] += 2500 + 5000
    guest = windows_cell(tmp_path / "guest", W_REQUEST, extra=late)
    _, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures == ["window 13 (spin 200 us): read 209.0 us, outside the 200.3 us "
                        "inside and 204.0 us around the window"]


def test_missing_snapshot_is_named(tmp_path):
    guest = windows_cell(tmp_path / "guest", W_REQUEST)
    (guest / "calib" / "9.locks").unlink()
    _, failures = calibrate.check_cell(str(guest), W_REQUEST, "windows")
    assert failures[:2] == ["window 9 (ptl 50 us): no snapshot calib/9.locks",
                            "window 10 (ptl_nested 50 us): no snapshot before it"]


# ------------------------------------------------------------- a whole run

RUN_CALIB = "preempt/irq:10/1000"


def _run(run):
    """make calibrate's run: its calibration in the traced boots of idle
    and munmap."""
    record = fakerun.meta(workloads=("idle", "munmap"), repeats=1, calib=RUN_CALIB)
    fakerun.write_meta(str(run), replace(record, plan=replace(
        record.plan, calibration=replace(record.plan.calibration, workloads=["idle", "munmap"]))))


def _run_cell(run, variant, workload, status="ok"):
    root = run / "cells" / variant / workload / "traced" / "r1"
    fakerun.write_cell(str(root), variant, workload, "traced", 1, status=status,
                       cause="" if status == "ok" else "guest panicked", calibrated=True)
    if status == "ok":
        windows_cell(root / "guest", calib.parse(RUN_CALIB), b_ns=900)


def test_run_writes_calibration_json(tmp_path, capsys):
    run = tmp_path / "run"
    _run(run)
    _run_cell(run, "baseline", "idle")
    _run_cell(run, "baseline", "munmap")
    assert calibrate.check_run(str(run)) == 0
    doc = json.loads((run / "calibration.json").read_text())
    assert doc["ok"] is True
    assert sorted(doc["fits"]["baseline"]) == ["idle", "munmap"]
    assert doc["fits"]["baseline"]["munmap"]["irq"]["b_us"] == pytest.approx(0.9, abs=1e-3)
    assert [c["cell"] for c in doc["cells"]] == ["baseline/idle/traced/r1",
                                                 "baseline/munmap/traced/r1"]
    assert "calibration: ok" in capsys.readouterr().out


def test_run_with_a_failed_calibration_cell_fails(tmp_path, capsys):
    run = tmp_path / "run"
    _run(run)
    _run_cell(run, "baseline", "idle")
    _run_cell(run, "patched", "idle", status="failed")
    assert calibrate.check_run(str(run)) == 1
    doc = json.loads((run / "calibration.json").read_text())
    assert [c["ok"] for c in doc["cells"]] == [True, False]
    assert doc["cells"][1]["failures"] == ["the cell failed: guest panicked"]
    assert "FAIL: the cell failed: guest panicked" in capsys.readouterr().out


def test_run_without_calibration_cells(tmp_path):
    _run(tmp_path)
    (tmp_path / "cells").mkdir()
    assert calibrate.check_run(str(tmp_path)) == 2


def test_bench_calibration_boots_reach_the_report_header(tmp_path, capsys):
    # make bench: a fake run whose calibration boots (cells/<v>/calib) hold
    # window-module snapshots with a known overhead per variant; mmlat
    # calibrate fits it, and the report's header states it.
    request = "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"
    run = Path(make_run(str(tmp_path / "run"), repeats=1, failed=False, calib=request))
    for variant, b_ns in (("baseline", 900), ("patched", 2400)):
        root = run / "cells" / variant / "calib" / "traced" / "r1"
        shutil.rmtree(root / "guest")
        windows_cell(root / "guest", calib.parse(request), b_ns=b_ns)
    assert calibrate.check_run(str(run)) == 0
    doc = json.loads((run / "calibration.json").read_text())
    assert [c["cell"] for c in doc["cells"]] == ["baseline/calib/traced/r1",
                                                 "patched/calib/traced/r1"]
    assert doc["fits"]["patched"]["calib"]["ptl"]["b_us"] == pytest.approx(2.4, abs=1e-3)
    assert main(["report", str(run), "--no-plots", "--resamples", "20"]) == 0
    txt = (run / "report" / "report.txt").read_text()
    assert re.search(r"^  baseline \(idle\) +(0\.9/1\.000 +){4}0\.9/1\.000$", txt, re.M)
    assert re.search(r"^  patched \(idle\) +(2\.4/1\.000 +){4}2\.4/1\.000$", txt, re.M)
    assert "== calib" not in txt and "FAILED" not in txt


# ---------------------------------- TRACE=plugin: a real cell, the event log

PLUGIN_FIX = Path(__file__).parents[2] / "plugin" / "tests" / "fixtures" / "calib-6.1-icount"
P_REQUEST = calib.parse("preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x3")


@pytest.fixture
def plugin_cell(tmp_path):
    """A boot as the orchestrator keeps it: the guest's files in guest/,
    the plugin's event log in plugin/ (the cyclictest of the max tracer's
    cell, whose longest window is as long)."""
    guest, plugin = tmp_path / "boot" / "guest", tmp_path / "boot" / "plugin"
    guest.mkdir(parents=True)
    plugin.mkdir()
    for name in ("calib.txt", "kallsyms.txt"):
        shutil.copy(PLUGIN_FIX / name, guest / name)
    shutil.copy(FIX / "cyclictest.json", guest / "cyclictest.json")
    shutil.copy(PLUGIN_FIX / "events.txt", plugin / "events.txt")
    return guest


def test_plugin_cell_reads_every_window_from_the_event_log(plugin_cell):
    result, failures = calibrate.check_cell(str(plugin_cell), P_REQUEST, "plugin")
    assert failures == [] and result["source"] == "plugin"
    assert all(r["reading_us"] is not None for r in result["windows"])
    for kind in calibrate.KINDS:
        f = result["fits"][kind]
        # the plugin's count and the module's clock follow one icount clock
        assert f["n"] == 27 and f["a"] == pytest.approx(1.0, abs=1e-9)
        assert 0 < f["b_us"] < calibrate.B_LIMIT_US


def test_plugin_cell_without_a_window_or_a_log_fails(plugin_cell):
    events = plugin_cell.parent / "plugin" / "events.txt"
    lines = events.read_text().splitlines(keepends=True)
    first_irq = next(i for i, line in enumerate(lines) if line.startswith("window irq"))
    events.write_text("".join(lines[:first_irq] + lines[first_irq + 1:]))
    _, failures = calibrate.check_cell(str(plugin_cell), P_REQUEST, "plugin")
    # each later irq window takes the next one's reading, out of bounds,
    # and the last is left without one
    assert failures[0].startswith("window 2 (irq 10 us): read 21.2 us, outside")
    assert ("window 132 (irq 5000 us): the plugin logged no irq window opened by "
            "mmlat_calib_irq_window") in failures
    events.unlink()
    _, failures = calibrate.check_cell(str(plugin_cell), P_REQUEST, "plugin")
    assert failures[0] == "TRACE=plugin, but the boot has no plugin event log (plugin/events.txt)"
