"""The knob registry (bench/plan/knobs.py) and what reads it: every knob
checked at the orchestrator's entry, before the config stage (a bad value
fails within 2 s, naming the knob, the value and what is allowed, and
writes nothing under results/ or build/); meta.json's knobs; the
Makefile's defaults and make help; and a scan of the code for every read
of the environment, each of which must be a row."""
import json
import os
import re
import subprocess
import time

import pytest
from helpers import NO_ARCHIVE, ROOT, clean_environ
from plan import knobs


def tree(path):
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


BAD_KNOBS = [
    ({"TRACE": "window"}, "TRACE='window' is not allowed: TRACE takes one of: auto windows max "
     "full plugin none"),
    ({"ACCEL": "bogus"}, "ACCEL='bogus' is not allowed: ACCEL takes one of: auto kvm tcg-icount "
     "tcg-mt"),
    ({"DURATION": "abc"}, "DURATION='abc' is not allowed: DURATION takes an integer in 1..3600"),
    ({"DURATION": "0"}, "DURATION='0' is not allowed: DURATION takes an integer in 1..3600"),
    ({"REPEAT": "0"}, "REPEAT='0' is not allowed: REPEAT takes auto or an integer in 1..1000"),
    ({"REPEAT": "1x"}, "REPEAT='1x' is not allowed: REPEAT takes auto or an integer in 1..1000"),
    ({"SMP": "x", "ACCEL": "tcg-mt"}, "SMP='x' is not allowed: SMP takes an integer in 1..64"),
    ({"SMP": "2", "ICOUNT_QEMU": "/nonexistent/qemu"},
     "SMP=2 with ACCEL=tcg-icount: ICOUNT_QEMU='/nonexistent/qemu' does not run"),
    ({"WORKLOADS": "munmap bogus"}, "WORKLOADS entry 'bogus': unknown workload 'bogus': a "
                                    "workload is one of: munmap exit truncate fork mixed"),
    ({"WORKLOADS": "bogus:n=1"}, "WORKLOADS entry 'bogus:n=1': unknown workload 'bogus'"),
    ({"WORKLOADS": "imap:n=0"}, "WORKLOADS entry 'imap:n=0': n=0 is not an integer in 1..4096"),
    ({"SWEEP": "bogus:n=1,2"}, "SWEEP 'bogus:n=1,2' (entry 'bogus:n=1'): unknown workload 'bogus'"),
    ({"VARIANTS": "base nosuch"}, "VARIANTS: unknown variant 'nosuch': not in "),
    ({"VARIANTS": "base base"}, "VARIANTS='base base' is not allowed: VARIANTS takes each "
                                "variant once"),
    ({"CALIB": "bogus:10"}, "CALIB='bogus:10'"),
    ({"CALIB_WORKLOADS": "munmpa"}, "CALIB_WORKLOADS names 'munmpa', which is neither calib "
                                    "nor one of WORKLOADS (munmap idle)"),
    ({"CALIB": "", "CALIB_WORKLOADS": "bogus"}, "CALIB_WORKLOADS entry 'bogus': unknown workload"),
    ({"STRICT": "yes"}, "STRICT='yes' is not allowed: STRICT takes one of: 0 1"),
    ({"JOBS": "0"}, "JOBS='0' is not allowed: JOBS takes auto or an integer in 1..64"),
    ({"JOBS": "two"}, "JOBS='two' is not allowed: JOBS takes auto or an integer in 1..64"),
    ({"RUN_ID": "../x"}, "RUN_ID='../x' is not allowed"),
    ({"FLAVOR": "fast"}, "FLAVOR='fast' is not allowed: FLAVOR takes one of: bench check hw"),
    ({"EXECUTOR": "slurm"}, "EXECUTOR='slurm' is not allowed: EXECUTOR takes one of: local lava-local lava"),
    ({"SIZE_MIB": "0"}, "SIZE_MIB='0' is not allowed: SIZE_MIB takes an integer in 1..1024"),
    ({"CELL_TIMEOUT": "-1"}, "CELL_TIMEOUT='-1' is not allowed: CELL_TIMEOUT takes an integer "
     "in 1..86400"),
    ({"STEPS": "every"}, "STEPS='every' is not allowed: STEPS takes one of: all each"),
    ({"STEPS": "each", "VARIANTS": "base=pre"},
     "VARIANTS='base=pre' is not allowed: VARIANTS takes with STEPS=each exactly two variants, "
     "a baseline and a patched one whose series directories start with the baseline's"),
    ({"STEPS": "each", "VARIANTS": "base=pre a=pre+ser b=pre+ser+more"},
     "VARIANTS='base=pre a=pre+ser b=pre+ser+more' is not allowed: VARIANTS takes with "
     "STEPS=each exactly two variants"),
    ({"STEPS": "each", "VARIANTS": "base=pre+ser mine=pre+more"},
     "STEPS=each: the series directories of 'mine' (pre more) do not start with those of "
     "'base' (pre ser)"),
    ({"STEPS": "each", "VARIANTS": "base=ser mine=pre+ser"},
     "STEPS=each: the series directories of 'mine' (pre ser) do not start with those of "
     "'base' (ser)"),
    ({"STEPS": "each"}, "STEPS=each: 'patch' adds no patch to 'base' (its series directories "
                        "beyond the baseline's: none)"),
    ({"STEPS": "each", "VARIANTS": "base=pre mine=pre+empty"},
     "STEPS=each: 'mine' adds no patch to 'base' (its series directories beyond the "
     "baseline's: empty)"),
    ({"STEPS": "each", "VARIANTS": "mine.1=pre mine=pre+ser"},
     "STEPS=each: a step of 'mine' would be called 'mine.1', the baseline's name"),
    ({"TREE": "6.5"}, "TREE='6.5' is not allowed: TREE takes one of: 6.1 6.12 7.2 7.3"),
    ({"TREE": "7.3", "VARIANTS": "base x=only61"},
     "variant 'x' is Linux 7.3 (tree:7.3), but only61 applies to Linux 6.1 only (the "
     "seed's port); on 7.3 compare mainline"),
    ({"CROSS": "maybe"}, "CROSS='maybe' is not allowed: CROSS takes one of: no yes"),
    ({"KSRC": "/nonexistent"}, "KSRC='/nonexistent' is not allowed: KSRC takes the path of a "
                               "git tree"),
    ({"VARIANTS": "base new=tree:6.12"},
     "VARIANTS mixes kernel versions (base Linux 6.1, new Linux 6.12): their configs differ, "
     "so set CROSS=yes"),
    ({"VARIANTS": "base x=tree:6.5"}, "variant 'x' (tree:6.5): Debian's linux-source-6.5 is "
                                      "not in bench/kernel-sources.conf"),
    ({"VARIANTS": "base x=tree:5.10"}, "variant 'x' (tree:5.10) is Linux 5.10; mmlat needs 6.1 "
                                       "or later"),
    ({"VARIANTS": "base x=pre+tree:6.12"}, "variant 'x': 'tree:6.12': one source, before the "
                                           "series directories"),
    ({"VARIANTS": "base x=git:HEAD"}, "variant 'x' names git:HEAD, but KSRC (the git tree) "
                                      "is not set"),
    ({"VARIANTS": "base nosuch"}, "unknown variant 'nosuch'"),
    ({"STEPS": "each", "VARIANTS": "base=pre mine=tree:6.12+pre+ser", "CROSS": "yes"},
     "STEPS=each: 'base' (tree:6.1) and 'mine' (tree:6.12) are on other sources"),
]


@pytest.mark.parametrize("env, message", BAD_KNOBS, ids=[
    "-".join("%s=%s" % kv for kv in env.items()) for env, _ in BAD_KNOBS])
def test_matrix_refuses_every_bad_knob_at_the_entry(matrix, tmp_path, env, message):
    run_matrix, run = matrix
    build_before = tree(tmp_path / "build")
    t0 = time.monotonic()
    proc, boots = run_matrix(**env)
    secs = time.monotonic() - t0
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert secs < 2, secs
    assert "stage 1/4" not in proc.stderr and boots == []
    assert not (tmp_path / "results").exists()
    assert tree(tmp_path / "build") == build_before


# The same from the real orchestrator, with the bad inputs the issue
# measured; Debian's archive points nowhere, so that a knob the entry
# missed could not get far into the config stage.
@pytest.mark.parametrize("knob, value", [
    ("TRACE", "window"), ("ACCEL", "bogus"), ("DURATION", "abc"), ("WORKLOADS", "bogus"),
    ("REPEAT", "0"), ("SMP", "x"), ("JOBS", "0"), ("TREE", "6.5"), ("CROSS", "maybe")])
def test_real_matrix_refuses_bad_knobs_before_the_config(tmp_path, knob, value):
    results, build = tmp_path / "results", tmp_path / "build"
    env = dict(clean_environ(), RESULTS_DIR=str(results), BUILD_DIR=str(build), RUN_ID="bad",
               PYTHONPATH="bench", **NO_ARCHIVE, **{knob: value})
    t0 = time.monotonic()
    proc = subprocess.run(["/usr/bin/python3", "-m", "orchestrator", "run"], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=60)
    secs = time.monotonic() - t0
    assert proc.returncode != 0, proc.stderr
    assert "%s entry '%s'" % (knob, value) in proc.stderr if knob == "WORKLOADS" else (
        "%s='%s' is not allowed: %s takes " % (knob, value, knob) in proc.stderr), proc.stderr
    assert "stage 1/4" not in proc.stderr and secs < 2, (secs, proc.stderr)
    assert not results.exists() and not build.exists()


def test_meta_records_every_knob_as_given_and_what_ran(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(ACCEL="auto", JOBS="auto", CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert set(meta["knobs"]) == {k.name for k in knobs.KNOBS if k.run}
    assert {k: meta["knobs"][k] for k in (
        "VARIANTS", "STEPS", "TREE", "KSRC", "CROSS", "WORKLOADS", "SWEEP", "DURATION",
        "REPEAT", "ACCEL", "SMP", "JOBS", "TRACE", "CALIB", "CALIB_WORKLOADS", "FLAVOR",
        "STRICT", "RUN_ID", "EXECUTOR")} == {
        "VARIANTS": "base patch", "STEPS": "all", "TREE": "6.1", "KSRC": "", "CROSS": "no",
        "WORKLOADS": "munmap idle", "SWEEP": "", "DURATION": "1", "REPEAT": "1",
        "ACCEL": "auto", "SMP": "", "JOBS": "auto", "TRACE": "windows", "CALIB": "",
        "CALIB_WORKLOADS": "idle", "FLAVOR": "bench", "STRICT": "0", "RUN_ID": "t",
        "EXECUTOR": "local"}
    # what ran: the probe's accelerator and its default vCPU count
    assert (meta["accel"], meta["smp"], meta["trace"]) == ("tcg-icount", 1, "windows")
    assert (meta["duration_s"], meta["repeat"], meta["calibration"]) == (1, 1, None)
    assert [v["name"] for v in meta["variants"]] == ["base", "patch"] and meta["steps"] == []
    assert meta["format"] == 4 and meta["rounds"] == [
        {"index": 1, "first": 1, "last": 1, "reason": "REPEAT=1", "spent": 1.0, "needs": {}}]
    # JOBS=auto under icount: a boot per host core (memory allowing)
    assert 1 <= meta["jobs"] <= os.cpu_count()


def make_help(*args):
    return subprocess.run(["make", "--no-print-directory", "help", *args], cwd=ROOT,
                          env=clean_environ(), text=True, capture_output=True,
                          check=True).stdout


def test_make_help_shows_each_knob_its_value_and_what_it_takes():
    text = " ".join(make_help().split())
    values = knobs.read({})
    for k in knobs.KNOBS:
        if k.scope == knobs.GUEST:
            continue
        value = values[k.name] if k.make and "{NOW}" not in k.default else ""
        shown = '"%s"' % value if " " in k.default else value
        if "{NOW}" not in k.default:
            assert "%s=%s" % (k.name, shown) in text, k.name
        assert " ".join(k.help.split()[:3]) in text, k.name
    assert "TRACE=auto (one of: auto windows max full plugin none)" in text
    assert "TREE=6.1 (one of: 6.1 6.12 7.2 7.3)" in text
    assert "DURATION=5 (an integer in 1..3600)" in text
    assert "TRACE=none (one of:" in " ".join(make_help("TRACE=none").split())


def test_defaults_have_one_home():
    # make's defaults are the registry's, generated
    mk = (ROOT / "build/knobs.mk").read_text() if (ROOT / "build/knobs.mk").exists() else ""
    from plan import render
    assert mk in ("", render.knobs_mk())
    # no literal default of a knob in the Makefile, the runner or the drivers
    for rel in ("Makefile", "guest/runner.sh", "bench/lib.sh"):
        text = (ROOT / rel).read_text()
        for bad in ("TRACE:-windows", "DURATION:-5", "duration=5", "TRACE ?= windows",
                    "DURATION ?= 5", "STEPS:-all", "STEPS ?= all", "BUILD_DIR:-",
                    "ICOUNT_SHIFT:-3", "PYTHON:-"):
            assert bad not in text, (rel, bad)
    assert "o->duration = 0;" in (ROOT / "workloads/common.c").read_text()


def test_the_guest_gets_the_registry_defaults_and_allowed_values(tmp_path):
    from plan import render
    render.guest_config(str(tmp_path))
    conf = dict(line.split("=", 1) for line in (tmp_path / "knobs.conf").read_text()
                .splitlines() if line and not line.startswith("#"))
    # TRACE=auto is resolved on the host: the guest takes instruments only
    assert conf["TRACE_DEFAULT"] == "windows" and "auto" not in conf["TRACE_VALUES"].split()
    for k in knobs.KNOBS:
        if k.job_key:
            assert conf[k.name + "_DEFAULT"] == k.guest_takes[0]
            assert k.job_key in conf["KNOB_KEYS"].split() + conf["JOB_KEYS"].split()


# Every read of the environment in the code, by language: Python through
# os.environ or os.getenv (the orchestrator reads the registry's knobs
# through knobs.read), shell as ${NAME...} of a NAME the script never sets,
# make as NAME ?= or $(origin NAME). Shell builtins and the names a script
# or a file it sources sets are not reads; an exported name it never sets
# is (for the commands it runs).
SHELL_SET = re.compile(r"(?:^|[\s;(])(?:local |export |readonly )?([A-Z_][A-Z0-9_]*)"
                       r"(?:\[[^]]*\])?=|\{([A-Z_][A-Z0-9_]*)\}>", re.M)
SHELL_SOURCED = re.compile(r"^\s*\. .*/([a-z-]+\.sh)\"?$", re.M)
SHELL_COMMENT = re.compile(r"^\s*#.*$", re.M)
SHELL_EXPORT = re.compile(r"^\s*export ([A-Z_][A-Z0-9_ =]*)$", re.M)
SHELL_FOR_READ = re.compile(r"(?:\bfor|\bread(?: -[a-z]+)*|printf -v)\s+((?:[A-Z_][A-Z0-9_]*\s*)+)")
SHELL_USE = re.compile(r"\$\{?([A-Z_][A-Z0-9_]*)(?![a-z0-9_])")
SHELL_BUILTINS = {"PATH", "HOME", "BASH_SOURCE", "LINENO", "PPID", "PWD", "IFS", "EUID",
                  "FUNCNAME", "SECONDS", "RANDOM", "UID"}
PY_READ = re.compile(r"os\.(?:environ(?:\.get)?\(?\[?|getenv\()\s*[\"']([A-Z_][A-Z0-9_]*)")
MAKE_READ = re.compile(r"^([A-Z_][A-Z0-9_]*)\s*\?=|\$\(origin ([A-Z_][A-Z0-9_]*)\)", re.M)
MAKE_USE = re.compile(r"\$\(([A-Z_][A-Z0-9_]*)\)")


def shell_code(path):
    return SHELL_COMMENT.sub("", path.read_text())


def shell_set(path):
    """The names a shell file sets, those of the files it sources with."""
    text = shell_code(path)
    names = {a or b for a, b in SHELL_SET.findall(text)}
    for found in SHELL_FOR_READ.findall(text):
        names |= set(found.split())
    for sourced in SHELL_SOURCED.findall(text):
        names |= shell_set(ROOT / "bench" / sourced)
    return names


def code_reads():
    """{name: [file]} of every environment read in the project's code."""
    reads = {}
    for path in [p for d in ("bench", "guest", "lava") for p in sorted(ROOT.glob(d + "/*.sh"))]:
        text = shell_code(path)
        used = set(SHELL_USE.findall(text))
        for names in SHELL_EXPORT.findall(text):
            used |= {n for n in names.split() if "=" not in n}
        for n in used - shell_set(path) - SHELL_BUILTINS:
            reads.setdefault(n, []).append(str(path.relative_to(ROOT)))
    python = [p for d in ("bench", "analysis/mmlat", "lava") for p in (ROOT / d).rglob("*.py")]
    for path in python:
        for n in PY_READ.findall(path.read_text()):
            reads.setdefault(n, []).append(str(path.relative_to(ROOT)))
    for a, b in MAKE_READ.findall((ROOT / "Makefile").read_text()):
        reads.setdefault(a or b, []).append("Makefile")
    return reads


def test_every_read_of_the_environment_is_a_knob():
    reads = code_reads()
    # the scan finds what it is meant to: reads in each language
    assert {"BUILD_DIR", "CCACHE_DIR", "CELL_TIMEOUT", "RUN", "MMLAT_CMDLINE"} <= set(reads)
    unknown = {n: files for n, files in reads.items() if n not in knobs.BY_NAME}
    assert unknown == {}, "not in bench/plan/knobs.py: %s" % unknown


def test_every_knob_is_read_somewhere():
    reads = set(code_reads()) | set(MAKE_USE.findall((ROOT / "Makefile").read_text()))
    python = " ".join(p.read_text() for p in (ROOT / "bench").rglob("*.py"))
    for k in knobs.KNOBS:
        assert k.name in reads or 'values["%s"]' % k.name in python or k.job_key, k.name


# TRACE=auto: the plugin exactly where it can run (icount, one vCPU, a QEMU
# this machine starts with -plugin, the pinned QEMU its header is from);
# a value given is kept, even one the machine then refuses.
@pytest.mark.parametrize("trace, accel, smp, executor, icount_qemu, resolved", [
    ("auto", "tcg-icount", 1, "local", "", "plugin"),
    ("auto", "kvm", 2, "local", "", "windows"),
    ("auto", "kvm", 1, "local", "", "windows"),
    ("auto", "tcg-mt", 1, "local", "", "windows"),
    ("auto", "tcg-icount", 2, "local", "", "windows"),
    ("auto", "tcg-icount", 1, "lava", "", "windows"),
    ("auto", "tcg-icount", 1, "lava-local", "", "windows"),
    ("auto", "tcg-icount", 1, "local", "/opt/qemu-11/bin/qemu-system-x86_64", "windows"),
    ("windows", "tcg-icount", 1, "local", "", "windows"),
    ("none", "tcg-icount", 1, "local", "", "none"),
    ("plugin", "kvm", 2, "local", "", "plugin"),
])
def test_trace_auto_resolves_to_the_plugin_where_it_can_run(trace, accel, smp, executor,
                                                            icount_qemu, resolved):
    from plan import instruments
    assert instruments.resolve(trace, accel, smp, executor, icount_qemu) == resolved


def test_trace_defaults_to_auto_which_the_help_explains():
    k = knobs.knob("TRACE")
    assert knobs.read({})["TRACE"] == "auto" and k.allowed.words({})[0] == "auto"
    assert "auto: plugin where it can run (ACCEL resolves to tcg-icount, one vCPU" in k.help
