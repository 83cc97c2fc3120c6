"""The orchestrator (bench/orchestrator) with stub leaves (tests/unit/
conftest.py): the boot matrix, its order, resume, locks, signals, faults,
JOBS, STEPS, sweeps, calibration boots and what a run records; and make's
lines for the targets that run it."""
import json
import os
import re
import shutil
import subprocess
import time

import pytest
from helpers import NO_ARCHIVE, ROOT, clean_environ
from orchestrator import variants
from orchestrator.variants import Resolver
from plan import knobs, workloads


def test_matrix_runs_clean_then_traced_boot_per_cell(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix()
    assert proc.returncode == 0, proc.stderr
    dirs = [line.split()[0] for line in boots]
    # clean and traced of one cell are adjacent, clean first
    assert dirs[:4] == ["t/cells/base/munmap/clean/.r1.tmp", "t/cells/base/munmap/traced/.r1.tmp",
                        "t/cells/patch/munmap/clean/.r1.tmp", "t/cells/patch/munmap/traced/.r1.tmp"]
    assert len(dirs) == 2 * 2 * 2 * 2
    jobs = {d: line.split(" ", 1)[1] for d, line in zip(dirs, boots)}
    for d, job in jobs.items():
        traced = "/traced/" in d
        assert ("mmlat.trace=windows" if traced else "mmlat.trace=none") in job
        # calibration only in the traced idle boots
        assert ("mmlat.calib=p200" in job) == (traced and "/idle/" in d)
    cell = json.loads((run / "cells/patch/idle/traced/r2/cell.json").read_text())
    assert cell["boot"] == "traced" and cell["repeat"] == 2 and cell["status"] == "ok"
    assert json.loads((run / "cells/base/munmap/clean/r1/cell.json").read_text())["boot"] == "clean"
    assert (run / "cells/base/munmap/clean/r1/console.log").exists()
    assert not list(run.glob("cells/*/*/*/.r*.tmp"))
    meta = json.loads((run / "meta.json").read_text())
    assert meta["boots"] == ["clean", "traced"] and meta["trace"] == "windows"
    assert "boot 16/16 patch/idle/traced/r2" in proc.stderr


def test_matrix_resumes_per_boot(matrix):
    run_matrix, run = matrix
    assert run_matrix()[0].returncode == 0
    shutil.rmtree(run / "cells/base/idle/traced/r1")
    proc, boots = run_matrix()
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in boots] == ["t/cells/base/idle/traced/.r1.tmp"]
    assert "15 of 16 boots already complete, skipped" in proc.stderr
    proc, _ = run_matrix(TRACE="max")
    assert proc.returncode != 0 and "another TRACE" in proc.stderr


def most_at_once(events_log):
    """The largest number of stub boots that were running at one time."""
    running = most = 0
    for line in events_log.read_text().splitlines():
        running += 1 if line.startswith("start ") else -1
        most = max(most, running)
    return most


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_matrix_boots_jobs_guests_at_once(matrix, jobs):
    run_matrix, run = matrix
    proc, boots = run_matrix(JOBS=jobs, STUB_SLEEP="2", CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 8 and len(list(run.glob("cells/*/*/*/r*/cell.json"))) == 8
    assert most_at_once(run.parent / "events.log") == int(jobs)
    assert json.loads((run / "meta.json").read_text())["jobs"] == int(jobs)
    # progress: done, running, failed and the time left
    assert re.search(r"\(done 0, running 1, failed 0; elapsed \d+s, left ~\?\)", proc.stderr)
    assert ", left ~" in proc.stderr.splitlines()[-2]


def wait_for_complete_boots(run, count, proc, secs=60):
    deadline = time.monotonic() + secs
    while len(list(run.glob("cells/*/*/*/r*/cell.json"))) < count:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)


def processes_under(path):
    """Processes whose command line names PATH (the stubs take their
    staging folder as an argument)."""
    out = subprocess.run(["pgrep", "-af", str(path)], text=True, capture_output=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_matrix_interrupted_keeps_complete_boots_and_resumes(matrix, signal_name):
    import signal
    run_matrix, run = matrix
    proc = run_matrix.start(JOBS="2", STUB_SLEEP="1", CALIB="")
    wait_for_complete_boots(run, 3, proc)
    if signal_name == "SIGKILL":
        # the matrix alone: its boots go with their parent-death signal
        os.kill(proc.pid, signal.SIGKILL)
    else:
        # the whole foreground group, as a terminal's Ctrl-C
        os.killpg(proc.pid, getattr(signal, signal_name))
    _, err = proc.communicate(timeout=30)
    if signal_name != "SIGKILL":
        assert proc.returncode == 128 + getattr(signal, signal_name), err
        assert "run t stopped by %s" % signal_name in err and "rerun with RUN_ID=t" in err
    deadline = time.monotonic() + 10
    while processes_under(run) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not processes_under(run)
    # only complete boots, each with its record
    done = sorted(p.parent for p in run.glob("cells/*/*/*/r*/cell.json"))
    assert 3 <= len(done) < 16
    assert sorted(p for p in run.glob("cells/*/*/*/r*")) == done
    if signal_name != "SIGKILL":
        assert not list(run.glob("cells/*/*/*/.r*.tmp"))
    (run.parent / "boots.log").unlink()
    proc, boots = run_matrix(JOBS="2", CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 16 - len(done)
    assert len(list(run.glob("cells/*/*/*/r*/cell.json"))) == 16
    assert not list(run.glob("cells/*/*/*/.r*.tmp"))


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGKILL"])
def test_matrix_interrupted_during_a_build_stops_it(matrix, tmp_path, signal_name):
    import signal
    run_matrix, run = matrix
    pid_file = tmp_path / "build/build.pid"
    proc = run_matrix.start(STUB_BUILD_SLEEP="30", CALIB="")
    deadline = time.monotonic() + 30
    while not pid_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    build = int(pid_file.read_text())
    if signal_name == "SIGKILL":
        os.kill(proc.pid, signal.SIGKILL)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    if signal_name == "SIGINT":
        assert proc.returncode == 130 and "run t stopped by SIGINT" in err, err
    # the build went with the run, and no boot began
    deadline = time.monotonic() + 10
    while os.path.exists("/proc/%d" % build) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists("/proc/%d" % build)
    assert not (run / "cells").exists()
    proc, boots = run_matrix(CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 16


def test_matrix_refuses_a_second_run_on_a_run_id_in_progress(matrix):
    run_matrix, run = matrix
    first = run_matrix.start(JOBS="1", STUB_SLEEP="0.5", CALIB="")
    wait_for_complete_boots(run, 1, first)
    t0 = time.monotonic()
    second, _ = run_matrix(CALIB="")
    assert second.returncode != 0 and time.monotonic() - t0 < 5
    assert "run t is in progress (pid %d" % first.pid in second.stderr, second.stderr
    _, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert len(list(run.glob("cells/*/*/*/r*/cell.json"))) == 16


def test_matrix_trace_none_boots_clean_only(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(TRACE="none")
    assert proc.returncode != 0 and "CALIB needs traced boots" in proc.stderr
    proc, boots = run_matrix(TRACE="none", CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 8 and all("/clean/" in line and "mmlat.trace=none" in line
                                   for line in boots)
    assert json.loads((run / "meta.json").read_text())["boots"] == ["clean"]
    assert not list(run.glob("cells/*/*/traced"))


# The version-drift guard (mmlat drift) checks every built kernel before
# any boot of a run with traced boots; its failure stops the run there.
def test_matrix_checks_the_kernels_for_drift_before_traced_boots(matrix, tmp_path):
    run_matrix, run = matrix
    drift = run.parent / "drift.log"
    proc, boots = run_matrix(STUB_DRIFT="1")
    assert proc.returncode != 0 and boots == []
    assert "guest/classes.txt names functions a kernel of this run lacks" in proc.stderr, \
        proc.stderr
    kernels = tmp_path / "build/kernels"
    assert drift.read_text() == "%s %s\n" % (kernels / "base", kernels / "patch")
    drift.unlink()
    proc, boots = run_matrix(TRACE="none", CALIB="")
    assert proc.returncode == 0 and len(boots) == 8 and not drift.exists()
    # the check flavour carries no window module
    proc, boots = run_matrix(FLAVOR="check", RUN_ID="c", CALIB="")
    assert proc.returncode == 0 and len(boots) == 16 and not drift.exists()


# FLAVOR=hw: the bench kernel for real machines, x86_64_defconfig under the
# same fragment and lava/x86-hw.config, in folders of its own.
def test_kernels_of_flavor_hw_merge_onto_x86_64_defconfig(matrix, tmp_path):
    run_matrix, run = matrix
    proc, boots = run_matrix(FLAVOR="hw", TRACE="none", CALIB="", WORKLOADS="idle",
                             VARIANTS="base", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    (call,) = (run.parent / "kconfig.log").read_text().splitlines()
    make, out, source, base, *fragments = call.split()
    assert make == "make" and base == "x86_64_defconfig"
    assert out.startswith(str(tmp_path / "build/config/hw/"))
    assert [f.rsplit("/", 2)[-2:] for f in fragments] == [["config", "mmlat.config"],
                                                          ["lava", "x86-hw.config"]]
    assert (tmp_path / "build/kernels-hw/base/bzImage").exists()


def test_matrix_strict_names_failed_boots(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(STRICT="1", STUB_FAIL="mmlat.trace=windows mmlat.seed=2")
    assert len(boots) == 16
    assert proc.returncode != 0
    assert "4 of 16 boots failed" in proc.stderr
    assert "base/munmap/traced/r2: stub failure" in proc.stderr
    assert "clean/r2:" not in proc.stderr


# make bench: CALIB_WORKLOADS=calib, one traced idle boot per variant with
# the calibration injected, outside the workloads.
def test_matrix_calibration_boot_per_variant_runs_first(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(CALIB_WORKLOADS="calib")
    assert proc.returncode == 0, proc.stderr
    dirs = [line.split()[0] for line in boots]
    assert dirs[:2] == ["t/cells/base/calib/traced/.r1.tmp", "t/cells/patch/calib/traced/.r1.tmp"]
    assert len(dirs) == 2 + 2 * 2 * 2 * 2
    for line in boots[:2]:
        job = line.split()[1:]
        assert "mmlat.workload=idle" in job and "mmlat.trace=windows" in job
        assert "mmlat.calib=p200" in job and "mmlat.seed=1" in job
    # the workloads' boots, idle's included, carry no injected window
    assert not any("mmlat.calib" in line for line in boots[2:])
    assert sorted(p.relative_to(run).as_posix() for p in run.glob("cells/*/calib/*/*")) == [
        "cells/base/calib/traced/r1", "cells/patch/calib/traced/r1"]
    cell = json.loads((run / "cells/patch/calib/traced/r1/cell.json").read_text())
    assert (cell["workload"], cell["boot"], cell["repeat"]) == ("calib", "traced", 1)
    meta = json.loads((run / "meta.json").read_text())
    assert meta["calibration"] == {"request": "preempt:200", "windows": [["preempt", 200]],
                                   "workloads": ["calib"]}
    assert "boot 2/18 patch/calib/traced/r1" in proc.stderr
    assert "boot 18/18 patch/idle/traced/r2" in proc.stderr


def test_matrix_resumes_calibration_boot(matrix):
    run_matrix, run = matrix
    assert run_matrix(CALIB_WORKLOADS="calib")[0].returncode == 0
    shutil.rmtree(run / "cells/patch/calib/traced/r1")
    proc, boots = run_matrix(CALIB_WORKLOADS="calib")
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in boots] == ["t/cells/patch/calib/traced/.r1.tmp"]
    assert "17 of 18 boots already complete, skipped" in proc.stderr
    # one run, one calibration
    for env in (dict(CALIB_WORKLOADS="calib", CALIB="irq:100"), dict(CALIB_WORKLOADS="idle")):
        proc, boots = run_matrix(**env)
        assert proc.returncode != 0 and "another CALIB or CALIB_WORKLOADS" in proc.stderr, env
        assert boots == []


def test_matrix_empty_calib_has_no_calibration_boot(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(CALIB_WORKLOADS="calib", CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 16 and not any("mmlat.calib" in line for line in boots)
    assert not list(run.glob("cells/*/calib"))
    assert json.loads((run / "meta.json").read_text())["calibration"] is None


def test_matrix_refuses_calib_as_a_workload(matrix):
    run_matrix, _ = matrix
    proc, boots = run_matrix(WORKLOADS="munmap calib")
    assert proc.returncode != 0 and "calib is the calibration boot" in proc.stderr
    assert boots == []


ORCHESTRATOR = "PYTHONPATH=analysis:bench /usr/bin/python3 -m orchestrator run"


def make_dry(*args):
    """The commands make would run (make -n), with none of the knobs
    taken from this environment, but for the one that writes
    build/knobs.mk, should it be out of date."""
    proc = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT,
                          env=clean_environ(), text=True, capture_output=True, check=True)
    return [line for line in proc.stdout.splitlines()
            if "plan knobs-mk" not in line and line != "mkdir -p build"]


def orchestrator_line(target, *args):
    """make's command line of target's run, continuation lines joined."""
    text = "\n".join(make_dry(target, *args)).replace("\\\n", " ")
    return next(line for line in text.splitlines() if "-m orchestrator run" in line)


@pytest.mark.parametrize("args, calib", [
    ((), "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"),
    (("CALIB=",), ""),
    (("TRACE=none",), ""),
    (("TRACE=plugin",), "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"),
    (("TRACE=max",), "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"),
    (("CALIB=irq:50/500",), "irq:50/500"),
])
def test_make_bench_calibrates_in_its_own_boot_then_checks_before_the_report(args, calib):
    lines = make_dry("bench", *args)
    assert lines[0] == 'CALIB="%s" CALIB_WORKLOADS=calib %s' % (calib, ORCHESTRATOR)
    steps = [line.split(" -m mmlat ")[1].split()[0] for line in lines[1:]]
    assert steps == ["summary", "calibrate", "report"]
    # a failed calibration does not stop the report: its header says so
    assert lines[2].endswith("|| true")


def test_make_report_checks_the_calibration_and_calibrate_keeps_its_defaults():
    lines = make_dry("report", "RUN=results/x")
    assert [line.split(" -m mmlat ")[1] for line in lines if " -m mmlat " in line] == [
        'summary "results/x"', 'calibrate "results/x" || true',
        'report "results/x" --baseline baseline --patched patched']
    cal = orchestrator_line("calibrate", "RUN_ID=x")
    assert 'CALIB_WORKLOADS="idle munmap"' in cal
    assert 'CALIB="preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x3"' in cal


@pytest.mark.parametrize("env, message", [
    ({"CALIB": "preempt:abc"}, "CALIB='preempt:abc' is not allowed: CALIB takes "
     "KIND[/KIND...]:US[/US...][xROUNDS],... of preempt irq spin ptl ptl_nested (bad "
     "calibration item 'preempt:abc'"),
    ({"CALIB": "bogus:10"}, "kinds are preempt, irq, spin, ptl, ptl_nested"),
    ({"CALIB": "preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x8"},
     "CALIB takes at most 1792 bytes of the guest's kernel command line, not 1811 (360 "
     "windows)"),
    ({"CALIB_WORKLOADS": "munmpa"},
     "CALIB_WORKLOADS names 'munmpa', which is neither calib nor one of WORKLOADS"),
])
def test_matrix_refuses_a_bad_calibration_request_before_any_boot(matrix, env, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(**env)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert boots == [] and not run.exists()


# Workload parameters: NAME:KEY=VALUE,... entries, checked against the
# workload registry (bench/plan/workloads.py) before anything is built.
def test_matrix_passes_workload_parameters_as_a_job_key(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(WORKLOADS="imap:n=256 munmap imap:n=1024,s=1", CALIB="",
                             REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    jobs = {line.split()[0]: line.split(" ", 1)[1] for line in boots}
    job = jobs["t/cells/base/imap:n=256/clean/.r1.tmp"]
    assert job.startswith("mmlat.workload=imap mmlat.params=n=256 mmlat.duration=1 ")
    # a plain workload's job has no parameters
    plain = jobs["t/cells/patch/munmap/traced/.r1.tmp"]
    assert plain.startswith("mmlat.workload=munmap mmlat.duration=1 ") and "params" not in plain
    cell = json.loads((run / "cells/patch/imap:n=256/traced/r1/cell.json").read_text())
    assert cell["workload"] == "imap:n=256"
    assert jobs["t/cells/patch/imap:n=1024,s=1/clean/.r1.tmp"].startswith(
        "mmlat.workload=imap mmlat.params=n=1024,s=1 ")
    assert json.loads((run / "meta.json").read_text())["workloads"] == [
        "imap:n=256", "munmap", "imap:n=1024,s=1"]


@pytest.mark.parametrize("entry, message", [
    ("imap:m=3", "WORKLOADS entry 'imap:m=3': no parameter 'm' for imap; it takes n=1..4096"),
    ("imap:n=8,s=65", "s=65 is not an integer in 1..64"),
    ("imap:n=0", "n=0 is not an integer in 1..4096"),
    ("imap:n=5000", "n=5000 is not an integer in 1..4096"),
    ("imap:n=016", "n=016 is not an integer"),
    ("imap:n=x", "n=x is not an integer"),
    ("imap:n", "'n' is not KEY=VALUE; imap takes n=1..4096"),
    ("imap:", "an empty parameter"),
    ("imap:n=3,", "an empty parameter"),
    ("imap:n=3,n=4", "'n' given twice"),
    ("munmap:n=3", "workload 'munmap' takes no parameters (with parameters: anonchain imap "
                   "reclaim)"),
])
def test_matrix_refuses_bad_workload_parameters_before_anything_runs(matrix, entry, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(WORKLOADS="munmap " + entry)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    # before the config stage, the kernels and the run directory
    assert "stage 1/4" not in proc.stderr
    assert boots == [] and not run.exists()


@pytest.mark.parametrize("sweep, message", [
    ("imap:n=16,64,s=1,2", "'n' and 's' both have several values"),
    ("imap:n=16,64 imap:n=0,1", "SWEEP 'imap:n=0,1' (entry 'imap:n=0'): n=0 is not an integer"),
])
def test_matrix_refuses_a_bad_sweep_before_anything_is_built(matrix, sweep, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(SWEEP=sweep)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert "stage 1/4" not in proc.stderr
    assert boots == [] and not run.exists()


def test_matrix_runs_a_sweep_after_the_workloads_and_records_it(matrix, tmp_path):
    run_matrix, run = matrix
    # a tool whose version line has a quote and a backslash: meta.json is
    # written by a serializer, not pasted together
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cyclictest").write_text('#!/bin/sh\necho \'cyclictest V 2.6 "rt" \\\\x\'\n')
    (bin_dir / "cyclictest").chmod(0o755)
    proc, boots = run_matrix(WORKLOADS="munmap imap:s=1,n=64", SWEEP="imap:s=1,n=16,64,256",
                             CALIB="", REPEAT="1",
                             PATH="%s:%s" % (bin_dir, os.environ["PATH"]))
    assert proc.returncode == 0, proc.stderr
    cells = [line.split()[0].split("/")[3] for line in boots if "/base/" in line
             and "/clean/" in line]
    # the entry WORKLOADS has already runs once, in its place
    assert cells == ["munmap", "imap:s=1,n=64", "imap:s=1,n=16", "imap:s=1,n=256"]
    jobs = [line.split(" ", 1)[1] for line in boots]
    assert any(job.startswith("mmlat.workload=imap mmlat.params=s=1,n=256 ") for job in jobs)
    meta = json.loads((run / "meta.json").read_text())
    assert meta["workloads"] == ["munmap", "imap:s=1,n=64", "imap:s=1,n=16", "imap:s=1,n=256"]
    assert meta["knobs"]["SWEEP"] == "imap:s=1,n=16,64,256"
    assert meta["sweeps"] == [{
        "spec": "imap:s=1,n=16,64,256", "name": "imap", "key": "n", "values": [16, 64, 256],
        "fixed": {"s": 1}, "workloads": ["imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256"]}]
    assert meta["tools"].startswith('cyclictest V 2.6 "rt" \\x; stress-ng')
    assert [v["name"] for v in meta["variants"]] == ["base", "patch"] and meta["repeat"] == 1
    # one run, one sweep
    proc, boots = run_matrix(WORKLOADS="munmap imap:s=1,n=64", SWEEP="imap:s=1,n=16,64",
                             CALIB="", REPEAT="1")
    assert proc.returncode != 0 and boots == []
    assert "measured with SWEEP='imap:s=1,n=16,64,256'; start a new RUN_ID" in proc.stderr


def test_matrix_runs_the_sweep_alone_when_workloads_is_empty(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(WORKLOADS="", SWEEP="imap:n=8,s=1,2", CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    assert sorted({line.split()[0].split("/")[3] for line in boots}) == [
        "imap:n=8,s=1", "imap:n=8,s=2"]
    assert json.loads((run / "meta.json").read_text())["sweeps"][0]["fixed"] == {"n": 8}
    proc, boots = run_matrix(WORKLOADS="", SWEEP="", CALIB="", RUN_ID="u")
    assert proc.returncode != 0 and "nothing to run: WORKLOADS and SWEEP" in proc.stderr


def test_matrix_without_sweep_records_none(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["knobs"]["SWEEP"], meta["sweeps"], meta["workloads"]) == (
        "", [], ["munmap", "idle"])


def test_make_lists_sweep_and_keeps_it_out_of_calibrate_and_check_kernels():
    out = subprocess.run(["make", "--no-print-directory", "help", "SWEEP=imap:n=16,64"],
                         cwd=ROOT, env=clean_environ(), text=True, capture_output=True,
                         check=True).stdout
    assert '  SWEEP=imap:n=16,64 (sweeps NAME:KEY=V1,V2,...[,KEY=VALUE...]) one workload' in out
    for target in ("calibrate", "check-kernels"):
        assert " SWEEP= " in orchestrator_line(target, "RUN_ID=x", "SWEEP=imap:n=1,2"), target


# STEPS=each: every prefix of the patched side's own patches is a variant,
# built and booted between the baseline and the patched variant.
STEPPED = "base=pre mine=pre+ser+more"


def test_matrix_steps_each_boots_every_prefix_and_records_the_steps(matrix, tmp_path):
    run_matrix, run = matrix
    proc, boots = run_matrix(VARIANTS=STEPPED, STEPS="each", WORKLOADS="munmap", REPEAT="2",
                             CALIB_WORKLOADS="calib")
    assert proc.returncode == 0, proc.stderr
    order = ["base", "mine.1", "mine.2", "mine.3", "mine"]
    # a calibration boot per variant, then per repeat each variant's clean
    # and traced boot, the steps in order between baseline and patched
    assert [line.split()[0] for line in boots] == (
        ["t/cells/%s/calib/traced/.r1.tmp" % n for n in order]
        + ["t/cells/%s/munmap/%s/.r%d.tmp" % (n, boot, r)
           for r in (1, 2) for n in order for boot in ("clean", "traced")])
    assert "STEPS=each: mine.1 mine.2 mine.3 mine" in proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert [v["name"] for v in meta["variants"]] == order
    assert (meta["knobs"]["VARIANTS"], meta["knobs"]["STEPS"]) == (STEPPED, "each")
    assert meta["steps"] == [
        {"variant": "mine.1", "previous": "base", "patch": "0001-a.patch", "series": "ser",
         "index": 1},
        {"variant": "mine.2", "previous": "mine.1", "patch": "0002-b.patch", "series": "ser",
         "index": 2},
        {"variant": "mine.3", "previous": "mine.2", "patch": "0003-c.patch", "series": "ser",
         "index": 3},
        {"variant": "mine", "previous": "mine.3", "patch": "0001-a.patch", "series": "more",
         "index": 4}]
    assert sorted(p.name for p in (run / "kernels").iterdir()) == sorted(order)
    # one run, one STEPS
    proc, boots = run_matrix(VARIANTS=STEPPED, WORKLOADS="munmap", REPEAT="2",
                             CALIB_WORKLOADS="calib")
    assert proc.returncode != 0 and boots == []
    assert "measured with STEPS=each; start a new RUN_ID" in proc.stderr


def test_matrix_resumes_a_run_of_steps_all_only_with_steps_all(matrix):
    run_matrix, run = matrix
    assert run_matrix(REPEAT="1", CALIB="")[0].returncode == 0
    proc, boots = run_matrix(REPEAT="1", CALIB="", VARIANTS="base=pre mine=pre+more",
                             STEPS="each")
    assert proc.returncode != 0 and "measured with STEPS=all" in proc.stderr
    assert boots == []


def test_step_series_hold_the_first_patches_and_hash_apart(matrix, tmp_path):
    run_matrix, run = matrix
    values = knobs.read({"BUILD_DIR": str(tmp_path / "build"), "INSTRUMENTATION_SERIES": "",
                         "PATCHES_DIR": str(tmp_path / "patches")})
    steps_dir = tmp_path / "build/steps"
    source = str(tmp_path / "build/linux-source-6.1")

    def shas():
        return [variants.series_sha256(Resolver(values).resolve(spec), source) for spec in (
            "base=pre", "mine.1=pre+%s/mine.1" % steps_dir, "mine.2=pre+%s/mine.2" % steps_dir,
            "mine.3=pre+ser", "mine=pre+ser+more")]

    assert run_matrix(VARIANTS=STEPPED, STEPS="each", WORKLOADS="munmap", REPEAT="1",
                      CALIB="")[0].returncode == 0
    # a partial series per step that ends inside its directory; the step
    # that completes ser is pre+ser itself
    assert sorted(p.name for p in steps_dir.iterdir()) == ["mine.1", "mine.2"]
    ser = tmp_path / "patches/ser"
    assert (steps_dir / "mine.1/series").read_text() == "0001-a.patch\n"
    assert (steps_dir / "mine.2/series").read_text() == "0001-a.patch\n0002-b.patch\n"
    assert sorted(p.name for p in (steps_dir / "mine.2").iterdir()) == [
        "0001-a.patch", "0002-b.patch", "series"]
    for name in ("0001-a.patch", "0002-b.patch"):
        assert (steps_dir / "mine.2" / name).read_bytes() == (ser / name).read_bytes()
    first = shas()
    assert len(set(first)) == 5
    # each step variant's build.json has its hash
    assert [json.loads((tmp_path / "build/kernels" / n / "build.json").read_text())[
        "series_sha256"] for n in ("base", "mine.1", "mine.2", "mine.3", "mine")] == first
    # written again by the next run: the same hashes, so the same trees
    # and kernels
    assert run_matrix(VARIANTS=STEPPED, STEPS="each", WORKLOADS="munmap", REPEAT="1",
                      CALIB="", RUN_ID="u")[0].returncode == 0
    assert shas() == first
    # a changed patch: the steps that carry it hash anew, the one before
    # it does not
    (ser / "0002-b.patch").write_text("patch ser/0002-b.patch, v2\n")
    assert run_matrix(VARIANTS=STEPPED, STEPS="each", WORKLOADS="munmap", REPEAT="1",
                      CALIB="", RUN_ID="v")[0].returncode == 0
    again = shas()
    assert again[:2] == first[:2]
    assert all(a != b for a, b in zip(again[2:], first[2:]))


def test_make_passes_steps_and_keeps_it_out_of_calibrate_and_check_kernels():
    show = ["make", "--no-print-directory", "--eval", "show-steps: ; @echo $$STEPS",
            "show-steps"]
    for args, want in (((), "all"), (("STEPS=each",), "each")):
        out = subprocess.run(show + list(args), cwd=ROOT, env=clean_environ(), text=True,
                             capture_output=True, check=True).stdout
        assert out == want + "\n"
    for target in ("calibrate", "check-kernels"):
        assert " STEPS=all " in orchestrator_line(target, "RUN_ID=x", "STEPS=each"), target


def test_make_check_kernels_ends_with_its_forward_progress_boot_on_several_vcpus():
    text = "\n".join(make_dry("check-kernels", "RUN_ID=x", "CHECK_SMP=3")).replace("\\\n", " ")
    runs = [line.split() for line in text.splitlines() if "-m orchestrator run" in line]
    assert len(runs) == 2
    assert {"FLAVOR=check", "STRICT=1", "RUN_ID=check-x"} <= set(runs[0])
    assert not any(w.startswith("SMP=") for w in runs[0])
    assert {"FLAVOR=check", "STRICT=1", "SMP=3", "RUN_ID=check-smp-x", "REPEAT=1",
            'WORKLOADS="imap:n=128,s=1,w=2"'} <= set(runs[1])
    assert 'VARIANTS="baseline patched"' in " ".join(runs[1])


def test_the_forward_progress_workloads_are_registry_entries_with_writers():
    entries = knobs.knob("CHECK_SMP_WORKLOADS").default.split()
    assert [workloads.parse_entry(e)[1].get("w", 1) >= 2 for e in entries] == [True] * len(entries)
    with pytest.raises(knobs.KnobError):
        knobs.knob("CHECK_SMP").check("1", {})


# A boot's cell.json is written by a serializer: a console cause and a QEMU
# command line keep their quotes, backslashes and newlines.
NASTY = {"cause": 'runner: FAIL: "quoted" \\back\\slash\nsecond line\ttab $HOME `x`',
         "qemu_cmdline": "qemu-system-x86_64 -kernel '/tmp/a dir/\"b\"\\c/bzImage' "
                         "-drive file=/x,,y/results.img"}


def test_cell_json_keeps_a_console_cause_and_a_qemu_path_intact(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(CALIB="", REPEAT="1", WORKLOADS="munmap", STRICT="1",
                             STUB_FAIL="mmlat.trace=windows", STUB_CAUSE=NASTY["cause"],
                             STUB_QEMU=NASTY["qemu_cmdline"])
    assert proc.returncode != 0 and "2 of 4 boots failed" in proc.stderr, proc.stderr
    cell = json.loads((run / "cells/base/munmap/traced/r1/cell.json").read_text())
    assert (cell["status"], cell["cause"]) == ("failed", NASTY["cause"])
    assert cell["qemu_cmdline"] == NASTY["qemu_cmdline"]
    build = json.loads((run / "kernels/base/build.json").read_text())
    assert cell["series_sha256"] == build["series_sha256"] and cell["wall_seconds"] == 1
    assert "base/munmap/traced/r1: " + NASTY["cause"] in proc.stderr


def test_make_kernels_checks_the_variants_before_the_config(tmp_path):
    env = dict(clean_environ(), BUILD_DIR=str(tmp_path / "build"), **NO_ARCHIVE)
    t0 = time.monotonic()
    proc = subprocess.run(["make", "--no-print-directory", "kernels", "VARIANTS=baseline nosuch"],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=60)
    assert proc.returncode != 0 and "VARIANTS: unknown variant 'nosuch'" in proc.stderr
    assert "declares: mainline mainline-6.12 mainline-7.3 baseline patched" in proc.stderr
    assert time.monotonic() - t0 < 2 and not (tmp_path / "build").exists()


# REPEAT=auto: rounds of boots while the analysis's rule (mmlat look, a
# stub here) leaves a primary endpoint open; each round recorded in
# meta.json before its boots, of the cells and boot kinds the open
# endpoints need.
def look_answer(another, needs=None, look=1):
    return {"look": look, "another_round": another, "needs": needs or {},
            "open": ["munmap cyclictest max"] if another else [],
            "progress": "look %d: %s" % (look, "open" if another else "all decided")}


def test_repeat_auto_boots_rounds_until_the_rule_decides(matrix):
    run_matrix, run = matrix
    answers = [look_answer(True, {"munmap": ["clean"]}),
               look_answer(True, {"idle": ["clean", "traced"]}, 2), look_answer(False, look=3)]
    proc, boots = run_matrix(REPEAT="auto", CALIB="", VARIANTS="base patch", BASELINE="base",
                             PATCHED="patch", STUB_LOOKS=json.dumps(answers))
    assert proc.returncode == 0, proc.stderr
    dirs = [line.split()[0] for line in boots]
    # round 1: repeats 1..6 of everything; round 2: 7..8 of munmap's clean
    # boots; round 3: 9..10 of idle's clean and traced ones
    assert len(dirs) == 6 * 2 * 2 * 2 + 2 * 2 + 2 * 2 * 2
    assert dirs[48:52] == ["t/cells/%s/munmap/clean/.r%d.tmp" % (v, r)
                           for r in (7, 8) for v in ("base", "patch")]
    assert all("/idle/" in d for d in dirs[52:])
    meta = json.loads((run / "meta.json").read_text())
    assert meta["repeat"] == "auto" and [(r["first"], r["last"], r["spent"], r["needs"])
                                         for r in meta["rounds"]] == [
        (1, 6, 0.2, {}), (7, 8, 8 / 30, {"munmap": ["clean"]}),
        (9, 10, 1 / 3, {"idle": ["clean", "traced"]})]
    # each look saw the rounds done, and was asked about baseline and patched
    looks = (run.parent / "looks.log").read_text().splitlines()
    assert [len(json.loads(line.split(" ", 4)[4])) for line in looks] == [1, 2, 3]
    assert looks[0].startswith("--baseline base --patched patch ")
    assert "REPEAT=auto: look 3: all decided" in proc.stderr


def test_repeat_auto_resumes_its_rounds_and_stops_at_the_budget(matrix):
    run_matrix, run = matrix
    env = dict(REPEAT="auto", CALIB="", WORKLOADS="munmap", TRACE="none", BASELINE="base",
               PATCHED="patch")
    # the budget: a look after each round, another round each time
    answers = [look_answer(True, {"munmap": ["clean"]}, k) for k in range(1, 14)]
    proc, boots = run_matrix(STUB_LOOKS=json.dumps(answers), **env)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["rounds"][-1]["last"] == 30 and meta["rounds"][-1]["spent"] == 1
    assert len(boots) == 30 * 2
    # resumed with a round's boots gone: booted again, and no look more
    shutil.rmtree(run / "cells/base/munmap/clean/r29")
    (run.parent / "looks.log").unlink()
    proc, boots = run_matrix(STUB_LOOKS=json.dumps(answers), **env)
    assert proc.returncode == 0, proc.stderr
    assert [line.split()[0] for line in boots] == ["t/cells/base/munmap/clean/.r29.tmp"]
    assert not (run.parent / "looks.log").exists()
    # one run, REPEAT=auto or a fixed REPEAT
    proc, boots = run_matrix(**dict(env, REPEAT="2"))
    assert proc.returncode != 0 and "measured with REPEAT=auto" in proc.stderr


def test_repeat_auto_needs_baseline_and_patched_among_the_variants(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(REPEAT="auto", CALIB="")
    assert proc.returncode != 0 and boots == []
    assert ("REPEAT=auto compares BASELINE with PATCHED, but BASELINE='baseline' is none of "
            "the variants (base patch)") in proc.stderr


def test_every_guest_knob_reaches_the_guest_job(matrix):
    """A knob with a job key (plan/knobs.py) goes to every boot's job as
    given; TRACE's is the instrument of a traced boot, none of a clean
    one."""
    run_matrix, run = matrix
    proc, boots = run_matrix(SIZE_MIB="8", DURATION="2", CALIB="", REPEAT="1",
                             WORKLOADS="munmap")
    assert proc.returncode == 0, proc.stderr
    jobs = {line.split()[0]: line.split(" ", 1)[1] for line in boots}
    values = knobs.read({"SIZE_MIB": "8", "DURATION": "2", "TRACE": "none"})
    assert jobs["t/cells/base/munmap/clean/.r1.tmp"] == " ".join(
        ["mmlat.workload=munmap"]
        + ["mmlat.%s=%s" % (k.job_key, values[k.name]) for k in knobs.KNOBS if k.job_key]
        + ["mmlat.seed=1"])
    assert "mmlat.trace=windows" in jobs["t/cells/base/munmap/traced/.r1.tmp"]


def test_meta_names_the_mmlat_commit_and_uncommitted_changes(tmp_path, monkeypatch):
    from orchestrator import records
    from plan import knobs
    monkeypatch.setattr(knobs, "ROOT", str(tmp_path))
    assert records.mmlat_commit() == ""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (tmp_path / "Makefile").write_text("all:\n")
    subprocess.run(git + ["add", "Makefile"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "m"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert records.mmlat_commit() == head
    (tmp_path / "Makefile").write_text("all:\n\ttrue\n")
    assert records.mmlat_commit() == head + "-dirty"


# TRACE=plugin: one boot per repeat, the clean boot, which QEMU loads the
# plugin into; its cell.json says the plugin recorded its windows.
def test_matrix_trace_plugin_boots_each_repeat_once_with_the_plugin(matrix, tmp_path):
    run_matrix, run = matrix
    proc, boots = run_matrix(TRACE="plugin", CALIB="", ICOUNT_SHIFT="4")
    assert proc.returncode == 0, proc.stderr
    assert len(boots) == 8 and all("/clean/" in line and "mmlat.trace=none" in line
                                   for line in boots)
    meta = json.loads((run / "meta.json").read_text())
    # the icount QEMU, the one the plugin is built for
    assert meta["boots"] == ["clean"]
    assert meta["qemu_binary"] == str(tmp_path / "build/qemu-bpo/usr/bin/qemu-system-x86_64")
    for line in boots:
        variant = line.split("/")[2]
        plugin = dict(kv.split("=", 1) for kv in line.split(" plugin=", 1)[1].split(",")[1:])
        assert plugin["shift"] == "4" and plugin["mark"] == "rb_simple_write"
        assert plugin["classes"] == str(tmp_path / "root/guest/classes.txt")
        kdir = os.path.dirname(plugin["map"])
        assert kdir.endswith("kernel-" + variant) and plugin["consts"] == kdir + "/consts.txt"
    assert (run.parent / "offsets.log").read_text().split() == [
        str(tmp_path / "build/trees" / v / "obj") for v in ("base", "patch")]
    cells = [json.loads(p.read_text()) for p in run.glob("cells/*/*/clean/r*/cell.json")]
    assert len(cells) == 8 and {c["instrument"] for c in cells} == {"plugin"}


def test_matrix_records_the_instrument_of_traced_boots_only(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(CALIB="")
    assert proc.returncode == 0, proc.stderr
    kinds = {p.parent.parent.name: json.loads(p.read_text())["instrument"]
             for p in run.glob("cells/*/*/*/r*/cell.json")}
    assert kinds == {"clean": "", "traced": "windows"}


@pytest.mark.parametrize("env, message", [
    ({"ACCEL": "kvm"}, "TRACE=plugin times windows in guest instructions: it needs "
                       "ACCEL=tcg-icount, not kvm"),
    ({"SMP": "2"}, "TRACE=plugin runs one vCPU"),
])
def test_matrix_refuses_the_plugin_where_it_cannot_run_before_any_build(matrix, env, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(**dict({"TRACE": "plugin", "CALIB": ""}, **env))
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert boots == [] and not run.exists()


# TRACE=auto, the default: the plugin where it can run, else the window
# module; resolved once, after ACCEL=auto's probe, into the plan (meta.json's
# trace and boots), the knob kept as given.
@pytest.mark.parametrize("env, trace", [
    ({"ACCEL": "tcg-icount"}, "plugin"),
    ({"ACCEL": "auto"}, "plugin"),
    ({"ACCEL": "auto", "STUB_ACCEL": "kvm"}, "windows"),
    ({"ACCEL": "tcg-mt"}, "windows"),
    ({"ACCEL": "tcg-icount", "SMP": "2"}, "windows"),
])
def test_matrix_trace_auto_resolves_with_the_accelerator(matrix, env, trace):
    run_matrix, run = matrix
    proc, boots = run_matrix(TRACE="auto", CALIB="", REPEAT="1", **env)
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    kinds = ["clean"] if trace == "plugin" else ["clean", "traced"]
    assert meta["trace"] == trace and meta["boots"] == kinds
    assert meta["knobs"]["TRACE"] == "auto"
    assert "instrument: TRACE=auto is %s" % trace in proc.stderr
    assert len(boots) == 2 * 2 * len(kinds)
    assert all((" plugin=" in line) == (trace == "plugin") for line in boots)
    assert all(("mmlat.trace=windows" in line) == ("/traced/" in line) for line in boots)
    cells = {json.loads(p.read_text())["instrument"] for p in run.glob("cells/*/*/*/r1/cell.json")}
    assert cells == ({"plugin"} if trace == "plugin" else {"", "windows"})


def test_matrix_trace_auto_resumes_only_as_it_resolved(matrix):
    run_matrix, run = matrix
    assert run_matrix(TRACE="auto", CALIB="", REPEAT="1")[0].returncode == 0
    proc, boots = run_matrix(TRACE="plugin", CALIB="", REPEAT="1")
    assert proc.returncode == 0 and boots == [], proc.stderr
    proc, _ = run_matrix(TRACE="auto", CALIB="", REPEAT="1", ACCEL="tcg-icount", SMP="2")
    assert proc.returncode != 0 and "another SMP" in proc.stderr


# Under the plugin the calibration boot is the boot it loads into, the
# clean one, with the event log the read-back needs: every window at least
# as long as the shortest injected one.
def test_matrix_calibrates_under_the_plugin_with_its_event_log(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(TRACE="auto", CALIB="preempt/irq:50/200", CALIB_WORKLOADS="calib",
                             REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    dirs = [line.split()[0] for line in boots]
    assert dirs[:2] == ["t/cells/base/calib/clean/.r1.tmp", "t/cells/patch/calib/clean/.r1.tmp"]
    for line in boots:
        calibrated = "/calib/" in line
        assert ("mmlat.calib=p50,i50,p200,i200" in line) == calibrated
        assert "mmlat.trace=none" in line and " plugin=" in line
        assert line.endswith(",log_us=50") == calibrated
    cell = json.loads((run / "cells/base/calib/clean/r1/cell.json").read_text())
    assert cell["calibrated"] and cell["instrument"] == "plugin"
