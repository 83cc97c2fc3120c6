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
