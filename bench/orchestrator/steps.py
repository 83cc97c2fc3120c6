"""STEPS=each: every prefix of the patched side's own patches becomes a
variant, so that the report can say which patch moved which endpoint.

The patched variant carries the baseline's series directories first; the
patches of its further directories, in order, are the steps. Step k is
the baseline's directories, the further directories whose patches all
come before patch k, and, unless patch k ends its directory, a partial
copy of that directory holding its patches up to patch k
(BUILD_DIR/steps/<name>/, written at the config stage). Its tree differs
from the previous step's by one patch, so ccache (keyed across variant
trees) compiles only what that patch touches. The last step is the
patched variant itself, under its own name.

Two git refs of KSRC: the steps are the commits of BASELINE..PATCHED,
first parents only (a merge is one step), each a variant of its own;
BASELINE must be an ancestor of PATCHED."""
import os
import shutil
from dataclasses import dataclass, replace

from plan.model import Step

from . import git
from .say import Refused
from .variants import series_label, series_patches


@dataclass(frozen=True)
class Partial:
    """A step's partial series directory: the first count patches of src."""
    dir: str
    count: int
    src: str


def _labels(dirs, patches_dir):
    return " ".join(series_label(d, patches_dir) for d in dirs) or "none"


def plan(base, patched, steps_dir, patches_dir, ksrc):
    """([Step], [Variant] of each step, the last the patched variant,
    [Partial]) from the baseline to the patched variant; writes nothing."""
    if base.source != patched.source:
        return _commit_steps(base, patched, ksrc)
    n = len(base.series)
    own = patched.series[base.instrumentation:]
    if patched.series[:n] != base.series:
        raise Refused("STEPS=each: the series directories of '%s' (%s) do not start with those "
                      "of '%s' (%s): the steps are the baseline plus the patched variant's "
                      "further patches, one at a time"
                      % (patched.name, _labels(own, patches_dir), base.name,
                         _labels(base.series[base.instrumentation:], patches_dir)))
    steps, variants, partials = [], [], []
    done = list(base.series)
    previous = base.name
    for d in patched.series[n:]:
        patches = series_patches(d)
        for j, p in enumerate(patches, 1):
            name = "%s.%d" % (patched.name, len(steps) + 1)
            series = done + [d]
            if j < len(patches):
                partial = Partial(os.path.join(steps_dir, name), j, d)
                partials.append(partial)
                series = done + [partial.dir]
            spec = "%s=%s" % (name, "+".join(
                [patched.source] + series[patched.instrumentation:]))
            variants.append(replace(patched, name=name, spec=spec, series=tuple(series),
                                    ref=patched.source[len("git:"):] if patched.ref else ""))
            steps.append(Step(variant=name, previous=previous, patch=p[len(d) + 1:],
                              series=series_label(d, patches_dir), index=len(steps) + 1))
            previous = name
        done.append(d)
    if not steps:
        raise Refused("STEPS=each: '%s' adds no patch to '%s' (its series directories beyond "
                      "the baseline's: %s)"
                      % (patched.name, base.name, _labels(patched.series[n:], patches_dir)))
    steps, variants = _last_is_patched(steps, variants, patched, base)
    return steps, variants, partials


def _last_is_patched(steps, variants, patched, base):
    """The last step is the patched variant itself, under its own name."""
    steps[-1] = replace(steps[-1], variant=patched.name)
    variants[-1] = patched
    for step in steps:
        if step.variant == base.name:
            raise Refused("STEPS=each: a step of '%s' would be called '%s', the baseline's "
                          "name; rename one of them" % (patched.name, base.name))
    return steps, variants


def _commit_steps(base, patched, ksrc):
    if not (base.source.startswith("git:") and patched.source.startswith("git:")):
        raise Refused("STEPS=each: '%s' (%s) and '%s' (%s) are on other sources: the steps are "
                      "either the patched variant's further patches on one source, or the "
                      "commits between two git refs of KSRC"
                      % (base.name, base.source, patched.name, patched.source))
    if len(patched.series) != len(base.series):
        raise Refused("STEPS=each: '%s' and '%s' are git refs with other series directories on "
                      "top; the steps between two refs are their commits alone"
                      % (patched.name, base.name))
    old, new = base.source[len("git:"):], patched.source[len("git:"):]
    if not git.is_ancestor(ksrc, old, new):
        raise Refused("STEPS=each: %s (%s) is not an ancestor of %s (%s) in %s: the steps are "
                      "the commits of BASELINE..PATCHED"
                      % (base.name, old[:12], patched.ref, new[:12], ksrc))
    commits = git.first_parents(ksrc, old, new)
    if not commits:
        raise Refused("STEPS=each: %s..%s holds no commit" % (base.name, patched.ref))
    steps, variants = [], []
    previous = base.name
    for k, commit in enumerate(commits, 1):
        name = "%s.%d" % (patched.name, k)
        variants.append(replace(patched, name=name, spec="%s=git:%s" % (name, commit),
                                source="git:" + commit, ref=commit))
        steps.append(Step(variant=name, previous=previous, patch=git.oneline(ksrc, commit),
                          series="git:%s..%s" % (base.name, patched.name), index=k))
        previous = name
    steps, variants = _last_is_patched(steps, variants, patched, base)
    return steps, variants, []


def write_partial(partial):
    """partial.dir: the first count patches of its source directory and a
    series file naming them. The copies keep the step's series sha256 that
    of the patches' contents, whatever becomes of the source later."""
    staging = os.path.join(os.path.dirname(partial.dir), "." + os.path.basename(partial.dir)
                           + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    names = []
    for p in series_patches(partial.src)[:partial.count]:
        rel = p[len(partial.src) + 1:]
        os.makedirs(os.path.dirname(os.path.join(staging, rel)), exist_ok=True)
        shutil.copyfile(p, os.path.join(staging, rel))
        names.append(rel)
    with open(os.path.join(staging, "series"), "w") as f:
        f.write("".join(n + "\n" for n in names))
    shutil.rmtree(partial.dir, ignore_errors=True)
    os.rename(staging, partial.dir)
