"""Each variant's kernel, through the leaves: its source unpacked or
exported (tree.sh source), one config per source (kconfig.sh), its tree
(tree.sh variant) and its build (build.sh), installed with its build.json
under BUILD_DIR's kernels folder. A kernel whose series and config have
not changed is not built again."""
import json
import os
import re
import shutil
import subprocess
import time

from plan import knobs, versions
from plan.model import BuildRecord, RecordError, read, write

from . import git
from .children import guarded, output
from .say import Refused, log, shown
from .variants import series_label, series_patches, series_sha256

BENCH = os.path.join(knobs.ROOT, "bench")


def prepare_source(build, variant, ksrc):
    """The variant's source tree (unpacked or exported once); its path."""
    out = build.source(variant.source, variant.version)
    if variant.source.startswith("git:"):
        cmd = ["source-git", ksrc, variant.source[len("git:"):], out]
    else:
        cmd = ["source-tree", variant.version, out]
    guarded(["bash", BENCH + "/tree.sh", *cmd])
    return out


def version_fragments(build, version):
    """Each fragment of the flavour, followed by its fragments for the
    kernel versions up to version (NAME-from-V.config: what changed at V,
    so that a later kernel is configured like the earlier ones), oldest
    first."""
    out = []
    for f in build.fragments:
        base = f[:-len(".config")] if f.endswith(".config") else f
        d = os.path.dirname(base)
        later = []
        for name in (os.listdir(d) if os.path.isdir(d) else []):
            m = re.fullmatch(re.escape(os.path.basename(base)) + r"-from-([0-9.]+)\.config", name)
            if m and versions.key(m.group(1)) <= versions.key(version):
                later.append((versions.key(m.group(1)), os.path.join(d, name)))
        out += [f] + [p for _, p in sorted(later)]
    return out


def make_configs(build, variants, ksrc):
    """One config per source, made and checked against the fragments;
    {variant: (config folder, its sha256)}."""
    made, out = {}, {}
    for v in variants:
        config = build.config(v.source, v.version)
        if config not in made:
            source = prepare_source(build, v, ksrc)
            guarded(["bash", BENCH + "/kconfig.sh", "make", config, source, build.base_config,
                     *version_fragments(build, v.version)])
            with open(os.path.join(config, "config.sha256")) as f:
                made[config] = f.read().strip()
        out[v.name] = (config, made[config])
    return out


def make_trees(build, variants, ksrc, patches_dir):
    """Every variant's tree, the series applied, before any build: a patch
    that does not apply stops the run before a kernel is built. {variant:
    its series sha256}."""
    shas = {}
    for v in variants:
        source = prepare_source(build, v, ksrc)
        shas[v.name] = series_sha256(v, source)
        patches = [p for d in v.series for p in series_patches(d)]
        guarded(["bash", BENCH + "/tree.sh", "variant", v.name, source, build.tree(v.name),
                 shas[v.name], *patches], stdout=subprocess.DEVNULL)
    return shas


def up_to_date(build, name, series_sha, config_sha):
    """The kernel is installed from this series and config, and its object
    folder is there (the guest modules are built against it)."""
    try:
        rec = read(os.path.join(build.kernel(name), "build.json"), BuildRecord)
    except (OSError, ValueError, RecordError):
        return False
    return (rec.series_sha256 == series_sha and rec.config_sha256 == config_sha
            and os.path.exists(os.path.join(build.obj(name), "Module.symvers")))


def _source_record(build, variant, ksrc):
    if variant.source.startswith("tree:"):
        path = output(["bash", BENCH + "/kernel-source.sh", "record", variant.version]).strip()
        with open(path) as f:
            return {"source_package": json.load(f)}
    commit = variant.source[len("git:"):]
    return {"ksrc": os.path.realpath(ksrc), "ref": variant.ref, "commit": commit,
            "describe": git.describe(ksrc, commit)}


def build_kernel(build, variant, config, series_sha, config_sha, ksrc, patches_dir):
    """Build the variant's kernel unless it is up to date, and install it
    whole (a staging folder renamed into place)."""
    name = variant.name
    if up_to_date(build, name, series_sha, config_sha):
        log("kernel '%s' is up to date" % name)
        return
    staging = os.path.join(build.kernels, ".%s.tmp" % name)
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    t0 = time.monotonic()
    guarded(["bash", BENCH + "/build.sh", name, build.tree(name), build.obj(name), config,
             staging, build.steps_record])
    facts_path = os.path.join(staging, "facts.json")
    with open(facts_path) as f:
        facts = json.load(f)
    os.remove(facts_path)
    release = facts["kernel_release"]
    record = BuildRecord(
        variant=name, series=[series_label(d, patches_dir) for d in variant.series],
        series_sha256=series_sha, source=variant.source,
        kernel_version=release.split("-mmlat-")[0], kernel_release=release,
        config_sha256=config_sha, build_seconds=round(time.monotonic() - t0),
        ccache_hits=facts["ccache_hits"], ccache_misses=facts["ccache_misses"],
        obj_dir=build.obj(name), **_source_record(build, variant, ksrc))
    write(os.path.join(staging, "build.json"), record)
    out = build.kernel(name)
    shutil.rmtree(out + ".old", ignore_errors=True)
    if os.path.exists(out):
        os.rename(out, out + ".old")
    os.rename(staging, out)
    shutil.rmtree(out + ".old", ignore_errors=True)
    log("kernel '%s' %s built in %ds (ccache hits %d, misses %d)"
        % (name, release, record.build_seconds, record.ccache_hits, record.ccache_misses))


def check_configs(configs, cross):
    """The variants share one config unless CROSS=yes; else nothing is
    built."""
    if cross or len({sha for _, sha in configs.values()}) <= 1:
        return
    lines = "".join("    %s: %s (%s)\n" % (n, sha[:12], shown(d))
                    for n, (d, sha) in configs.items())
    raise Refused("the variants' sources give different configs:\n%s    nothing was built: set "
                  "CROSS=yes to compare them anyway (the report lists the differences)" % lines)
