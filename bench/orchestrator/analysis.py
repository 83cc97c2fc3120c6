"""The run's calls into the analysis (analysis/mmlat, run as the Makefile
runs it): REPEAT=auto's rule between rounds (`mmlat look`) and the
version-drift guard on the built kernels before any traced boot (`mmlat
drift`)."""
import json
import os
import sys

from plan import knobs

from .children import guarded, output
from .say import Refused

PATH = ":".join(os.path.join(knobs.ROOT, d) for d in ("analysis", "bench"))


def command(values, *args):
    return [values["PYTHON"], "-m", "mmlat", *args]


def look(run, values):
    """The analysis's answer after the run's last round (sequential.Round
    as JSON)."""
    return json.loads(output(command(values, "look", run.dir, "--baseline", values["BASELINE"],
                                     "--patched", values["PATCHED"]),
                             env=dict(os.environ, PYTHONPATH=PATH)))


def drift(values, kernel_dirs):
    """Every function guest/classes.txt expects in each kernel's version is
    in its System.map (analysis/mmlat/drift.py): a renamed lock user would
    otherwise go unhooked and its windows into the report's "other" class.
    Else the run stops before a boot, the missing names listed above."""
    rc = guarded(command(values, "drift", *kernel_dirs), check=False, stdout=sys.stderr,
                 env=dict(os.environ, PYTHONPATH=PATH))
    if rc != 0:
        raise Refused("guest/classes.txt names functions a kernel of this run lacks (above); "
                      "nothing was booted")
