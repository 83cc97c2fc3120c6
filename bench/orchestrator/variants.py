"""Variant resolution: a VARIANTS spec into a plan.model.Variant.

A spec is a name declared in VARIANTS_CONF, an ad hoc name=part[+part...],
or, with KSRC set, a git ref of KSRC. A part is a series directory
(relative to PATCHES_DIR, or a path), tree:VERSION (Debian's
linux-source-VERSION) or git:REF (a commit of KSRC); the source comes
first, and a spec without one builds on the packaged tree TREE. Every
part is checked, and the versions policy (plan/versions.py) applied,
before anything is fetched or built."""
import os
import re

from plan import knobs, series, versions
from plan.model import Variant

from . import git
from .say import Refused, shown

_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def ref_name(ref):
    """The variant name of a bare git ref: HEAD~2 is HEAD-2."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", ref)


def declared(conf):
    """{name: parts} of a variants.conf."""
    out = {}
    if os.path.exists(conf):
        with open(conf) as f:
            for line in f:
                m = re.match(r"([A-Za-z0-9_.-]+):(.*)", line)
                if m:
                    out[m.group(1)] = m.group(2).split()
    return out


def series_label(path, patches_dir):
    """A series directory as variants.conf names it, or its path when it
    lies outside PATCHES_DIR."""
    prefix = patches_dir.rstrip("/") + "/"
    return path[len(prefix):] if path.startswith(prefix) else path


def series_patches(series_dir):
    """The patch files of a series directory, in order (plan/series.py)."""
    try:
        return series.patches(series_dir)
    except series.MissingPatch as e:
        raise Refused(str(e)) from None


def series_sha256(variant, source_dir):
    """The variant's series hash (plan/series.py) over its source as
    unpacked (the package version tree.sh recorded): a tree and a kernel
    are rebuilt when it changes."""
    try:
        with open(os.path.join(source_dir, ".mmlat-package")) as f:
            package = f.read().rstrip("\n")
    except OSError:
        package = ""
    try:
        return series.sha256(variant.source, package, variant.series)
    except series.MissingPatch as e:
        raise Refused(str(e)) from None


class Resolver:
    """Resolves specs against the knobs' values (VARIANTS_CONF, KSRC, TREE,
    PATCHES_DIR, KERNEL_SOURCES_CONF, INSTRUMENTATION_SERIES)."""

    def __init__(self, values):
        self.values = values
        self.conf = values["VARIANTS_CONF"]
        self.ksrc = values["KSRC"]
        self.patches = values["PATCHES_DIR"]
        self.trees = knobs.kernel_source_versions(values)

    def resolve(self, spec):
        name, parts = self._parts(spec)
        if not _NAME.fullmatch(name):
            raise Refused("VARIANTS: bad variant name '%s': use letters, digits, '.', '_' or '-'"
                          % name)
        source, dirs = None, []
        for part in parts:
            if part.startswith(("tree:", "git:")):
                if source or dirs:
                    raise Refused("VARIANTS: variant '%s': '%s': one source, before the series "
                                  "directories" % (name, part))
                source = part
            else:
                dirs.append(part)
        source = source or "tree:" + self.values["TREE"]
        ref = ""
        if source.startswith("tree:"):
            version = source[len("tree:"):] or self.values["TREE"]
            source = "tree:" + version
        else:
            ref = source[len("git:"):]
            source, version = self._git_source(name, ref)
        what = "variant '%s' (%s)" % (name, ref or source)
        self._check_version(what, source, version)
        instr = self._instrumentation(version)
        series = tuple(self._series_dir(name, d, version, ref or source) for d in instr + dirs)
        return Variant(name=name, spec=spec, source=source, version=version, ref=ref,
                       series=series, instrumentation=len(instr))

    def _parts(self, spec):
        if "=" in spec:
            name, _, parts = spec.partition("=")
            return name, parts.replace("+", " ").split()
        conf = declared(self.conf)
        if spec in conf:
            return spec, conf[spec]
        if self.ksrc:
            return ref_name(spec), ["git:" + spec]
        raise Refused("VARIANTS: unknown variant '%s': not in %s, which declares: %s (or use "
                      "name=series-dir, or KSRC=<git tree> for a git ref)"
                      % (spec, shown(self.conf), " ".join(conf)))

    def _git_source(self, name, ref):
        if not self.ksrc:
            raise Refused("VARIANTS: variant '%s' names git:%s, but KSRC (the git tree) is not "
                          "set" % (name, ref))
        if not git.is_tree(self.ksrc):
            raise knobs.KnobError("KSRC", self.ksrc, knobs.knob("KSRC").takes(self.values))
        commit = git.commit(self.ksrc, ref)
        if not commit:
            raise Refused("VARIANTS: variant '%s': '%s' is no commit of %s (git rev-parse)"
                          % (name, ref, self.ksrc))
        version = git.version(self.ksrc, commit)
        if version is None:
            raise Refused("VARIANTS: variant '%s': %s (%s) has no top-level Makefile: not a "
                          "Linux tree" % (name, ref, commit))
        return "git:" + commit, version

    def _check_version(self, what, source, version):
        if not re.fullmatch(r"[0-9]+\.[0-9]+", version):
            raise Refused("VARIANTS: %s: its Makefile gives no VERSION and PATCHLEVEL: not a "
                          "Linux tree" % what)
        if versions.key(version) < versions.key(versions.OLDEST):
            raise Refused("VARIANTS: %s is Linux %s; mmlat needs %s or later (its guest "
                          "modules, config fragments and classes.txt start at %s)"
                          % (what, version, versions.OLDEST, versions.OLDEST))
        if source.startswith("tree:") and version not in self.trees:
            raise Refused("VARIANTS: %s: Debian's linux-source-%s is not in %s (TREE takes one "
                          "of: %s); add its suites there"
                          % (what, version, shown(self.values["KERNEL_SOURCES_CONF"]),
                             " ".join(self.trees)))

    def _instrumentation(self, version):
        if "INSTRUMENTATION_SERIES" in self.values:
            return self.values["INSTRUMENTATION_SERIES"].split()
        return list(versions.instrumentation(version))

    def _series_dir(self, name, d, version, origin):
        if not os.path.isdir(d):
            d = os.path.join(self.patches, d)
        if not os.path.isdir(d):
            raise Refused("VARIANTS: variant '%s': series directory '%s' does not exist"
                          % (name, d))
        if not os.path.isfile(os.path.join(d, "series")):
            raise Refused("VARIANTS: variant '%s': %s has no 'series' file" % (name, d))
        d = os.path.abspath(d)
        applies = versions.series_versions(d)
        if applies and version not in applies[0]:
            vs, why = applies
            raise Refused("VARIANTS: variant '%s' is Linux %s (%s), but %s applies to Linux %s "
                          "only%s; on %s compare mainline, the tree as it ships, with a series "
                          "of your own: BASELINE=mainline PATCHED=mine=path/to/series-dir"
                          % (name, version, origin, series_label(d, self.patches), " ".join(vs),
                             " (%s)" % why if why else "", version))
        return d
