"""Unit tests of the host-side shell glue: config checking, variants and
series, patch application into variant trees, and the boot matrix. They use
tiny fake trees and stub boots, so they need neither the kernel source nor
QEMU."""
import json
import os
import re
import shutil
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(args, env=None, check=False):
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(args, cwd=ROOT, env=full_env, text=True,
                          capture_output=True)
    if check and proc.returncode:
        raise AssertionError(proc.stderr)
    return proc


def test_config_check_names_dropped_options(tmp_path):
    config = tmp_path / "config"
    config.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=8\n# CONFIG_KSM is not set\n")
    frag = tmp_path / "frag.config"
    frag.write_text(textwrap.dedent("""\
        # comment
        CONFIG_SMP=y
        CONFIG_NR_CPUS=4
        CONFIG_PREEMPT=y
        # CONFIG_KSM is not set
        # CONFIG_HUGETLBFS is not set
        """))
    out = run(["bash", "bench/kconfig.sh", "check", str(config), str(frag)],
              check=True).stdout.splitlines()
    assert sorted(line.split(":")[0] for line in out) == [
        "CONFIG_NR_CPUS", "CONFIG_PREEMPT"]
    assert any("wanted 4, got 8" in line for line in out)
    assert any("wanted y, got unset" in line for line in out)


def test_shipped_fragment_is_all_config_lines(tmp_path):
    frag = ROOT / "bench/config/mmlat.config"
    empty = tmp_path / "empty"
    empty.write_text("")
    out = run(["bash", "bench/kconfig.sh", "check", str(empty), str(frag)],
              check=True).stdout
    assert "not a config line" not in out
    assert "CONFIG_PREEMPT: wanted y" in out


def make_patch(tmp_path, name, old, new, path="mm/memory.c"):
    body = textwrap.dedent(f"""\
        From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
        From: Test <test@localhost>
        Subject: [PATCH] {name}

        ---
        diff --git a/{path} b/{path}
        --- a/{path}
        +++ b/{path}
        @@ -1,3 +1,3 @@
         one
        -{old}
        +{new}
         three
        """)
    return body


@pytest.fixture
def fake_env(tmp_path):
    # As in the real layout, build/ lies inside a git work tree: git apply
    # run there must still patch the variant tree, not skip it silently.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    build = tmp_path / "build"
    pristine = build / "linux-source-6.1"
    (pristine / "mm").mkdir(parents=True)
    (pristine / "Makefile").write_text("# fake\n")
    (pristine / "mm/memory.c").write_text("one\ntwo\nthree\n")
    patches = tmp_path / "patches"
    good = patches / "good"
    good.mkdir(parents=True)
    (good / "0001-good.patch").write_text(make_patch(tmp_path, "good", "two", "TWO"))
    (good / "series").write_text("# a comment\n0001-good.patch\n")
    bad = patches / "bad"
    bad.mkdir()
    (bad / "0001-bad.patch").write_text(make_patch(tmp_path, "bad", "zwei", "ZWEI"))
    (bad / "series").write_text("0001-bad.patch\n")
    conf = tmp_path / "variants.conf"
    conf.write_text("mainline:\ngood: good\nboth: good bad\n")
    env = {"BUILD_DIR": str(build), "PATCHES_DIR": str(patches),
           "VARIANTS_CONF": str(conf), "INSTRUMENTATION_SERIES": ""}
    return env, pristine


def test_variant_tree_applies_series_and_keeps_pristine(fake_env):
    env, pristine = fake_env
    out = run(["bash", "bench/tree.sh", "variant", "good"], env, check=True)
    tree = Path(out.stdout.strip())
    assert (tree / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"
    assert (tree / ".mmlat-series-sha256").read_text().strip()


def test_patch_that_does_not_apply_is_named_and_leaves_old_tree(fake_env):
    env, pristine = fake_env
    good = Path(run(["bash", "bench/tree.sh", "variant", "good"], env,
                     check=True).stdout.strip())
    res = run(["bash", "bench/tree.sh", "variant", "both"], env)
    assert res.returncode != 0
    assert "0001-bad.patch does not apply" in res.stderr
    assert "mm/memory.c" in res.stderr
    assert not (good.parent / "both").exists()
    assert (good / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"


def test_unknown_variant_and_missing_series_are_errors(fake_env):
    env, _ = fake_env
    res = run(["bash", "bench/tree.sh", "variant", "nosuch"], env)
    assert res.returncode != 0 and "unknown variant 'nosuch'" in res.stderr
    res = run(["bash", "bench/tree.sh", "variant", "x=missing-dir"], env)
    assert res.returncode != 0 and "does not exist" in res.stderr


def series_sha(env, spec):
    script = ('. bench/lib.sh; . bench/variants.sh; resolve_variant "$1"; '
              'variant_sha256')
    return run(["bash", "-c", script, "sha", spec], env, check=True).stdout.strip()


def test_series_hash_follows_patch_content(fake_env, tmp_path):
    env, _ = fake_env
    first = series_sha(env, "good")
    assert first == series_sha(env, "adhoc=good")
    assert first != series_sha(env, "mainline")
    patch = tmp_path / "patches/good/0001-good.patch"
    patch.write_text(patch.read_text().replace("+TWO", "+Two"))
    assert series_sha(env, "good") != first


def first_splat(tmp_path, lines):
    log = tmp_path / "dmesg.txt"
    log.write_text("".join(line + "\n" for line in lines))
    return run(["bash", "-c", '. bench/lib.sh && first_splat "$1"', "-", str(log)])


# Lines as a check-config 6.1 guest prints them.
BENIGN = [
    "[    0.270780] rcu: \tRCU lockdep checking is enabled.",
    "[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar",
    "[    0.551852] smpboot: Total of 1 processors activated (2000.01 BogoMIPS)",
]


def test_check_boot_info_lines_are_not_splats(tmp_path):
    assert first_splat(tmp_path, BENIGN).returncode != 0


@pytest.mark.parametrize("splat", [
    "BUG: sleeping function called from invalid context at mm/memory.c:1234",
    "BUG: scheduling while atomic: mmlat-munmap/91/0x00000002",
    "WARNING: possible circular locking dependency detected",
    "WARNING: possible recursive locking detected",
    "WARNING: inconsistent lock state",
    "WARNING: suspicious RCU usage",
    "WARNING: CPU: 0 PID: 1 at mm/rmap.c:300 anon_vma_clone+0x1/0x2",
])
def test_check_boot_splats_are_named(tmp_path, splat):
    res = first_splat(tmp_path, BENIGN + ["[   12.345678] " + splat, "[   12.4] next"])
    assert res.returncode == 0
    assert res.stdout.strip() == splat


# The boot matrix, with every stage that needs a kernel or QEMU replaced by
# a stub: run-matrix.sh itself runs unchanged from a copy of bench/.
STUBS = {
    "bench/deps.sh": "exit 0\n",
    "bench/tree.sh": "exit 0\n",
    "bench/kconfig.sh": 'mkdir -p "$2"; echo c0ffee > "$2/config.sha256"\n',
    "bench/build.sh": textwrap.dedent("""\
        . "$(dirname "$0")/lib.sh"; . "$(dirname "$0")/variants.sh"
        resolve_variant "$1"
        # STUB_BUILD_SLEEP: seconds a build takes; build.pid: this build
        echo $$ > "$BUILD_DIR/build.pid"
        sleep "${STUB_BUILD_SLEEP:-0}"
        d=$KERNELS_DIR/$VARIANT_NAME
        mkdir -p "$d"
        echo '{"series_sha256": "e3b0", "kernel_version": "6.1.0"}' > "$d/build.json"
        touch "$d/System.map" "$d/config" "$d/bzImage"
        """),
    "guest/initramfs.sh": 'echo "$1" > "${!#}"\n',
    "bench/versions.sh": 'echo \'{"icount_qemu": "stub", "packages": {}}\'\n',
    # ACCEL=auto: the probe's verdict
    "bench/accel.sh": "echo tcg-icount\n",
    # One line per boot in boots.log: the output dir and the guest job.
    # STUB_FAIL: boots whose job contains it fail.
    "bench/qemu.sh": textwrap.dedent("""\
        out=$1 job=$4
        echo "${out#$MMLAT_RESULTS/} $job" >> "$MMLAT_RESULTS/boots.log"
        mkdir -p "$out/guest"
        echo "$job" > "$out/console.log"
        printf '%s\\n' "${STUB_QEMU:-qemu-stub}" > "$out/qemu.cmdline"
        status=ok cause=
        case $job in *"${STUB_FAIL:-none-fails}"*) status=failed cause=${STUB_CAUSE:-stub failure} ;; esac
        # STUB_SLEEP: seconds each boot takes; events.log: when each
        # boot starts and ends
        echo "start $out" >> "$MMLAT_RESULTS/events.log"
        sleep "${STUB_SLEEP:-0}"
        echo "end $out" >> "$MMLAT_RESULTS/events.log"
        /usr/bin/python3 "$(dirname "$0")/record.py" write status="$status" cause="$cause" \\
            wall_seconds:=1 guest_seconds_to_runner:=2 accel="$ACCEL" > "$out/boot.json"
        [ "$status" = ok ]
        """),
}


# The matrix's series directories: a baseline's (pre), a series of three
# patches (ser), one more patch of the same file name in another directory
# (more), and a directory that lists none (empty).
STEP_SERIES = {"pre": ["0001-pre.patch"],
               "ser": ["0001-a.patch", "0002-b.patch", "0003-c.patch"],
               "more": ["0001-a.patch"], "empty": []}


def fake_qemu(path, version):
    """A QEMU binary that prints its version line and nothing else."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'QEMU emulator version %s (fake)'\n"
                    "echo 'Copyright (c) 2003-2025 Fabrice Bellard'\n" % version)
    path.chmod(0o755)
    return path


PINNED_QEMU = re.search(r"^QEMU_PINNED_VERSION=(\S+)$",
                        (ROOT / "bench/icount-qemu.sh").read_text(), re.M).group(1)


def provisioned_icount_qemu(build, version=PINNED_QEMU):
    """build/qemu-bpo as bench/icount-qemu.sh provision leaves it, with a
    fake binary: the icount QEMU of a matrix that boots stubs."""
    bpo = build / "qemu-bpo"
    qemu = fake_qemu(bpo / "usr/bin/qemu-system-x86_64", "10.0.2")
    (bpo / "provision.json").write_text(json.dumps({"version": version, "qemu": "10.0.2"}))
    return qemu


@pytest.fixture
def matrix(tmp_path, terminal_job):
    root = tmp_path / "root"
    for name in ("run-matrix.sh", "lib.sh", "variants.sh", "steps.sh", "workloads.sh",
                 "workloads.conf", "knobs.sh", "knobs.conf", "record.py", "icount-qemu.sh"):
        (root / "bench").mkdir(parents=True, exist_ok=True)
        (root / "bench" / name).write_text((ROOT / "bench" / name).read_text())
    for rel, body in STUBS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    # the calibration request is checked with the analysis's own parser
    (root / "analysis").symlink_to(ROOT / "analysis")
    build = tmp_path / "build"
    (build / "linux-source-6.1").mkdir(parents=True)
    (build / "linux-source-6.1/Makefile").write_text("kernelversion:\n\t@echo 6.1.0\n")
    provisioned_icount_qemu(build)
    conf = tmp_path / "variants.conf"
    conf.write_text("base:\npatch:\n")
    # series directories for ad hoc variants (STEPS=each): the stub build
    # applies none of their patches
    for d, names in STEP_SERIES.items():
        (tmp_path / "patches" / d).mkdir(parents=True)
        (tmp_path / "patches" / d / "series").write_text(
            "# a comment\n" + "".join(n + "\n" for n in names))
        for n in names:
            (tmp_path / "patches" / d / n).write_text("patch %s/%s\n" % (d, n))
    results = tmp_path / "results"
    base_env = {"BUILD_DIR": str(build), "VARIANTS_CONF": str(conf),
                "PATCHES_DIR": str(tmp_path / "patches"),
                "INSTRUMENTATION_SERIES": "",
                "RESULTS_DIR": str(results), "MMLAT_RESULTS": str(results),
                "RUN_ID": "t", "VARIANTS": "base patch", "WORKLOADS": "munmap idle",
                "REPEAT": "2", "DURATION": "1", "ACCEL": "tcg-icount",
                "TRACE": "windows", "CALIB": "preempt:200"}

    def run_matrix(**env):
        full = dict(base_env, **env)
        proc = subprocess.run(["bash", str(root / "bench/run-matrix.sh")],
                              env=dict(os.environ, **full), text=True,
                              capture_output=True)
        log = results / "boots.log"
        boots = log.read_text().splitlines() if log.exists() else []
        if log.exists():
            log.unlink()
        return proc, boots

    def start(**env):
        """The matrix in the background, in a process group of its own as a
        terminal's foreground job is."""
        return subprocess.Popen(["bash", str(root / "bench/run-matrix.sh")],
                                env=dict(os.environ, **dict(base_env, **env)), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=terminal_job)
    run_matrix.start = start
    return run_matrix, results / "t"


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
        assert ("mmlat.calib=preempt:200" in job) == (traced and "/idle/" in d)
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
        assert "mmlat.calib=preempt:200" in job and "mmlat.seed=1" in job
    # the workloads' boots, idle's included, carry no injected window
    assert not any("mmlat.calib" in line for line in boots[2:])
    assert sorted(p.relative_to(run).as_posix() for p in run.glob("cells/*/calib/*/*")) == [
        "cells/base/calib/traced/r1", "cells/patch/calib/traced/r1"]
    cell = json.loads((run / "cells/patch/calib/traced/r1/cell.json").read_text())
    assert (cell["workload"], cell["boot"], cell["repeat"]) == ("calib", "traced", 1)
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["calib"], meta["calib_workloads"]) == ("preempt:200", "calib")
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
    assert json.loads((run / "meta.json").read_text())["calib"] == ""


def test_matrix_refuses_calib_as_a_workload(matrix):
    run_matrix, _ = matrix
    proc, boots = run_matrix(WORKLOADS="munmap calib")
    assert proc.returncode != 0 and "calib is the calibration boot" in proc.stderr
    assert boots == []


def make_dry(*args):
    """The commands make would run (make -n), with none of the knobs
    taken from this environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("CALIB", "CALIB_WORKLOADS", "TRACE", "MAKEFLAGS")}
    proc = subprocess.run(["make", "-n", "--no-print-directory", *args], cwd=ROOT,
                          env=env, text=True, capture_output=True, check=True)
    return proc.stdout.splitlines()


@pytest.mark.parametrize("args, calib", [
    ((), "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"),
    (("CALIB=",), ""),
    (("TRACE=none",), ""),
    (("CALIB=irq:50/500",), "irq:50/500"),
])
def test_make_bench_calibrates_in_its_own_boot_then_checks_before_the_report(args, calib):
    lines = make_dry("bench", *args)
    assert lines[0] == 'CALIB="%s" CALIB_WORKLOADS=calib bash bench/run-matrix.sh' % calib
    steps = [line.split(" -m mmlat ")[1].split()[0] for line in lines[1:]]
    assert steps == ["summary", "calibrate", "report"]
    # a failed calibration does not stop the report: its header says so
    assert lines[2].endswith("|| true")


def test_make_report_checks_the_calibration_and_calibrate_keeps_its_defaults():
    lines = make_dry("report", "RUN=results/x")
    assert [line.split(" -m mmlat ")[1] for line in lines if " -m mmlat " in line] == [
        'summary "results/x"', 'calibrate "results/x" || true',
        'report "results/x" --baseline baseline --patched patched']
    cal = " ".join(make_dry("calibrate", "RUN_ID=x"))
    assert 'CALIB_WORKLOADS="idle munmap"' in cal
    assert 'CALIB="preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x3"' in cal


@pytest.mark.parametrize("env, message", [
    ({"CALIB": "preempt:abc"}, "CALIB='preempt:abc': ValueError: bad calibration item"),
    ({"CALIB": "bogus:10"}, "kinds are preempt, irq, spin, ptl, ptl_nested"),
    ({"CALIB_WORKLOADS": "munmpa"},
     "CALIB_WORKLOADS names 'munmpa', which is neither calib nor one of WORKLOADS"),
])
def test_matrix_refuses_a_bad_calibration_request_before_any_boot(matrix, env, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(**env)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert boots == [] and not run.exists()


# Workload parameters: NAME:KEY=VALUE,... entries, checked against
# bench/workloads.conf before anything is built.
def test_matrix_passes_workload_parameters_as_a_job_key(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(WORKLOADS="imap:n=256 munmap imap:n=1024,s=1", CALIB="",
                             REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    jobs = {line.split()[0]: line.split(" ", 1)[1] for line in boots}
    job = jobs["t/cells/base/imap:n=256/clean/.r1.tmp"]
    assert job.startswith("mmlat.workload=imap mmlat.params=n=256 mmlat.duration=1 ")
    # a plain workload's job is what it was before parameters
    assert jobs["t/cells/patch/munmap/traced/.r1.tmp"] == (
        "mmlat.workload=munmap mmlat.duration=1 mmlat.trace=windows mmlat.seed=1 ")
    cell = json.loads((run / "cells/patch/imap:n=256/traced/r1/cell.json").read_text())
    assert cell["workload"] == "imap:n=256"
    assert jobs["t/cells/patch/imap:n=1024,s=1/clean/.r1.tmp"].startswith(
        "mmlat.workload=imap mmlat.params=n=1024,s=1 ")
    assert json.loads((run / "meta.json").read_text())["workloads"] == (
        "imap:n=256 munmap imap:n=1024,s=1")


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
    ("munmap:n=3", "workload 'munmap' takes no parameters (with parameters: anonchain imap reclaim)"),
])
def test_matrix_refuses_bad_workload_parameters_before_anything_runs(matrix, entry, message):
    run_matrix, run = matrix
    proc, boots = run_matrix(WORKLOADS="munmap " + entry)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    # before the config stage, the kernels and the run directory
    assert "stage 1/4" not in proc.stderr
    assert boots == [] and not run.exists()


def test_every_workload_parameter_is_a_driver_option_letter():
    rows = [line.split() for line in (ROOT / "bench/workloads.conf").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    assert rows
    for name, key, lo, hi, *what in rows:
        assert (ROOT / f"workloads/{name}.c").exists() and what
        assert len(key) == 1 and key.isalpha() and 1 <= int(lo) <= int(hi)
        # the options every driver takes (common.c) and its own
        extra = (ROOT / f"workloads/{name}.c").read_text().split("mm_parse(")[1].split('"')[1]
        assert f"{key}:" in "d:s:" + extra


# Sweeps: SWEEP="NAME:KEY=V1,V2,...[,KEY=VALUE...] ..." expands into
# WORKLOADS entries (bench/workloads.sh), checked before anything is built.
def expand_sweeps(sweep):
    script = ('. bench/lib.sh; . bench/workloads.sh; expand_sweeps "$1"; '
              'for i in "${!SWEEP_SPECS[@]}"; do printf "%s|%s|%s|%s|%s\\n" '
              '"${SWEEP_NAMES[i]}" "${SWEEP_KEYS[i]}" "${SWEEP_VALUES[i]}" '
              '"${SWEEP_FIXED[i]}" "${SWEEP_WORKLOADS[i]}"; done; '
              'echo "entries: ${SWEEP_ENTRIES[*]}"')
    return run(["bash", "-c", script, "sweep", sweep])


def test_sweep_expands_the_swept_key_in_place_and_keeps_the_fixed_ones():
    proc = expand_sweeps("imap:s=1,n=16,64,256  imap:n=8,s=2,3")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "imap|n|16 64 256|s=1|imap:s=1,n=16 imap:s=1,n=64 imap:s=1,n=256",
        "imap|s|2 3|n=8|imap:n=8,s=2 imap:n=8,s=3",
        "entries: imap:s=1,n=16 imap:s=1,n=64 imap:s=1,n=256 imap:n=8,s=2 imap:n=8,s=3"]
    assert expand_sweeps("").stdout == "entries: \n"


@pytest.mark.parametrize("sweep, message", [
    ("imap", "SWEEP 'imap': no parameters; write NAME:KEY=V1,V2,..."),
    ("imap:", "SWEEP 'imap:': no parameters"),
    ("imap:16,64", "SWEEP 'imap:16,64': '16' comes before any KEY="),
    ("imap:n=16", "SWEEP 'imap:n=16': no key has several values"),
    ("imap:n=16,64,s=1,2", "'n' and 's' both have several values; a sweep varies one key"),
    ("imap:n=16,,64", "SWEEP 'imap:n=16,,64': an empty value"),
    ("imap:n=16,64,", "an empty value"),
    ("imap:n=16,64,16", "SWEEP 'imap:n=16,64,16': n=16 given twice"),
    ("imap:n=16,5000", "SWEEP 'imap:n=16,5000' (entry 'imap:n=5000'): n=5000 is not an "
                       "integer in 1..4096"),
    ("imap:m=1,2", "(entry 'imap:m=1'): no parameter 'm' for imap; it takes n=1..4096"),
    ("imap:n=1,2,n=3", "(entry 'imap:n=1,n=3'): 'n' given twice"),
    ("munmap:n=1,2", "(entry 'munmap:n=1'): workload 'munmap' takes no parameters"),
])
def test_sweep_errors_name_the_sweep_and_the_problem(sweep, message):
    proc = expand_sweeps("imap:n=1,2 " + sweep)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert proc.stdout == ""


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
    assert meta["workloads"] == "munmap imap:s=1,n=64 imap:s=1,n=16 imap:s=1,n=256"
    assert meta["sweep"] == "imap:s=1,n=16,64,256"
    assert meta["sweeps"] == [{
        "spec": "imap:s=1,n=16,64,256", "name": "imap", "key": "n", "values": [16, 64, 256],
        "fixed": {"s": 1}, "workloads": ["imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256"]}]
    assert meta["tools"].startswith('cyclictest V 2.6 "rt" \\x; stress-ng')
    assert meta["variants"] == ["base", "patch"] and meta["repeat"] == 1
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
    assert (meta["sweep"], meta["sweeps"], meta["workloads"]) == ("", [], "munmap idle")


def test_make_lists_sweep_and_keeps_it_out_of_calibrate_and_check_kernels():
    env = {k: v for k, v in os.environ.items() if k not in ("SWEEP", "MAKEFLAGS")}
    out = subprocess.run(["make", "--no-print-directory", "help", "SWEEP=imap:n=16,64"],
                         cwd=ROOT, env=env, text=True, capture_output=True, check=True).stdout
    assert '  SWEEP="imap:n=16,64" (appended to WORKLOADS' in out
    for target in ("calibrate", "check-kernels"):
        matrix_line = [line for line in make_dry(target, "RUN_ID=x", "SWEEP=imap:n=1,2")
                       if "run-matrix.sh" in line or "WORKLOADS=" in line][0]
        assert " SWEEP= " in matrix_line, target


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
    assert meta["variants"] == order
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
    env = {"BUILD_DIR": str(tmp_path / "build"), "PATCHES_DIR": str(tmp_path / "patches"),
           "INSTRUMENTATION_SERIES": ""}
    steps_dir = tmp_path / "build/steps"

    def shas():
        return [series_sha(env, spec) for spec in (
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
    env = {k: v for k, v in os.environ.items() if k not in ("STEPS", "MAKEFLAGS")}
    show = ["make", "--no-print-directory", "--eval", "show-steps: ; @echo $$STEPS",
            "show-steps"]
    for args, want in (((), "all"), (("STEPS=each",), "each")):
        out = subprocess.run(show + list(args), cwd=ROOT, env=env, text=True,
                             capture_output=True, check=True).stdout
        assert out == want + "\n"
    for target in ("calibrate", "check-kernels"):
        matrix_line = [line for line in make_dry(target, "RUN_ID=x", "STEPS=each")
                       if "run-matrix.sh" in line or "WORKLOADS=" in line][0]
        assert " STEPS=all " in matrix_line, target


# Every knob is checked at the entry of bench/run-matrix.sh, before the
# config stage: a bad value fails within 2 s, naming the knob, the value
# and what is allowed, and writes nothing under results/ or build/.
def tree(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


BAD_KNOBS = [
    ({"TRACE": "window"}, "TRACE='window' is not allowed: TRACE takes one of: windows max full none"),
    ({"ACCEL": "bogus"}, "ACCEL='bogus' is not allowed: TRACE takes".replace("TRACE", "ACCEL")
     + " one of: auto kvm tcg-icount tcg-mt"),
    ({"DURATION": "abc"}, "DURATION='abc' is not allowed: DURATION takes an integer in 1..3600"),
    ({"DURATION": "0"}, "DURATION='0' is not allowed: DURATION takes an integer in 1..3600"),
    ({"REPEAT": "0"}, "REPEAT='0' is not allowed: REPEAT takes an integer in 1..1000"),
    ({"REPEAT": "1x"}, "REPEAT='1x' is not allowed: REPEAT takes an integer in 1..1000"),
    ({"SMP": "x", "ACCEL": "tcg-mt"}, "SMP='x' is not allowed: SMP takes an integer in 1..64"),
    ({"SMP": "2", "ICOUNT_QEMU": "/nonexistent/qemu"},
     "SMP=2 with ACCEL=tcg-icount: ICOUNT_QEMU='/nonexistent/qemu' does not run"),
    ({"WORKLOADS": "munmap bogus"}, "WORKLOADS entry 'bogus': unknown workload 'bogus': a "
                                    "workload is one of: munmap exit truncate fork mixed"),
    ({"WORKLOADS": "bogus:n=1"}, "WORKLOADS entry 'bogus:n=1': unknown workload 'bogus'"),
    ({"WORKLOADS": "imap:n=0"}, "WORKLOADS entry 'imap:n=0': n=0 is not an integer in 1..4096"),
    ({"SWEEP": "bogus:n=1,2"}, "SWEEP 'bogus:n=1,2' (entry 'bogus:n=1'): unknown workload 'bogus'"),
    ({"VARIANTS": "base nosuch"}, "VARIANTS: unknown variant 'nosuch': not in "),
    ({"VARIANTS": "base base"}, "VARIANTS='base base' is not allowed: VARIANTS takes each "
                                "variant once"),
    ({"CALIB": "bogus:10"}, "CALIB='bogus:10'"),
    ({"CALIB_WORKLOADS": "munmpa"}, "CALIB_WORKLOADS names 'munmpa', which is neither calib "
                                    "nor one of WORKLOADS (munmap idle)"),
    ({"CALIB": "", "CALIB_WORKLOADS": "bogus"}, "CALIB_WORKLOADS entry 'bogus': unknown workload"),
    ({"STRICT": "yes"}, "STRICT='yes' is not allowed: STRICT takes one of: 0 1"),
    ({"JOBS": "0"}, "JOBS='0' is not allowed: JOBS takes auto or an integer in 1..64"),
    ({"JOBS": "two"}, "JOBS='two' is not allowed: JOBS takes auto or an integer in 1..64"),
    ({"RUN_ID": "../x"}, "RUN_ID='../x' is not allowed"),
    ({"FLAVOR": "fast"}, "unknown FLAVOR=fast (bench or check)"),
    ({"STEPS": "every"}, "STEPS='every' is not allowed: STEPS takes one of: all each"),
    ({"STEPS": "each", "VARIANTS": "base=pre"},
     "VARIANTS='base=pre' is not allowed: VARIANTS takes with STEPS=each exactly two variants, "
     "a baseline and a patched one whose series directories start with the baseline's"),
    ({"STEPS": "each", "VARIANTS": "base=pre a=pre+ser b=pre+ser+more"},
     "VARIANTS='base=pre a=pre+ser b=pre+ser+more' is not allowed: VARIANTS takes with "
     "STEPS=each exactly two variants"),
    ({"STEPS": "each", "VARIANTS": "base=pre+ser mine=pre+more"},
     "STEPS=each: the series directories of 'mine' (pre more) do not start with those of "
     "'base' (pre ser)"),
    ({"STEPS": "each", "VARIANTS": "base=ser mine=pre+ser"},
     "STEPS=each: the series directories of 'mine' (pre ser) do not start with those of "
     "'base' (ser)"),
    ({"STEPS": "each"}, "STEPS=each: 'patch' adds no patch to 'base' (its series directories "
                        "beyond the baseline's: none)"),
    ({"STEPS": "each", "VARIANTS": "base=pre mine=pre+empty"},
     "STEPS=each: 'mine' adds no patch to 'base' (its series directories beyond the "
     "baseline's: empty)"),
    ({"STEPS": "each", "VARIANTS": "mine.1=pre mine=pre+ser"},
     "STEPS=each: a step of 'mine' would be called 'mine.1', the baseline's name"),
    ({"TREE": "6.5"}, "TREE='6.5' is not allowed: TREE takes one of: 6.1 6.12"),
    ({"CROSS": "maybe"}, "CROSS='maybe' is not allowed: CROSS takes one of: no yes"),
    ({"KSRC": "/nonexistent"}, "KSRC='/nonexistent' is not allowed: KSRC takes the path of a "
                               "git tree"),
    ({"VARIANTS": "base new=tree:6.12"},
     "VARIANTS mixes kernel versions (base Linux 6.1, new Linux 6.12): their configs differ, "
     "so set CROSS=yes"),
    ({"VARIANTS": "base x=tree:6.5"}, "variant 'x' is Linux 6.5 (tree:6.5); mmlat supports "
                                      "6.1 and 6.12"),
    ({"VARIANTS": "base x=pre+tree:6.12"}, "variant 'x': 'tree:6.12': one source, before the "
                                            "series directories"),
    ({"VARIANTS": "base x=git:HEAD"}, "variant 'x' names git:HEAD, but KSRC (the git tree) "
                                      "is not set"),
    ({"VARIANTS": "base nosuch"}, "unknown variant 'nosuch'"),
    ({"STEPS": "each", "VARIANTS": "base=pre mine=tree:6.12+pre+ser", "CROSS": "yes"},
     "STEPS=each: 'base' (tree:6.1) and 'mine' (tree:6.12) are on other sources"),
]


@pytest.mark.parametrize("env, message", BAD_KNOBS, ids=[
    "-".join("%s=%s" % kv for kv in env.items()) for env, _ in BAD_KNOBS])
def test_matrix_refuses_every_bad_knob_at_the_entry(matrix, tmp_path, env, message):
    run_matrix, run = matrix
    build_before = tree(tmp_path / "build")
    t0 = time.monotonic()
    proc, boots = run_matrix(**env)
    secs = time.monotonic() - t0
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert secs < 2, secs
    assert "stage 1/4" not in proc.stderr and boots == []
    assert not (tmp_path / "results").exists()
    assert tree(tmp_path / "build") == build_before


# The same from the real bench/run-matrix.sh, with the bad inputs the
# issue measured; LINUX_SRC_DIR points nowhere, so that a knob the entry
# missed could not get far into the config stage.
@pytest.mark.parametrize("knob, value", [
    ("TRACE", "window"), ("ACCEL", "bogus"), ("DURATION", "abc"), ("WORKLOADS", "bogus"),
    ("REPEAT", "0"), ("SMP", "x"), ("JOBS", "0"), ("TREE", "6.5"), ("CROSS", "maybe")])
def test_real_matrix_refuses_bad_knobs_before_the_config(tmp_path, knob, value):
    results, build = tmp_path / "results", tmp_path / "build"
    env = {k: v for k, v in os.environ.items()
           if k not in ("VARIANTS", "WORKLOADS", "SWEEP", "DURATION", "REPEAT", "ACCEL", "SMP",
                        "JOBS", "TRACE", "CALIB", "CALIB_WORKLOADS", "FLAVOR", "STRICT",
                        "TREE", "KSRC", "CROSS")}
    env.update(RESULTS_DIR=str(results), BUILD_DIR=str(build), RUN_ID="bad",
               LINUX_SRC_DIR=str(tmp_path / "none"), **{knob: value})
    t0 = time.monotonic()
    proc = subprocess.run(["bash", "bench/run-matrix.sh"], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=60)
    secs = time.monotonic() - t0
    assert proc.returncode != 0, proc.stderr
    assert "%s entry '%s'" % (knob, value) in proc.stderr if knob == "WORKLOADS" else (
        "%s='%s' is not allowed: %s takes " % (knob, value, knob) in proc.stderr), proc.stderr
    assert "stage 1/4" not in proc.stderr and secs < 2, (secs, proc.stderr)
    assert not results.exists() and not build.exists()


def test_meta_records_every_knob_requested_and_what_ran(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(ACCEL="auto", CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["knobs"] == {
        "VARIANTS": "base patch", "STEPS": "all", "TREE": "6.1", "KSRC": "", "CROSS": "no",
        "WORKLOADS": "munmap idle", "SWEEP": "",
        "DURATION": "1",
        "REPEAT": "1", "ACCEL": "auto", "SMP": "", "JOBS": "auto", "TRACE": "windows", "CALIB": "",
        "CALIB_WORKLOADS": "idle", "FLAVOR": "bench", "STRICT": "0", "RUN_ID": "t"}
    # what ran: the probe's accelerator and its default vCPU count
    assert (meta["accel"], meta["smp"], meta["trace"]) == ("tcg-icount", 1, "windows")
    assert (meta["duration_s"], meta["repeat"], meta["calib"]) == (1, 1, "")
    assert meta["variants"] == ["base", "patch"] and meta["steps"] == []
    # JOBS=auto under icount: a boot per host core (memory allowing)
    assert 1 <= meta["jobs"] <= os.cpu_count()


def test_defaults_have_one_home():
    conf = dict(line.split("=", 1) for line in (ROOT / "bench/knobs.conf").read_text()
                .splitlines() if line and not line.startswith("#"))
    env = {k: v for k, v in os.environ.items()
           if k not in ("TRACE", "DURATION", "REPEAT", "ACCEL", "WORKLOADS", "VARIANTS",
                        "STEPS", "MAKEFLAGS")}
    out = subprocess.run(["make", "--no-print-directory", "help"], cwd=ROOT, env=env,
                         text=True, capture_output=True, check=True).stdout
    assert "TRACE=%s (of: %s;" % (conf["TRACE_DEFAULT"], conf["TRACE_VALUES"]) in out
    assert "ACCEL=%s (%s)" % (conf["ACCEL_DEFAULT"], conf["ACCEL_VALUES"]) in out
    assert "STEPS=%s (of: %s;" % (conf["STEPS_DEFAULT"], conf["STEPS_VALUES"]) in out
    assert "DURATION=%s (" % conf["DURATION_DEFAULT"] in out
    assert 'WORKLOADS="%s" (of: %s;' % (conf["WORKLOADS_DEFAULT"], conf["WORKLOAD_NAMES"]) in out
    # the drivers' own default (workloads/common.c), should one run without -d
    assert "o->duration = %s;" % conf["DURATION_DEFAULT"] in (
        ROOT / "workloads/common.c").read_text()
    # no other literal default for these knobs in the scripts or the runner
    for rel in ("Makefile", "bench/run-matrix.sh", "guest/runner.sh"):
        text = (ROOT / rel).read_text()
        for bad in ("TRACE:-windows", "DURATION:-5", "duration=10", "trace=full calib",
                    "TRACE     ?= windows", "DURATION  ?= 5", "STEPS:-all", "STEPS     ?= all"):
            assert bad not in text, (rel, bad)


# The guest runner checks its job against the same knobs.conf: an unknown
# value fails the boot instead of falling back to a default. Its functions
# run on the host with MMLAT_RUNNER_LIB=1 and a command line from a file.
def runner_job(tmp_path, cmdline):
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    script = ('. guest/runner.sh; trap - EXIT; fail() { echo "FAIL: $*"; exit 3; }; '
              'read_job; echo "workload=$workload trace=$trace duration=$duration seed=$seed"')
    # the guest's shell, busybox's, where the host has it
    shell = ["busybox", "sh"] if shutil.which("busybox") else ["sh"]
    return run([*shell, "-c", script], {"MMLAT_RUNNER_LIB": "1",
                                      "MMLAT_CMDLINE": str(tmp_path / "cmdline"),
                                      "MMLAT_KNOBS": str(ROOT / "bench/knobs.conf")})


def test_runner_takes_its_defaults_from_knobs_conf(tmp_path):
    proc = runner_job(tmp_path, "console=ttyS0 mmlat.workload=munmap mmlat.seed=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "workload=munmap trace=windows duration=5 seed=0"
    proc = runner_job(tmp_path, "mmlat.workload=probe")
    assert proc.returncode == 0 and proc.stdout.startswith("workload=probe ")


@pytest.mark.parametrize("cmdline, message", [
    ("mmlat.workload=munmap mmlat.trace=bogus",
     "job key trace='bogus' is not allowed: one of windows max full none"),
    ("mmlat.workload=bogus", "job key workload='bogus' is not allowed: one of munmap exit"),
    ("mmlat.workload=idle mmlat.duration=abc",
     "job key duration='abc' is not allowed: an integer in 1..3600"),
    ("mmlat.workload=idle mmlat.duration=0", "job key duration='0' is not allowed"),
    ("mmlat.workload=idle mmlat.seed=-1", "job key seed='-1' is not allowed"),
    ("mmlat.workload=idle mmlat.colour=red", "unknown job key 'colour'"),
])
def test_runner_rejects_an_unknown_job_value(tmp_path, cmdline, message):
    proc = runner_job(tmp_path, cmdline)
    assert proc.returncode == 3 and "FAIL: " + message in proc.stdout, proc.stdout + proc.stderr


# Records: written and read by bench/record.py (Python's json). A value
# with quotes, backslashes and newlines survives the round trip.
NASTY = {"cause": 'runner: FAIL: "quoted" \\back\\slash\nsecond line\ttab $HOME `x`',
         "qemu_cmdline": "qemu-system-x86_64 -kernel '/tmp/a dir/\"b\"\\c/bzImage' "
                         "-drive file=/x,,y/results.img"}


def test_record_round_trips_quotes_backslashes_and_newlines(tmp_path):
    out = run(["python3", "bench/record.py", "write", "repeat:=2", "wall:=.5",
               "cause=" + NASTY["cause"], "qemu_cmdline=" + NASTY["qemu_cmdline"],
               "list[]=a", "list[]:=1"], check=True).stdout
    doc = json.loads(out)
    assert doc == dict(NASTY, repeat=2, wall=0.5, list=["a", 1])
    path = tmp_path / "r.json"
    path.write_text(out)
    for key, value in NASTY.items():
        got = run(["python3", "bench/record.py", "get", str(path), key], check=True).stdout
        assert got == value + "\n"
    assert run(["python3", "bench/record.py", "get", str(path), "repeat"]).stdout == "2\n"
    missing = run(["python3", "bench/record.py", "get", str(path), "nosuch"])
    assert missing.returncode == 3 and "has no 'nosuch'" in missing.stderr


def test_cell_json_keeps_a_console_cause_and_a_qemu_path_intact(matrix):
    run_matrix, run = matrix
    proc, boots = run_matrix(CALIB="", REPEAT="1", WORKLOADS="munmap", STRICT="1",
                             STUB_FAIL="mmlat.trace=windows", STUB_CAUSE=NASTY["cause"],
                             STUB_QEMU=NASTY["qemu_cmdline"])
    assert proc.returncode != 0 and "2 of 4 boots failed" in proc.stderr, proc.stderr
    cell = json.loads((run / "cells/base/munmap/traced/r1/cell.json").read_text())
    assert (cell["status"], cell["cause"]) == ("failed", NASTY["cause"])
    assert cell["qemu_cmdline"] == NASTY["qemu_cmdline"]
    assert cell["series_sha256"] == "e3b0" and cell["wall_seconds"] == 1
    assert "base/munmap/traced/r1: " + NASTY["cause"] in proc.stderr


# The analysis takes the traced boots' instrumentation from meta.json's
# "trace", not from the files a boot happens to have: a stray hist-trigger
# dump in a TRACE=windows run is not read as TRACE=full's windows.
def test_analysis_reads_the_trace_mode_from_meta(tmp_path):
    import sys
    for p in (ROOT / "analysis", ROOT / "analysis/tests"):
        if str(p) not in sys.path:
            sys.path.insert(0, str(p))
    import fakerun
    from mmlat import load
    root = fakerun.make_run(str(tmp_path / "r"), trace="windows", repeats=2, failed=False)
    want = load.load_run(root)
    traced = [c for c in want["cells"] if c["boot"] == "traced"]
    assert traced
    stray = Path(traced[0]["dir"]) / "guest/windows/preemptoff.hist"
    stray.write_text("# event histogram\n\nTotals:\n    Hits: 0\n    Entries: 0\n    Dropped: 0\n")
    got = load.load_run(root)
    assert [c["windows"] for c in got["cells"]] == [c["windows"] for c in want["cells"]]
    # a run whose meta.json has no "trace" (before it was recorded): its files
    meta = Path(root) / "meta.json"
    doc = json.loads(meta.read_text())
    del doc["trace"]
    meta.write_text(json.dumps(doc))
    old = load.load_run(root)
    assert [c["windows"] for c in old["cells"]] != [c["windows"] for c in want["cells"]]


def test_make_kernels_checks_the_variants_before_the_config(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MAKEFLAGS"}
    env.update(BUILD_DIR=str(tmp_path / "build"), LINUX_SRC_DIR=str(tmp_path / "none"))
    t0 = time.monotonic()
    proc = subprocess.run(["make", "--no-print-directory", "kernels", "VARIANTS=baseline nosuch"],
                          cwd=ROOT, env=env, text=True, capture_output=True, timeout=60)
    assert proc.returncode != 0 and "VARIANTS: unknown variant 'nosuch'" in proc.stderr
    assert "declares: mainline mainline-6.12 baseline patched" in proc.stderr
    assert time.monotonic() - t0 < 2 and not (tmp_path / "build").exists()
