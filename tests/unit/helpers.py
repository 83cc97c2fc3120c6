"""What the unit tests of the host side share: the project's root, a
command run there, and the environment without any knob."""
import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Debian's archive at an address nothing answers on: a test that reached a
# fetch of a kernel source fails at once.
NO_ARCHIVE = {"DEBIAN_MIRROR": "http://127.0.0.1:9/debian",
              "DEBIAN_SECURITY_MIRROR": "http://127.0.0.1:9/debian-security"}


def clean_environ():
    """os.environ without any knob (bench/plan/knobs.py) but PATH's kind."""
    from plan import knobs
    return {k: v for k, v in os.environ.items()
            if k not in knobs.BY_NAME and k != "MAKEFLAGS"}


def run(args, env=None, check=False):
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(args, cwd=ROOT, env=full_env, text=True, capture_output=True)
    if check and proc.returncode:
        raise AssertionError(proc.stderr)
    return proc


# The matrix's series directories: a baseline's (pre), a series of three
# patches (ser), one more patch of the same file name in another directory
# (more), and a directory that lists none (empty).
STEP_SERIES = {"pre": ["0001-pre.patch"],
               "ser": ["0001-a.patch", "0002-b.patch", "0003-c.patch"],
               "more": ["0001-a.patch"], "empty": [], "only61": ["0001-a.patch"]}


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
