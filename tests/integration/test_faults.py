"""Integration test: faults in the middle of a run leave only complete
boots, name their cause, leave no QEMU running, and a rerun with the same
RUN_ID does the rest. One run, stopped three times in its boot stage (a
terminal's SIGINT, SIGKILL of the matrix alone, a full disk under
RESULTS_DIR) and resumed each time, on the mainline kernel test_boot.py
builds (a run of its own builds it when this file runs alone). RESULTS_DIR
is a small tmpfs, so that the disk can be filled: mounting one needs root,
which make test has (it installs packages); without it this test skips."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1].parent
BOOTS = 8


@pytest.fixture
def results(tmp_path):
    mnt = tmp_path / "results"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs to fill: %s" % proc.stderr.strip())
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=True)


def start(results, terminal_job):
    env = dict(os.environ, PYTHONPATH="analysis:bench", RESULTS_DIR=str(results),
               RUN_ID="faults", VARIANTS="mainline",
               WORKLOADS="idle munmap", DURATION="1", REPEAT=str(BOOTS // 2), TRACE="none",
               CALIB="", JOBS="2", ACCEL=os.environ.get("ACCEL", "auto"))
    # a process group of its own, as a terminal's foreground job
    return subprocess.Popen(["/usr/bin/python3", "-m", "orchestrator", "run"], cwd=ROOT,
                            env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=terminal_job)


def complete(run):
    return sorted(p.parent for p in run.glob("cells/*/*/*/r*/cell.json"))


def wait_for_more_boots(run, proc, than, secs=900):
    deadline = time.monotonic() + secs
    while len(complete(run)) <= than:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline
        time.sleep(0.2)


def guests_of(run):
    out = subprocess.run(["pgrep", "-af", "qemu-system"], text=True,
                         capture_output=True).stdout
    return [line for line in out.splitlines() if str(run) in line]


def check_stopped(run):
    """No guest of the run left; every boot folder complete."""
    deadline = time.monotonic() + 15
    while guests_of(run) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not guests_of(run)
    assert sorted(run.glob("cells/*/*/*/r*")) == complete(run)
    return len(complete(run))


def test_stopped_three_ways_and_resumed(results, terminal_job):
    run = results / "faults"
    # 1. Ctrl-C: SIGINT to the whole foreground group
    proc = start(results, terminal_job)
    wait_for_more_boots(run, proc, 0)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert "run faults stopped by SIGINT" in err and "rerun with RUN_ID=faults" in err
    assert not list(run.glob("cells/*/*/*/.r*.tmp"))
    done = check_stopped(run)
    assert 1 <= done < BOOTS

    # 2. SIGKILL of the matrix alone: its guests die with it
    proc = start(results, terminal_job)
    wait_for_more_boots(run, proc, done)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    done = check_stopped(run)
    assert done < BOOTS

    # 3. The disk under RESULTS_DIR fills while guests boot
    proc = start(results, terminal_job)
    wait_for_more_boots(run, proc, done)
    filler = results / "filler"
    subprocess.run(["dd", "if=/dev/zero", "of=%s" % filler, "bs=1M", "count=200"],
                   capture_output=True)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, err[-2000:]
    assert "run faults stopped: " in err and "MiB free under %s" % results in err, err[-2000:]
    assert "make room and rerun with RUN_ID=faults" in err
    assert not list(run.glob("cells/*/*/*/.r*.tmp"))
    done = check_stopped(run)
    assert done < BOOTS

    # 4. The rerun does the rest, and only the rest
    filler.unlink()
    proc = start(results, terminal_job)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-2000:]
    assert "%d of %d boots already complete, skipped" % (done, BOOTS) in err
    assert len(complete(run)) == BOOTS
    assert all('"status": "ok"' in (d / "cell.json").read_text() for d in complete(run))
