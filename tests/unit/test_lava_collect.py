"""A finished job's log into a boot's staging folder: the files
bench/qemu.sh leaves, its causes, and the lab's faults that make the job
no boot at all, from logs made by LAVA's own loggers."""
import pytest

from lava_helpers import lava_log, print_block
from orchestrator.lava import collect, joblog

TIMEOUT = 340
START = "mmlat-runner: start uptime=1.23 workload=munmap duration=5"


@pytest.fixture
def shipped(tmp_path, guest_path):
    """shipped(files): the console lines of the results block of a guest
    folder holding FILES (name -> text)."""
    def make(files):
        folder = tmp_path / ("guest-out-%d" % len(list(tmp_path.iterdir())))
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        con = folder.with_suffix(".console")
        assert print_block(guest_path, folder, con).returncode == 0
        return con.read_text().splitlines()
    return make


class Collected:
    """A collected boot: its BootResult's fields, and lab_fault's verdict."""

    def __init__(self, result, fault):
        self.__dict__.update(result.__dict__)
        self.fault = fault


def collected(text, out):
    log = joblog.parse(text)
    out.mkdir()
    return Collected(collect.collect(text, log, str(out), TIMEOUT, "tcg-icount", "qemu01"),
                     collect.lab_fault(log))


def run(tmp_path, lines, **log_kw):
    out = tmp_path / "boot"
    return collected(lava_log(("\r\n".join(lines) + "\r\n").encode(), **log_kw), out), out


GOOD = {"status": "ok\n", "dmesg.txt": "[    0.000000] Linux version 6.1\n", "cyclictest.json": "{}\n"}


def test_a_good_boot(tmp_path, shipped):
    result, out = run(tmp_path, ["[    0.5] early noise", START] + shipped(GOOD) + ["mmlat-runner: done uptime=9.9"])
    assert (result.status, result.cause, result.fault) == ("ok", "", "")
    assert result.guest_seconds_to_runner == 1.23
    assert result.qemu == "qemu-system-x86 1:7.2+dfsg-7+deb12u18+b3"
    assert result.qemu_binary == "/usr/bin/qemu-system-x86_64"
    assert (result.device, result.accel) == ("qemu01", "tcg-icount")
    assert result.wall_seconds >= 0
    assert {p.name for p in (out / "guest").iterdir()} == set(GOOD)
    assert (out / "guest/status").read_text() == "ok\n"
    assert result.qemu_cmdline == "/usr/bin/qemu-system-x86_64 -nographic"
    assert (out / "console.log").read_text().splitlines()[1] == START
    assert (out / "lava.log").exists()


def test_runner_failure_keeps_what_it_shipped(tmp_path, shipped):
    fail = "mmlat-runner: FAIL: workload munmap failed: out of memory"
    result, out = run(tmp_path, [START, fail] + shipped({"status": "failed: workload munmap failed\n"}))
    assert result.status == "failed"
    assert result.cause == "runner: workload munmap failed: out of memory"
    assert not result.fault
    assert (out / "guest/status").read_text().startswith("failed")


def test_kernel_splat_on_the_console(tmp_path, shipped):
    result, _ = run(tmp_path, [START, "[   3.1] BUG: kernel NULL pointer dereference, address: 0"] + shipped(GOOD))
    assert result.cause == "kernel: BUG: kernel NULL pointer dereference, address: 0"


def test_kernel_splat_in_dmesg(tmp_path, shipped):
    files = dict(GOOD, **{"dmesg.txt": "[  2.0] WARNING: CPU: 0 PID: 1 at mm/memory.c:100 zap\n"})
    result, _ = run(tmp_path, [START] + shipped(files))
    assert result.cause == "kernel (dmesg): WARNING: CPU: 0 PID: 1 at mm/memory.c:100 zap"


def test_guest_status(tmp_path, shipped):
    result, _ = run(tmp_path, [START] + shipped({"status": "half\n"}))
    assert result.cause == "guest status: half"


def test_hang(tmp_path):
    result, _ = run(tmp_path, [START, "still going"],
                    result={"result": "fail", "error_type": "LAVATimeout",
                            "error_msg": "lava-test-monitor timed out after 340 seconds"})
    assert result.cause == "hang: no result within 340s wall time (last console line: still going)"
    assert not result.fault


def test_silent_hang_before_the_runner(tmp_path):
    result, _ = run(tmp_path, [], result={"result": "fail", "error_type": "Job",
                                          "error_msg": "wait for prompt timed out"})
    assert result.cause.startswith("hang: no result within 340s")
    assert not result.fault


def test_guest_that_ends_early(tmp_path):
    result, _ = run(tmp_path, [START, "reboot: Restarting system"],
                    result={"result": "fail", "error_type": "Infrastructure", "error_msg": "Connection closed"})
    assert result.cause == ("guest ended without the runner finishing (LAVA Infrastructure: Connection closed; "
                            "last console line: reboot: Restarting system)")
    assert not result.fault


def test_lab_fault_before_the_guest_ran(tmp_path):
    result, out = run(tmp_path, [], before_boot=True,
                      result={"result": "fail", "error_type": "Infrastructure",
                              "error_msg": "Unable to download file:///srv/bzImage"})
    assert result.fault == "lava: Infrastructure: Unable to download file:///srv/bzImage"
    assert result.qemu_cmdline == ""


def test_canceled(tmp_path):
    result, _ = run(tmp_path, [START], result={"result": "fail", "error_type": "Canceled",
                                               "error_msg": "The job was canceled"})
    assert result.fault == "lava: job canceled"


def test_a_log_without_its_result(tmp_path, shipped):
    """lava-run stopped before it logged the job's end: the boot counts if
    its results came back whole, and is submitted again if not."""
    def cut(lines):
        text = lava_log(("\r\n".join(lines) + "\r\n").encode())
        return "\n".join(line for line in text.splitlines() if '"lvl": "results"' not in line)
    result = collected(cut([START] + shipped(GOOD)), tmp_path / "whole")
    assert (result.status, result.fault) == ("ok", "")
    result = collected(cut([START]), tmp_path / "none")
    assert result.fault.startswith("lava: the job's log has no result")


def test_qemu_exit_after_the_block_is_no_failure(tmp_path, shipped):
    """The runner reboots after its results; when QEMU exits before LAVA's
    monitor has matched the end, LAVA ends the job on the end of file."""
    result, _ = run(tmp_path, [START] + shipped(GOOD) + ["mmlat-runner: done uptime=10.49", "poweroff"],
                    result={"result": "fail", "error_type": "Infrastructure", "error_msg": "Connection closed"})
    assert (result.status, result.cause, result.fault) == ("ok", "", "")


def test_corrupt_block_fails_the_boot(tmp_path, shipped):
    lines = shipped(GOOD)
    lines[2] = lines[2][::-1]
    result, out = run(tmp_path, [START] + lines)
    assert result.cause.startswith("results: results block corrupt: ")
    assert not result.fault
    assert (out / "guest").is_dir() and not any((out / "guest").iterdir())


def test_missing_block_fails_the_boot(tmp_path):
    result, _ = run(tmp_path, [START, "mmlat-runner: done uptime=9.9"])
    assert result.cause == "results: no results block on the console (no 'mmlat-results: begin' line)"
