"""What the orchestrator says: log lines on stderr, and the error that
stops it."""
import os
import sys
import time

from plan import knobs


class Refused(Exception):
    """The run stops here; the message says why (printed as mmlat: error:),
    and status is its exit status."""

    def __init__(self, message, status=1):
        super().__init__(message)
        self.status = status


class LeafFailed(Exception):
    """A leaf command failed; it has said why on stderr."""

    def __init__(self, cmd, rc):
        super().__init__("%s exited with %d" % (" ".join(cmd), rc))
        self.rc = rc


def shown(path):
    """A path as the log names it: relative to the project's root when it
    lies inside."""
    rel = os.path.relpath(path, knobs.ROOT)
    return path if rel.startswith("..") else rel


def log(message):
    sys.stderr.write("[mmlat %s] %s\n" % (time.strftime("%H:%M:%S"), message))
    sys.stderr.flush()


def note(line):
    """A line of its own on stderr, beneath a log line."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def error(message):
    sys.stderr.write("mmlat: error: %s\n" % message)
    sys.stderr.flush()
