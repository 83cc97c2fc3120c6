"""The orchestrator's children: leaf commands run to their end, and guests
in sessions of their own. Each gets SIGTERM if the orchestrator dies
(setpriv's parent-death signal: SIGKILL leaves no handler to stop them),
and each inherits the run's lock, which is held while any of them lives."""
import os
import select
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


class Sessions:
    """An executor's guests, each a session (session()) by its job id,
    with a pidfd to wait on."""

    def __init__(self):
        self.procs, self.pidfds = {}, {}

    def add(self, job_id, proc):
        self.procs[job_id] = proc
        self.pidfds[job_id] = os.pidfd_open(proc.pid)

    def get(self, job_id):
        return self.procs.get(job_id)

    def wait(self, job_ids, timeout):
        """Up to timeout seconds, or until one of job_ids' sessions ends."""
        fds = [self.pidfds[j] for j in job_ids if j in self.pidfds]
        if fds:
            select.select(fds, [], [], timeout)

    def forget(self, job_id):
        """The ended (or stopped) session of job_id, reaped."""
        proc = self.procs.pop(job_id, None)
        if proc is not None:
            proc.wait()
        fd = self.pidfds.pop(job_id, None)
        if fd is not None:
            os.close(fd)


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
