"""Integration test: bench two refs of a developer's git tree of Linux 7.3,
the newest tested version. The tree is Debian's linux-source-7.3 (fetched
by bench/kernel-source.sh) committed as v7.3 with two small commits on a
branch; mmlat builds both refs from exports under build/git/, never
writing to the tree, boots each for a short munmap cell and a calibration
cell (the guest modules built against 7.3), and the boots pass every check
6.1's do (tests/integration/checks.py). Takes a cold 7.3 build (minutes)
and a ccache-warm one."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import checks
from plan import knobs

ROOT = checks.ROOT
VERSION = "7.3"
GIT_ENV = dict(GIT_AUTHOR_NAME="mmlat test", GIT_AUTHOR_EMAIL="test@localhost",
               GIT_COMMITTER_NAME="mmlat test", GIT_COMMITTER_EMAIL="test@localhost",
               GIT_AUTHOR_DATE="2026-01-01T00:00:00Z",
               GIT_COMMITTER_DATE="2026-01-01T00:00:00Z")


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "core.looseCompression=1", *args],
                          check=True, text=True, capture_output=True,
                          env=dict(os.environ, **GIT_ENV)).stdout.strip()


def change(repo, path, old, new, subject):
    f = repo / path
    text = f.read_text()
    assert old in text, (path, old)
    f.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-q", "-am", subject)


@pytest.fixture(scope="module")
def ksrc(tmp_path_factory):
    # a leaf takes its knobs from the environment, as the orchestrator gives them
    leaf_env = dict(os.environ, **knobs.read(os.environ))
    tarball = subprocess.run(["bash", "bench/kernel-source.sh", "tarball", VERSION], cwd=ROOT,
                             env=leaf_env, check=True, text=True,
                             capture_output=True).stdout.strip()
    top = tmp_path_factory.mktemp("ksrc")
    with tarfile.open(tarball) as t:
        t.extractall(top)
    repo = top / ("linux-source-" + VERSION)
    git(repo, "init", "-q", "-b", "master")
    # -f: Debian's tarball keeps its packaging's .gitignore, which ignores
    # everything at the top level
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-q", "-m", "Linux %s (Debian's linux-source-%s)" % (VERSION, VERSION))
    git(repo, "tag", "v" + VERSION)
    git(repo, "checkout", "-q", "-b", "work")
    # two changes that compile and change nothing a boot measures
    change(repo, "mm/memory.c", "#include <linux/kernel_stat.h>",
           "#include <linux/kernel_stat.h>\n/* mmlat test: first commit */",
           "mm: memory: a comment")
    change(repo, "mm/mmap.c", "#include <linux/kernel.h>",
           "#include <linux/kernel.h>\n/* mmlat test: second commit */",
           "mm: mmap: another comment")
    return repo


@pytest.fixture(scope="module")
def run_dir(ksrc, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    head, status = git(ksrc, "rev-parse", "HEAD"), git(ksrc, "status", "--porcelain")
    env = dict(os.environ, PYTHONPATH="analysis:bench", RESULTS_DIR=str(results),
               RUN_ID="gtest", KSRC=str(ksrc),
               VARIANTS="v%s work" % VERSION, WORKLOADS="munmap idle", DURATION="3",
               REPEAT="1", TRACE="windows", CALIB=checks.CALIB_KNOB, STEPS="all", TREE="6.1",
               CROSS="no", ACCEL=os.environ.get("ACCEL", "auto"))
    proc = subprocess.run(checks.ORCHESTRATOR, cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=3600)
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the developer's tree: same HEAD, nothing changed or added
    assert git(ksrc, "rev-parse", "HEAD") == head
    assert git(ksrc, "status", "--porcelain") == status == ""
    return results / "gtest"


def test_each_ref_is_recorded_with_its_commit_and_describe(ksrc, run_dir):
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["knobs"]["KSRC"] == str(ksrc)
    assert meta["kernel_version"].startswith(VERSION + ".")
    assert meta["untested"] == {}
    tag = "v" + VERSION
    for ref, describe in ((tag, tag), ("work", tag + "-2-g")):
        k = json.loads((run_dir / "kernels" / ref / "build.json").read_text())
        assert k["ref"] == ref and k["commit"] == git(ksrc, "rev-parse", ref)
        assert k["describe"].startswith(describe)
        assert k["kernel_version"].startswith(VERSION + ".")
        # from 6.2 on no instrumentation series
        assert k["series"] == []
    # one config for both refs: no comparison across configs
    assert len(set(meta["configs"].values())) == 1 and meta["cross"] is False


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.__name__)
@pytest.mark.parametrize("ref", ["v" + VERSION, "work"])
def test_both_refs_pass_every_check(run_dir, ref, check):
    check(run_dir, ref)


def test_the_report_names_the_refs(run_dir):
    proc = subprocess.run(["make", "--no-print-directory", "report", "RUN=%s" % run_dir,
                           "BASELINE=v" + VERSION, "PATCHED=work"], cwd=ROOT, text=True,
                          capture_output=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "MAKEFLAGS"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "mmlat report: v%s vs work" % VERSION in proc.stdout
    assert "git: " in proc.stdout and "v%s-2-g" % VERSION in proc.stdout
    assert "CONFIGS DIFFER" not in proc.stdout


def test_fragment_options_the_tree_does_not_take_are_named(ksrc, run_dir, tmp_path):
    frag = tmp_path / "mmlat.config"
    frag.write_text((ROOT / "bench/config/mmlat.config").read_text()
                    + "CONFIG_MMLAT_NO_SUCH_OPTION=y\nCONFIG_KVM_INTEL=y\n")
    # the source of v7.3 the run exported (bench/tree.sh source-git)
    source = Path(os.environ.get("BUILD_DIR", ROOT / "build")) / "git" / git(
        ksrc, "rev-parse", "v%s^{commit}" % VERSION)
    proc = subprocess.run(["bash", "bench/kconfig.sh", "make", str(tmp_path / "config"),
                           str(source), "tinyconfig", str(frag)], cwd=ROOT, text=True,
                          capture_output=True, timeout=600)
    assert proc.returncode != 0
    assert ("CONFIG_MMLAT_NO_SUCH_OPTION: wanted y, got unset (%s): unknown to this tree's "
            "Kconfig" % frag) in proc.stderr, proc.stderr
    assert "CONFIG_KVM_INTEL: wanted y, got unset" in proc.stderr
    assert "did not take effect" in proc.stderr and "nothing was built" in proc.stderr
    assert not (tmp_path / "config").exists()
