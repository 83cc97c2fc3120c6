"""The version-drift guard: every function guest/classes.txt names (lock
users, class anchors, plumbing and interrupt entries) must be in the
System.map of each kernel whose version the row expects it in, so that a
function a new kernel renamed, split or inlined stops the run before a
boot instead of turning up as a growing "other" class in a report.

A kernel folder is build/kernels/<variant> or results/<run>/kernels/<variant>:
its build.json gives the kernel version, its System.map the functions.  A
name matches a System.map symbol with its .isra/.constprop/.part/.cold
suffixes stripped (the analysis reads frames that way); a name ending in *
matches when some symbol starts with the rest; bracketed names ([idle])
and the guest modules' functions (name@guest) are in no System.map; an
optional name (name?) some kernels of its versions lack, so its absence is
counted, not failed."""
import json
import os
from dataclasses import asdict, dataclass, field

from . import attribute, parse

CLASSES_FILE = os.path.join("guest", "classes.txt")


class UnreadableKernel(ValueError):
    """A kernel folder without a readable build.json or System.map."""


@dataclass(frozen=True)
class Missing:
    """A name classes.txt expects in a kernel whose System.map lacks it."""
    name: str           # the function, without its range
    spelled: str        # as the table spells it, range included
    line: int           # its row in guest/classes.txt
    cls: str            # the row's class; "-" for plumbing and boundary rows
    match: str
    lock: str           # the lock a lock user takes, or None
    expected: str       # the versions the row expects it in, in words
    optional: bool = False  # marked name?: no drift

    def role(self):
        if self.lock:
            return "a %s-lock user, whose lock calls the window module hooks" % self.lock
        if self.match in attribute.FRAME_LISTS:
            return "a %s frame" % self.match
        return "an anchor (%s) of class %s" % (self.match, self.cls)

    def message(self, release):
        return ("Linux %s's System.map has no %s, which %s:%d expects from %s (%s): "
                "give the name the versions that have it (%s@-X.Y, see the file's "
                "header) and list the function that replaced it, if any"
                % (release, self.name, CLASSES_FILE, self.line, self.expected, self.role(),
                   self.name))


@dataclass
class Drift:
    """The check of one kernel folder."""
    kernel_dir: str
    kernel_version: str         # build.json's, e.g. 7.3.4
    checked: int                # names the table expects in this version
    missing: list = field(default_factory=list)
    absent_optional: list = field(default_factory=list)    # their spellings

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, d):
        return cls(d["kernel_dir"], d["kernel_version"], d["checked"],
                   [Missing(**m) for m in d["missing"]], list(d["absent_optional"]))


def symbol_names(system_map):
    """The text symbols of a System.map (path or parse.SymbolMap), their
    .isra/.constprop/.part/.cold suffixes stripped."""
    sm = system_map if isinstance(system_map, parse.SymbolMap) else parse.SymbolMap(system_map)
    return {attribute.func_name(n) for n in sm.names}


def _present(name, symbols, prefixes):
    if name.endswith("*"):
        stem = name[:-1]
        return any(p.startswith(stem) for p in prefixes)
    return name in symbols


def expected_names(version, rules=None):
    """(Name, Rule) of every function the table expects in a kernel of
    version (X, Y), in table order."""
    return [(n, r) for r in rules or attribute.RULES for n in r.names
            if not n.name.startswith("[") and n.expected_in(version)]


def check(symbols, version, rules=None):
    """The Missing of a kernel of version (X, Y) whose System.map has these
    symbol names (suffixes stripped), in table order, optional names
    included (Missing.optional)."""
    ordered = sorted(symbols)
    out = []
    for n, r in expected_names(version, rules):
        if not _present(n.name, symbols, ordered):
            out.append(Missing(n.name, n.spelled(), r.line, r.cls, r.match, r.lock,
                               n.range_text(), n.optional))
    return out


def check_kernel_dir(kernel_dir, rules=None):
    """Drift of a kernel folder (build.json and System.map).  Raises
    UnreadableKernel naming the file that is missing or unreadable."""
    build = os.path.join(kernel_dir, "build.json")
    smap = os.path.join(kernel_dir, "System.map")
    try:
        with open(build, encoding="utf-8") as f:
            release = json.load(f)["kernel_version"]
        version = attribute.parse_version(release)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UnreadableKernel("%s: no kernel version (%s)" % (build, e))
    if version < attribute.OLDEST:
        raise UnreadableKernel("%s: Linux %s is older than %s, the oldest kernel %s describes"
                               % (build, release, attribute.version_text(attribute.OLDEST),
                                  CLASSES_FILE))
    try:
        symbols = symbol_names(smap)
    except (OSError, ValueError) as e:
        raise UnreadableKernel("%s: %s" % (smap, e))
    gone = check(symbols, version, rules)
    return Drift(kernel_dir, release, len(expected_names(version, rules)),
                 [m for m in gone if not m.optional], [m.spelled for m in gone if m.optional])


def main(kernel_dirs, out=None, err=None):
    """mmlat drift KERNEL_DIR...: 0 when every kernel has every function
    the table expects in its version, 1 naming each one missing, 2 when a
    folder cannot be read."""
    import sys
    out, err = out or sys.stdout, err or sys.stderr
    status = 0
    for d in kernel_dirs:
        try:
            r = check_kernel_dir(d)
        except UnreadableKernel as e:
            print("mmlat: drift: %s" % e, file=err)
            status = 2
            continue
        for m in r.missing:
            print("mmlat: drift: %s: %s" % (d, m.message(r.kernel_version)), file=err)
        if r.missing:
            status = max(status, 1)
        print("drift: %s (Linux %s): %d of %d functions of %s missing from System.map%s"
              % (d, r.kernel_version, len(r.missing), r.checked, CLASSES_FILE,
                 "; %d optional ones absent" % len(r.absent_optional)
                 if r.absent_optional else ""), file=out)
    return status
