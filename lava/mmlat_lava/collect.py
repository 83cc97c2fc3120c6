"""A finished LAVA job's boot, into the layout bench/qemu.sh leaves: the
boot's folder gets console.log, guest/ (the runner's files, from the
results block on the console), qemu.cmdline and boot.json, with the same
failure causes, and the job's own records beside them (lava.log, the job's
log; job.yaml, its definition)."""
import json
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from . import console, joblog

MMLAT_ROOT = Path(__file__).resolve().parents[2]
_RUNNER_FAIL = re.compile(r"mmlat-runner: FAIL: (.*)")
_RUNNER_START = re.compile(r"mmlat-runner: start uptime=([0-9.]+)")
# LAVA's error types for faults of the lab rather than of the boot
# (lava_common/exceptions.py): resubmitting may help.
INFRASTRUCTURE_ERRORS = ("Infrastructure", "Bug")


@dataclass
class BootResult:
    """How one boot ended: boot.json's keys (bench/qemu.sh), then the
    executor's."""
    status: str                     # ok | failed
    cause: str                      # why it failed; empty when ok
    wall_seconds: float             # QEMU's start to the console's last line, on the worker
    guest_seconds_to_runner: float  # the guest's uptime at the runner's start
    accel: str
    qemu_binary: str
    qemu: str                       # the QEMU the worker ran, as LAVA found it
    executor: str                   # lava-local | lava
    lava_job_id: str
    lava_device: str
    lava_device_type: str
    lava_job_seconds: float         # the job's first to last log record
    lava_error_type: str            # LAVA's error type, when it failed the job
    retry: bool                     # a fault of the lab, not of the boot: submit it again

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, doc):
        return cls(**{f.name: doc.get(f.name) for f in fields(cls)})


def first_splat(path):
    """bench/lib.sh's first_splat of the file PATH: the first line that
    reports a kernel bug or warning, or None."""
    proc = subprocess.run(["bash", "-c", '. "$1"; first_splat "$2"', "-",
                           str(MMLAT_ROOT / "bench/lib.sh"), str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def _last_line(lines):
    for line in reversed(lines):
        if line.strip():
            return line.strip()
    return ""


def _lava_cause(log, timeout_s):
    """Why a boot that shipped no results failed, from how LAVA ended its
    job; and whether the lab, not the boot, failed it (a resubmission may
    help)."""
    lines = log.console
    result = log.result or {}
    error_type = result.get("error_type") or ""
    message = "%s: %s" % (error_type, result.get("error_msg"))
    if not result:
        return "lava: the job's log has no result (LAVA stopped before the job ended)", True
    if result.get("result") != "fail":
        return "", False
    if error_type == "Canceled":
        return "lava: job canceled", True
    if error_type == "LAVATimeout" or (error_type == "Job" and "timed out" in message):
        return ("hang: no result within %ds wall time (last console line: %s)"
                % (timeout_s, _last_line(lines)), False)
    if not lines and error_type in INFRASTRUCTURE_ERRORS:
        # nothing reached the console: the guest never ran
        return "lava: %s" % message, True
    return ("guest ended without the runner finishing (LAVA %s; last console line: %s)"
            % (message, _last_line(lines)), False)


def _cause(log, out, timeout_s):
    """Unpack the results block into OUT/guest; returns why the boot
    failed, as bench/qemu.sh would say it, or "", and whether the lab
    failed it. Once the guest has shipped its results, how LAVA ended the
    job does not matter: QEMU's exit after the runner's reboot is an end
    of file to LAVA when it comes before the monitor's end."""
    for line in log.console:
        m = _RUNNER_FAIL.search(line)
        if m:
            cause = "runner: " + m.group(1).strip()
            break
    else:
        splat = first_splat(out / "console.log")
        cause = "kernel: " + splat if splat else ""
    # Whatever the guest shipped is kept, also from a failed boot.
    guest = out / "guest"
    if guest.exists():
        shutil.rmtree(guest)
    try:
        console.unpack(console.find_block(log.console).archive, guest)
    except console.ResultsBlockError as exc:
        guest.mkdir(exist_ok=True)
        if cause:
            return cause, False
        cause, retry = _lava_cause(log, timeout_s)
        return cause or "results: %s" % exc, retry
    if cause:
        return cause, False
    status_file = guest / "status"
    status = status_file.read_text().strip() if status_file.exists() else "missing"
    if status != "ok":
        return "guest status: %s" % status, False
    splat = first_splat(guest / "dmesg.txt") if (guest / "dmesg.txt").exists() else None
    return ("kernel (dmesg): " + splat if splat else ""), False


def collect(log_text, out, timeout_s, executor, job_id, device="", device_type="", accel="tcg-icount"):
    """Write a finished job's boot into the folder OUT from LOG_TEXT, the
    job's log; returns its BootResult, also written as OUT/boot.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "lava.log").write_text(log_text)
    log = joblog.parse(log_text)
    (out / "console.log").write_text("".join(line + "\n" for line in log.console))
    if log.boot_command:
        (out / "qemu.cmdline").write_text(log.boot_command + "\n")
    cause, retry = _cause(log, out, timeout_s)

    start = None
    for line in log.console:
        m = _RUNNER_START.search(line)
        if m:
            start = float(m.group(1))
            break
    wall = None
    if log.boot_time and log.last_console_time:
        wall = round((log.last_console_time - log.boot_time).total_seconds(), 3)
    job_seconds = None
    if log.first_time and log.last_time:
        job_seconds = round((log.last_time - log.first_time).total_seconds(), 3)
    binary = log.boot_command.split()[0] if log.boot_command else ""
    result = BootResult(
        status="failed" if cause else "ok", cause=cause, wall_seconds=wall,
        guest_seconds_to_runner=start, accel=accel, qemu_binary=binary,
        qemu=log.qemu_version or "", executor=executor, lava_job_id=str(job_id),
        lava_device=device, lava_device_type=device_type, lava_job_seconds=job_seconds,
        lava_error_type=(log.result or {}).get("error_type") or "", retry=retry)
    tmp = out / "boot.json.tmp"
    tmp.write_text(json.dumps(result.to_json(), indent=2) + "\n")
    tmp.rename(out / "boot.json")
    return result
