"""PYTHONPATH=bench python3 -m plan knobs-mk | guest-config DIR | drivers:
the files generated from the registries (plan/render.py)."""
import sys

from . import render


def main(argv):
    if argv == ["knobs-mk"]:
        sys.stdout.write(render.knobs_mk())
    elif len(argv) == 2 and argv[0] == "guest-config":
        render.guest_config(argv[1])
    elif argv == ["drivers"]:
        print(render.drivers())
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
