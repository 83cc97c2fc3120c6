"""A LAVA job's log: lava-run's output (one YAML mapping a line) or a
server's job log (the same mappings as a YAML list, `lavacli jobs logs
--raw`). What mmlat reads from it: the device's console, the QEMU command
LAVA ran and its version, and how LAVA ended the job."""
import re
from datetime import datetime
from dataclasses import dataclass, field

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# CallQemuAction's log lines (lava_dispatcher/actions/boot/qemu.py).
_BOOT_COMMAND = re.compile(r"^Boot command: (.*)$")
_QEMU_VERSION = re.compile(r"^(qemu(?:-system-\S+)?), installed at version: ([^,\s]+)")


@dataclass
class JobLog:
    console: list = field(default_factory=list)   # the device's output, a line each
    boot_command: str = None      # the QEMU command line, for a QEMU device
    # the QEMU as LAVA found it: "qemu-system-x86 1:7.2+dfsg-7" (Debian's
    # package), or "qemu 7.2.0" (its --version)
    qemu_version: str = None
    result: dict = None           # lava/job: result pass|fail, error_type, error_msg
    errors: list = field(default_factory=list)    # LAVA's error lines
    first_time: datetime = None       # the log's first record
    last_time: datetime = None        # its last
    boot_time: datetime = None        # the boot command's record (QEMU's start)
    last_console_time: datetime = None


def _console_line(msg):
    # lava_dispatcher.shell.ShellLogger escapes every '"' of the device's
    # output as '\"' before the record is dumped.
    return str(msg).replace('\\"', '"')


def _time(value):
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def parse(text):
    """The JobLog of TEXT, a job log as lava-run prints it or as a server
    keeps it."""
    log = JobLog()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- "):
            line = line[2:]
        if not line.startswith("{"):
            continue
        try:
            record = yaml.load(line, Loader=_LOADER)
        except yaml.YAMLError:
            continue
        if not isinstance(record, dict):
            continue
        level, msg = record.get("lvl"), record.get("msg")
        when = _time(record.get("dt"))
        if when is not None:
            log.first_time = log.first_time or when
            log.last_time = when
        if level == "target":
            log.console.append(_console_line(msg))
            log.last_console_time = when
        elif level == "info" and isinstance(msg, str):
            m = _BOOT_COMMAND.match(msg)
            if m:
                log.boot_command = m.group(1)
                log.boot_time = when
            m = _QEMU_VERSION.match(msg)
            if m:
                log.qemu_version = "%s %s" % (m.group(1), m.group(2))
        elif level == "results" and isinstance(msg, dict):
            if msg.get("definition") == "lava" and msg.get("case") == "job":
                log.result = msg
        elif level in ("error", "exception"):
            log.errors.append(str(msg))
    return log
