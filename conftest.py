"""What every test shares (make test-unit and make test-integration run
them from the project's root): the import paths make gives the code,
PYTHONPATH=analysis:bench, and analysis/tests for the one builder of test
data (fakerun.py); and the signal actions of a terminal's job."""
import os
import signal
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
for _path in ("analysis", "bench", "analysis/tests"):
    if os.path.join(ROOT, _path) not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, _path))


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
