"""The run lock and the build lock (flock). The run lock: one run per
RUN_ID at a time, since a second would boot into the same staging
folders; held while any process of the run lives, its file naming the
holder. The build lock: runs that share BUILD_DIR share its configs,
trees and object folders, so their build stages take turns (a run's
guests boot from its own copies of the kernels and images, so a later
build cannot swap one under them)."""
import fcntl
import os
import socket
import time

from . import children
from .say import Refused, log


def _open(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)


def _holder(fd):
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()


def _name(fd, text):
    os.ftruncate(fd, 0)
    os.write(fd, (text + "\n").encode())


def _try(fd):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def run_lock(path, run_id):
    """The run's lock, or Refused naming its holder."""
    fd = _open(path)
    if not _try(fd):
        raise Refused("run %s is in progress (%s); wait for it, stop it, or give another RUN_ID"
                      % (run_id, _holder(fd)))
    _name(fd, "pid %d on %s, since %s" % (os.getpid(), socket.gethostname(),
                                          time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
    children.keep(fd)
    return fd


def build_lock(path, run_id):
    """The build lock, waited for while another run builds."""
    fd = _open(path)
    if not _try(fd):
        log("waiting for another run's build stage (%s)" % _holder(fd))
        fcntl.flock(fd, fcntl.LOCK_EX)
    _name(fd, "run %s, pid %d" % (run_id, os.getpid()))
    return fd


def release(fd):
    os.close(fd)
