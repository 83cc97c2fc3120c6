"""PYTHONPATH=bench /usr/bin/python3 -m orchestrator run | kernels

  run       make bench, make calibrate, make check-kernels: the run the
            knobs describe (plan/knobs.py), from the environment
  kernels   make kernels: the kernels of VARIANTS, nothing booted"""
import os
import sys

from plan import calib, knobs, workloads

from . import run
from .say import LeafFailed, Refused, error

COMMANDS = {"run": run.run, "kernels": run.build_kernels}


def main(argv):
    if len(argv) != 1 or argv[0] not in COMMANDS:
        sys.stderr.write(__doc__ + "\n")
        return 2
    try:
        return COMMANDS[argv[0]](knobs.read(os.environ))
    except (knobs.KnobError, workloads.EntryError, calib.CalibError) as e:
        error(str(e))
        return 1
    except Refused as e:
        error(str(e))
        return e.status
    except LeafFailed as e:
        return e.rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
