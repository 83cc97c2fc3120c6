"""SIGINT, SIGTERM and SIGHUP stop the run at once: the handler raises
Stopped wherever the orchestrator is (waiting on a leaf, on guests), and
the run stops its children, keeps only complete boots and names the
RUN_ID to rerun with. A second signal while it stops is ignored."""
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    def __init__(self, signum):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self):
        return signal.Signals(self.signum).name


def _raise(signum, frame):
    ignore()
    raise Stopped(signum)


def install():
    for s in SIGNALS:
        signal.signal(s, _raise)


def ignore():
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)
