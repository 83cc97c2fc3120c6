"""Unit tests of kernel sources other than the packaged 6.1 tree: git refs
of a developer's tree (KSRC), read and never written, their steps, and
the packaged 6.12 tree. A tiny git repository stands in for Linux."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import run
from orchestrator.say import Refused
from orchestrator.variants import Resolver, series_sha256
from plan import knobs


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, text=True,
                          capture_output=True).stdout.strip()


def makefile(version, patchlevel):
    return "VERSION = %d\nPATCHLEVEL = %d\nSUBLEVEL = 0\nEXTRAVERSION =\n" % (version, patchlevel)


@pytest.fixture
def ksrc(tmp_path):
    """A 'Linux' git tree: v6.12, then two commits on branch work, a
    branch old whose Makefile says 6.8 and one, ancient, that says 5.15."""
    repo = tmp_path / "linux"
    repo.mkdir()
    env = dict(GIT_AUTHOR_NAME="T", GIT_AUTHOR_EMAIL="t@localhost",
               GIT_COMMITTER_NAME="T", GIT_COMMITTER_EMAIL="t@localhost")
    os.environ.update(env)
    git(repo, "init", "-q", "-b", "master")
    (repo / "Makefile").write_text(makefile(6, 12))
    (repo / "mm").mkdir()
    (repo / "mm/memory.c").write_text("one\ntwo\nthree\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "Linux 6.12")
    git(repo, "tag", "v6.12")
    git(repo, "checkout", "-q", "-b", "work")
    for n, line in ((1, "two"), (2, "three")):
        (repo / "mm/memory.c").write_text((repo / "mm/memory.c").read_text().replace(
            line, line.upper()))
        git(repo, "commit", "-q", "-am", "mm: change %d" % n)
    git(repo, "checkout", "-q", "-b", "old", "v6.12")
    (repo / "Makefile").write_text(makefile(6, 8))
    git(repo, "commit", "-q", "-am", "Linux 6.8")
    git(repo, "checkout", "-q", "-b", "ancient", "v6.12")
    (repo / "Makefile").write_text(makefile(5, 15))
    git(repo, "commit", "-q", "-am", "Linux 5.15")
    git(repo, "checkout", "-q", "master")
    return repo


def snapshot(repo):
    """Every path of repo (its .git too) with its size and mtime: what a
    reader must leave as it was."""
    return sorted((str(p.relative_to(repo)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in repo.rglob("*"))


def resolve(spec, env):
    return Resolver(knobs.read(env)).resolve(spec)


def test_a_bare_ref_of_ksrc_is_a_variant_of_its_commit(ksrc, tmp_path):
    env = {"KSRC": str(ksrc), "BUILD_DIR": str(tmp_path / "build")}
    v = resolve("work~1", env)
    assert (v.name, v.version, v.ref) == ("work-1", "6.12", "work~1")
    assert v.source == "git:" + git(ksrc, "rev-parse", "work~1")
    # 6.12 needs no instrumentation series; 6.1 gets preemptirq-trace
    assert v.series == ()
    # variants.conf names come first; name=git:REF+series also works
    v = resolve("mainline", env)
    assert v.source == "tree:6.1" and v.series[0].endswith("/preemptirq-trace")


def test_a_ref_of_an_untested_version_is_attempted(ksrc, tmp_path):
    from plan import versions
    v = resolve("old", {"KSRC": str(ksrc), "BUILD_DIR": str(tmp_path / "build")})
    assert (v.version, versions.tested(v.version)) == ("6.8", False)


def test_an_untested_version_is_warned_about_and_recorded(matrix, ksrc):
    run_matrix, results = matrix
    proc, boots = run_matrix(KSRC=str(ksrc), VARIANTS="v6.12 old", CROSS="yes",
                             WORKLOADS="munmap", REPEAT="1", CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert ("warning: variant 'old' is Linux 6.8: not a tested version (mmlat is tested on "
            "6.1, 6.12, 7.3)") in proc.stderr
    assert json.loads((results / "meta.json").read_text())["untested"] == {"old": "6.8"}


@pytest.mark.parametrize("spec, message", [
    ("ancient", "variant 'ancient' (ancient) is Linux 5.15; mmlat needs 6.1 or later"),
    ("nosuch", "variant 'nosuch': 'nosuch' is no commit of"),
    ("x=git:v6.12+nosuchdir", "series directory"),
])
def test_bad_refs_are_refused_naming_the_ref(ksrc, tmp_path, spec, message):
    with pytest.raises(Refused) as e:
        resolve(spec, {"KSRC": str(ksrc), "BUILD_DIR": str(tmp_path / "build")})
    assert message in str(e.value)


def test_a_ref_is_exported_without_writing_to_ksrc(ksrc, tmp_path):
    before = snapshot(ksrc)
    head = git(ksrc, "rev-parse", "HEAD")
    v = resolve("work", {"KSRC": str(ksrc), "BUILD_DIR": str(tmp_path / "build"),
                         "INSTRUMENTATION_SERIES": ""})
    commit = git(ksrc, "rev-parse", "work")
    source = tmp_path / "build/git" / commit
    out = run(["bash", "bench/tree.sh", "source-git", str(ksrc), commit, str(source)])
    assert out.returncode == 0, out.stderr
    tree = tmp_path / "build/trees/work"
    out = run(["bash", "bench/tree.sh", "variant", "work", str(source), str(tree),
               series_sha256(v, str(source))])
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == tree
    assert (tree / "mm/memory.c").read_text() == "one\nTWO\nTHREE\n"
    assert (source / "Makefile").exists()
    # the user's tree: same files, same times, same HEAD, nothing added
    assert snapshot(ksrc) == before and git(ksrc, "rev-parse", "HEAD") == head
    assert git(ksrc, "status", "--porcelain") == ""


def test_steps_between_two_refs_are_their_commits(matrix, ksrc, tmp_path):
    run_matrix, results = matrix
    proc, boots = run_matrix(KSRC=str(ksrc), VARIANTS="v6.12 work", STEPS="each",
                             WORKLOADS="munmap", REPEAT="1", CALIB="")
    assert proc.returncode == 0, proc.stderr
    assert [b.split()[0].split("/")[2] for b in boots if "/clean/" in b] == [
        "v6.12", "work.1", "work"]
    meta = json.loads((results / "meta.json").read_text())
    first = git(ksrc, "log", "-1", "--format=%h", "work~1")
    assert [(s["variant"], s["previous"], s["patch"]) for s in meta["steps"]] == [
        ("work.1", "v6.12", first + " mm: change 1"),
        ("work", "work.1", git(ksrc, "log", "-1", "--format=%h", "work") + " mm: change 2")]
    assert meta["knobs"]["KSRC"] == str(ksrc)


@pytest.mark.parametrize("variants, message", [
    ("work v6.12", "v6.12 ("),
    ("base v6.12", "mixes kernel versions (base Linux 6.1, v6.12 Linux 6.12)"),
])
def test_steps_between_refs_need_an_ancestor_and_one_version(matrix, ksrc, variants,
                                                             message):
    run_matrix, _ = matrix
    proc, boots = run_matrix(KSRC=str(ksrc), VARIANTS=variants, STEPS="each")
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert boots == []


def test_ksrc_without_a_ref_among_the_variants_is_refused(matrix, ksrc):
    run_matrix, _ = matrix
    proc, boots = run_matrix(KSRC=str(ksrc))
    assert proc.returncode != 0 and "no variant is one of its refs" in proc.stderr
    assert boots == []
