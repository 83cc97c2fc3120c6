"""bench/build.sh stopped mid-build: by a signal it traps (^C, TERM, HUP)
and by SIGKILL, which it cannot; either way nothing is installed. A fake
kernel Makefile stands in for kbuild: its build prints a step and then
waits in a child, as make waits on a compiler."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAKE_MAKEFILE = """\
olddefconfig:
\t@true
all:
\t@echo '  CC      mm/memory.o'
\t@echo $$PPID > make.pid
\t@sleep 300 & echo $$! > compiler.pid; wait
"""


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has ended; only its parent has yet to reap it
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def gone_within(pid, seconds):
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def read_pid(path, seconds=10):
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.1)
    return int(path.read_text())


@pytest.fixture
def building(tmp_path, terminal_job):
    """Start build.sh of a tree 'mainline' into a staging folder; yields the
    process, that folder and the object dir once make is waiting on its
    'compiler'."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    build = tmp_path / "build"
    tree = build / "trees/mainline"
    tree.mkdir(parents=True)
    (tree / "Makefile").write_text(FAKE_MAKEFILE)
    config = build / "config/bench"
    config.mkdir(parents=True)
    (config / "config").write_text("CONFIG_PREEMPT=y\n")
    (config / "config.sha256").write_text("c0ffee\n")
    obj = tree / "obj"
    staging = build / "kernels/.mainline.tmp"
    env = dict(os.environ, CCACHE_DIR=str(build / "ccache"), CCACHE_MAXSIZE="1G",
               PYTHON="/usr/bin/python3")
    # its own process group, as a terminal's foreground job: ^C reaches
    # the whole group
    proc = subprocess.Popen(["bash", "bench/build.sh", "mainline", str(tree), str(obj),
                             str(config), str(staging), str(build / "kbuild-steps.bench")],
                            cwd=ROOT, env=env, text=True, stderr=subprocess.PIPE,
                            start_new_session=True, preexec_fn=terminal_job)
    try:
        read_pid(obj / "compiler.pid")
        yield proc, staging, obj
    finally:
        for name in ("make.pid", "compiler.pid"):
            if (obj / name).exists() and alive(read_pid(obj / name)):
                os.kill(read_pid(obj / name), signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def assert_nothing_installed(staging):
    assert not staging.exists()


@pytest.mark.parametrize("sig,whom", [(signal.SIGINT, "group"),
                                      (signal.SIGTERM, "script"),
                                      (signal.SIGHUP, "script")])
def test_trapped_signal_stops_make_and_its_jobs(building, sig, whom):
    proc, staging, obj = building
    make, compiler = read_pid(obj / "make.pid"), read_pid(obj / "compiler.pid")
    if whom == "group":
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    # it dies of the signal, so that a calling shell stops too
    assert proc.returncode == -sig
    assert f"interrupted by {sig.name} during the build of kernel 'mainline'" in err
    # a background job has SIGINT ignored: the trap, not the terminal,
    # stops the 'compiler'
    assert gone_within(make, 5) and gone_within(compiler, 5)
    assert_nothing_installed(staging)


def test_sigkill_of_the_script_still_stops_make(building):
    proc, staging, obj = building
    make = read_pid(obj / "make.pid")
    proc.kill()
    proc.wait(timeout=5)
    assert gone_within(make, 5)
    assert_nothing_installed(staging)
