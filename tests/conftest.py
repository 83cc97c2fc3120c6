"""Fixtures shared by the unit and integration tests."""
import signal

import pytest


def _default_signals():
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


@pytest.fixture
def terminal_job():
    """A preexec_fn for Popen: the child starts with the signal actions of a
    terminal's foreground job, whatever the test runner inherited (under
    nohup or as a background job SIGHUP or SIGINT is ignored, and a script
    cannot trap a signal ignored when it starts)."""
    return _default_signals
