"""The guest runner (guest/runner.sh) checks its job against the knobs.conf
and workloads.conf generated from the registries (bench/plan): an unknown
key or value fails the boot instead of falling back to a default. Its
functions run on the host with MMLAT_RUNNER_LIB=1 and a command line
from a file."""
import shutil

import pytest
from helpers import run
from plan import calib, render


def runner(tmp_path, cmdline, script):
    (tmp_path / "cmdline").write_text(cmdline + "\n")
    render.guest_config(str(tmp_path / "etc"))
    script = '. guest/runner.sh; trap - EXIT; fail() { echo "FAIL: $*"; exit 3; }; ' + script
    # the guest's shell, busybox's, where the host has it
    shell = ["busybox", "sh"] if shutil.which("busybox") else ["sh"]
    return run([*shell, "-c", script], {
        "MMLAT_RUNNER_LIB": "1", "MMLAT_CMDLINE": str(tmp_path / "cmdline"),
        "MMLAT_KNOBS": str(tmp_path / "etc/knobs.conf"),
        "MMLAT_WORKLOADS": str(tmp_path / "etc/workloads.conf")})


def runner_job(tmp_path, cmdline):
    return runner(tmp_path, cmdline, 'read_job; echo "workload=$workload kind=$kind '
                  'trace=$trace duration=$duration size_mib=$size_mib seed=$seed"')


def test_runner_takes_its_defaults_from_the_registry(tmp_path):
    proc = runner_job(tmp_path, "console=ttyS0 mmlat.workload=munmap mmlat.seed=0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == (
        "workload=munmap kind=driver trace=windows duration=5 size_mib=16 seed=0")
    proc = runner_job(tmp_path, "mmlat.workload=probe")
    assert proc.returncode == 0 and proc.stdout.startswith("workload=probe kind=probe ")
    proc = runner_job(tmp_path, "mmlat.workload=sng-vm mmlat.size_mib=8 mmlat.duration=2")
    assert proc.stdout.strip() == (
        "workload=sng-vm kind=stress-ng trace=windows duration=2 size_mib=8 seed=1")


@pytest.mark.parametrize("cmdline, message", [
    ("mmlat.workload=munmap mmlat.trace=bogus",
     "job key trace='bogus' is not allowed: one of windows max full plugin none"),
    ("mmlat.workload=bogus", "job key workload='bogus' is not allowed: one of munmap exit"),
    ("mmlat.workload=idle mmlat.duration=abc",
     "job key duration='abc' is not allowed: an integer in 1..3600"),
    ("mmlat.workload=idle mmlat.duration=0", "job key duration='0' is not allowed"),
    ("mmlat.workload=idle mmlat.size_mib=2000", "job key size_mib='2000' is not allowed"),
    ("mmlat.workload=idle mmlat.seed=-1", "job key seed='-1' is not allowed"),
    ("mmlat.workload=idle mmlat.colour=red", "unknown job key 'colour'"),
])
def test_runner_rejects_an_unknown_job_value(tmp_path, cmdline, message):
    proc = runner_job(tmp_path, cmdline)
    assert proc.returncode == 3 and "FAIL: " + message in proc.stdout, proc.stdout + proc.stderr


def test_runner_gets_the_calibration_windows_expanded_by_the_host(tmp_path):
    windows = calib.parse("preempt/irq:200/1000x2,ptl_nested:50")
    proc = runner(tmp_path, "mmlat.workload=idle mmlat.calib=" + calib.guest_form(windows),
                  "read_job; calib_windows")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.split() == ["%s:%d" % w for w in windows]


def test_runner_runs_a_stress_ng_recipe_with_the_guests_cpus(tmp_path):
    proc = runner(tmp_path, "mmlat.workload=sng-mm", "read_job; ncpu=3; stress_ng_args")
    assert proc.stdout.split() == ["--mmap", "3", "--mmap-bytes", "32M", "--munmap", "3",
                                   "--brk", "1", "--mremap", "1", "--madvise", "1"]
