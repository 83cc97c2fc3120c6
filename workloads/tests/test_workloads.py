"""Build the workload drivers and run each briefly on the host: they are
plain userspace programs. Checks the key=value contract the analysis reads,
and that SIGTERM ends a run early with its output."""
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DRIVERS = ["munmap", "exit", "truncate", "fork", "mixed"]
# imap's cycle is N times a file's worth of mappings: tested on its own below


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    out = tmp_path_factory.mktemp("workloads")
    subprocess.run(["make", "-s", "-C", str(ROOT / "workloads"), f"O={out}"],
                   check=True)
    return out


def keyvals(text):
    return dict(line.split("=", 1) for line in text.split() if "=" in line)


@pytest.mark.parametrize("name", DRIVERS)
def test_driver_reports_its_work(bindir, name, tmp_path):
    proc = subprocess.run([str(bindir / f"mmlat-{name}"), "-d", "1", "-s", "8"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    kv = keyvals(proc.stdout)
    assert kv["workload"] == name
    ops, secs = int(kv["ops"]), float(kv["duration_s"])
    assert ops > 0 and int(kv["bytes"]) > 0
    assert 0.9 <= secs < 5
    assert abs(float(kv["ops_per_s"]) - ops / secs) <= 0.01 * ops / secs + 0.001


def test_sigterm_ends_run_with_output(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-munmap"), "-d", "30", "-s", "8"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    kv = keyvals(out)
    assert float(kv["duration_s"]) < 10


def test_bad_option_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-fork"), "-d", "zero"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stderr


def file_mappings(pid):
    """How many vmas of pid map the driver's (unlinked) tmpfs file."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return sum("/mmlat-imap." in line for line in maps)


def test_imap_maps_the_file_n_times_and_remaps_it(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-imap"), "-d", "2", "-s", "1", "-n", "5"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.7)
    parent = file_mappings(proc.pid)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    # the truncating process maps the file N times; the remapping child
    # was forked before those mappings and has at most its one page
    assert parent == 5
    kv = keyvals(out)
    assert kv["workload"] == "imap" and kv["n"] == "5" and kv["region_mib"] == "1"
    ops, secs = int(kv["ops"]), float(kv["duration_s"])
    assert ops > 0 and int(kv["remaps"]) > 0
    assert int(kv["bytes"]) == ops * 5 * (1 << 20)
    assert 1.9 <= secs < 6
    assert abs(float(kv["ops_per_s"]) - ops / secs) <= 0.01 * ops / secs + 0.001


def test_imap_default_n_and_stop_within_a_long_cycle(bindir):
    # 64 mappings of 16 MiB: a cycle takes longer than the run here, and
    # the driver still stops at the deadline with its output
    t0 = time.monotonic()
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-d", "1", "-s", "16"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    kv = keyvals(proc.stdout)
    assert kv["n"] == "64" and int(kv["remaps"]) > 0
    assert float(kv["duration_s"]) < 5 and time.monotonic() - t0 < 10


def test_imap_bad_n_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-n", "0"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "invalid number" in proc.stderr
