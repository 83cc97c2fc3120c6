"""A finished LAVA job's boot, into the folder bench/qemu.sh leaves: the
boot's staging folder gets console.log and guest/ (the runner's files,
from the results block on the console), with bench/qemu.sh's failure
causes, and the job's log beside them (lava.log); its BootResult names the
QEMU command LAVA ran and the device.

A job whose guest shipped no results for a reason of the lab (LAVA stopped
before the job's end, it was canceled, or an infrastructure error came
before anything reached the console) is no boot at all: lab_fault names
it, and the executor has it submitted again."""
import os
import re
import shutil
import subprocess

from plan import knobs
from plan.model import BootResult

from . import console

LIB_SH = knobs.ROOT + "/bench/lib.sh"
_RUNNER_FAIL = re.compile(r"mmlat-runner: FAIL: (.*)")
_RUNNER_START = re.compile(r"mmlat-runner: start uptime=([0-9.]+)")
# LAVA's error types for faults of the lab rather than of the boot
# (lava_common/exceptions.py).
INFRASTRUCTURE_ERRORS = ("Infrastructure", "Bug")


def first_splat(path):
    """bench/lib.sh's first_splat of the file path: the first line that
    reports a kernel bug or warning, or None."""
    proc = subprocess.run(["bash", "-c", '. "$1"; first_splat "$2"', "-", LIB_SH, str(path)],
                          capture_output=True, text=True)
    return (proc.stdout.strip() or None) if proc.returncode == 0 else None


def _last_line(lines):
    return next((line.strip() for line in reversed(lines) if line.strip()), "")


def _block(log):
    """The console's results block, or the ResultsBlockError saying why
    there is none."""
    try:
        return console.find_block(log.console)
    except console.ResultsBlockError as e:
        return e


def lab_fault(log):
    """Why the lab, not the boot, ended the job of log (a JobLog) without
    results; "" when the boot has a result to collect. A guest that
    shipped its block counts however LAVA ended the job: QEMU's exit after
    the runner's reboot reaches LAVA as an end of file when it comes
    before the monitor's end."""
    if not isinstance(_block(log), console.ResultsBlockError):
        return ""
    result = log.result
    if not result:
        return "lava: the job's log has no result (LAVA stopped before the job ended)"
    if result.get("result") != "fail":
        return ""
    if result.get("error_type") == "Canceled":
        return "lava: job canceled"
    if not log.console and result.get("error_type") in INFRASTRUCTURE_ERRORS:
        # nothing reached the console: the guest never ran
        return "lava: %s: %s" % (result["error_type"], result.get("error_msg"))
    return ""


def _lava_cause(log, timeout_s):
    """Why a boot that shipped no results failed, from how LAVA ended its
    job."""
    result = log.result or {}
    message = "%s: %s" % (result.get("error_type"), result.get("error_msg"))
    if result.get("error_type") == "LAVATimeout" or \
            (result.get("error_type") == "Job" and "timed out" in message):
        return "hang: no result within %ds wall time (last console line: %s)" % (
            timeout_s, _last_line(log.console))
    if result.get("result") == "fail":
        return "guest ended without the runner finishing (LAVA %s; last console line: %s)" % (
            message, _last_line(log.console))
    return ""


def _cause(log, dest, timeout_s):
    """Unpacks the results block into dest/guest; returns why the boot
    failed, as bench/qemu.sh says it, or ""."""
    cause = ""
    for line in log.console:
        m = _RUNNER_FAIL.search(line)
        if m:
            cause = "runner: " + m.group(1).strip()
            break
    else:
        splat = first_splat(dest + "/console.log")
        cause = "kernel: " + splat if splat else ""
    # Whatever the guest shipped is kept, also from a failed boot.
    guest = dest + "/guest"
    shutil.rmtree(guest, ignore_errors=True)
    block = _block(log)
    if isinstance(block, console.ResultsBlockError):
        os.makedirs(guest, exist_ok=True)
        return cause or _lava_cause(log, timeout_s) or "results: %s" % block
    try:
        console.unpack(block.archive, guest)
    except console.ResultsBlockError as e:
        os.makedirs(guest, exist_ok=True)
        return cause or "results: %s" % e
    if cause:
        return cause
    try:
        with open(guest + "/status") as f:
            status = f.read().strip()
    except FileNotFoundError:
        status = "missing"
    if status != "ok":
        return "guest status: %s" % status
    splat = first_splat(guest + "/dmesg.txt") if os.path.exists(guest + "/dmesg.txt") \
        else None
    return "kernel (dmesg): " + splat if splat else ""


def collect(log_text, log, dest, timeout_s, accel, device):
    """Writes a finished job's boot into dest from log_text, its log (log:
    the text parsed, joblog.parse); returns its BootResult."""
    with open(dest + "/lava.log", "w") as f:
        f.write(log_text)
    with open(dest + "/console.log", "w") as f:
        f.write("".join(line + "\n" for line in log.console))
    cause = _cause(log, dest, timeout_s)
    start = next((float(m.group(1)) for m in map(_RUNNER_START.search, log.console) if m), None)
    wall = 0.0
    if log.boot_time and log.last_console_time:
        wall = round((log.last_console_time - log.boot_time).total_seconds(), 3)
    command = log.boot_command or ""
    return BootResult(status="failed" if cause else "ok", cause=cause, wall_seconds=wall,
                      guest_seconds_to_runner=start, accel=accel,
                      qemu_binary=command.split()[0] if command else "",
                      qemu=log.qemu_version or "", qemu_cmdline=command, device=device)
