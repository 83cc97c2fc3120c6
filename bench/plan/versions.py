"""Which kernel versions mmlat runs, and which series apply to which.

TESTED runs as tested; another version from OLDEST on runs with a warning
in the log and the report (meta.json "untested"), once every check that
can stop it before a boot has passed (its config fragments, the guest
modules' build, classes.txt's functions in its System.map); an older one
is refused. A series directory with a 'versions' file applies to the
versions on its first line only, for the reason on its 'why:' line.

Every variant carries the instrumentation of its version first, so that
the variants of a run differ only by their own series: on 6.1,
patches/preemptirq-trace, which changes nothing until the preemptirq
tracepoints are on and then keeps their cost out of the windows; 6.2 and
later need none (their x86 entry and idle code calls the plain
tracepoints)."""
import os

TESTED = ("6.1", "6.12", "7.3")
OLDEST = "6.1"
INSTRUMENTATION = {"6.1": ("preemptirq-trace",)}


def key(version):
    """VERSION.PATCHLEVEL as a sort key."""
    return tuple(int(part) for part in version.split("."))


def tested(version):
    return version in TESTED


def instrumentation(version):
    return INSTRUMENTATION.get(version, ())


def series_versions(series_dir):
    """(versions, why) of a series directory's 'versions' file, or None
    when it has none (it applies to every version)."""
    path = os.path.join(series_dir, "versions")
    if not os.path.exists(path):
        return None
    versions, why = [], ""
    with open(path) as f:
        for line in f:
            if line.startswith("why:"):
                why = line[len("why:"):].strip()
            else:
                versions += line.split("#", 1)[0].split()
    return versions, why
