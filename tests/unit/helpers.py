"""What the unit tests of the host side share: the project's root, a
command run there, and the environment without any knob."""
import os
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
