"""The orchestrator's children: leaf commands run to their end, and guests
in sessions of their own. Each gets SIGTERM if the orchestrator dies
(setpriv's parent-death signal: SIGKILL leaves no handler to stop them),
and each inherits the run's lock, which is held while any of them lives."""
import os
import signal
import subprocess

from .say import LeafFailed

_fds = []
_current = []


def keep(fd):
    """fd (a lock) is inherited by every child from now on."""
    _fds.append(fd)


def _command(cmd):
    return ["setpriv", "--pdeathsig", "TERM", *cmd]


def guarded(cmd, check=True, **kw):
    """Run a leaf command to its end; raises LeafFailed when it fails. A
    signal's handler stops it (stop())."""
    proc = subprocess.Popen(_command(cmd), pass_fds=_fds, **kw)
    _current.append(proc)
    try:
        rc = proc.wait()
    finally:
        _current.remove(proc)
    if check and rc != 0:
        raise LeafFailed(cmd, rc)
    return rc


def output(cmd, **kw):
    """A leaf command's standard output, run as guarded does."""
    proc = subprocess.Popen(_command(cmd), pass_fds=_fds, stdout=subprocess.PIPE, text=True, **kw)
    _current.append(proc)
    try:
        out, _ = proc.communicate()
    finally:
        _current.remove(proc)
    if proc.returncode != 0:
        raise LeafFailed(cmd, proc.returncode)
    return out


def session(cmd, **kw):
    """Start cmd in a session of its own (a terminal's signals do not reach
    it; stop_session() stops all of it)."""
    return subprocess.Popen(_command(cmd), pass_fds=_fds, start_new_session=True, **kw)


def stop_session(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


def stop():
    """Stop the leaf command running, if any, and wait for it."""
    for proc in list(_current):
        try:
            proc.terminate()
        except ProcessLookupError:
            pass
        proc.wait()
