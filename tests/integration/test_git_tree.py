"""Integration test: bench two refs of a developer's git tree. The tree is
Debian's linux-source-6.12 committed as v6.12 with two small commits on a
branch; mmlat builds both refs from exports under build/git/, never
writing to the tree, boots each for one short munmap cell (a clean and a
traced boot: the guest modules built against 6.12), and reports them.
Takes a cold 6.12 build (minutes) and a ccache-warm one."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))

from mmlat import parse  # noqa: E402

TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
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
    if not TARBALL.exists():
        pytest.fail("%s not found: make deps installs linux-source-6.12" % TARBALL)
    top = tmp_path_factory.mktemp("ksrc")
    with tarfile.open(TARBALL) as t:
        t.extractall(top)
    repo = top / "linux-source-6.12"
    git(repo, "init", "-q", "-b", "master")
    # -f: Debian's tarball keeps its packaging's .gitignore, which ignores
    # everything at the top level
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-q", "-m", "Linux 6.12 (Debian's linux-source-6.12)")
    git(repo, "tag", "v6.12")
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
               VARIANTS="v6.12 work", WORKLOADS="munmap", DURATION="3", REPEAT="1",
               TRACE="windows", CALIB="", STEPS="all", TREE="6.1", CROSS="no",
               ACCEL=os.environ.get("ACCEL", "auto"))
    proc = subprocess.run(["/usr/bin/python3", "-m", "orchestrator", "run"], cwd=ROOT, env=env,
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
    assert meta["kernel_version"].startswith("6.12.")
    for ref, describe in (("v6.12", "v6.12"), ("work", "v6.12-2-g")):
        k = json.loads((run_dir / "kernels" / ref / "build.json").read_text())
        assert k["ref"] == ref and k["commit"] == git(ksrc, "rev-parse", ref)
        assert k["describe"].startswith(describe)
        assert k["kernel_version"].startswith("6.12.")
        # 6.12 needs no instrumentation series
        assert k["series"] == []
    # one config for both refs: no comparison across configs
    assert len(set(meta["configs"].values())) == 1 and meta["cross"] == "no"


@pytest.mark.parametrize("ref", ["v6.12", "work"])
def test_both_refs_boot_measure_and_trace(run_dir, ref):
    for boot in ("clean", "traced"):
        cell = run_dir / "cells" / ref / "munmap" / boot / "r1"
        info = json.loads((cell / "cell.json").read_text())
        assert info["status"] == "ok", info["cause"]
        work = parse.parse_workload(cell / "guest/workload.txt")[0]
        assert work["ops"] > 0
    # the window module, built against 6.12, loaded and recorded windows
    guest = run_dir / "cells" / ref / "munmap/traced/r1/guest"
    win = parse.parse_windows(guest / "windows/windows.txt")
    assert win["kinds"]["preempt"]["n"] > 100
    locks = parse.parse_locks(run_dir / "cells" / ref / "munmap/traced/r1/guest/windows/locks.txt")
    assert locks["totals"]["pte"]["holds"] > 0


def test_the_report_names_the_refs(run_dir):
    proc = subprocess.run(["make", "--no-print-directory", "report", "RUN=%s" % run_dir,
                           "BASELINE=v6.12", "PATCHED=work"], cwd=ROOT, text=True,
                          capture_output=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "MAKEFLAGS"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "mmlat report: v6.12 vs work" in proc.stdout
    assert "git: " in proc.stdout and "v6.12-2-g" in proc.stdout
    assert "CONFIGS DIFFER" not in proc.stdout


def test_fragment_options_the_tree_does_not_take_are_named(ksrc, run_dir, tmp_path):
    frag = tmp_path / "mmlat.config"
    frag.write_text((ROOT / "bench/config/mmlat.config").read_text()
                    + "CONFIG_MMLAT_NO_SUCH_OPTION=y\nCONFIG_KVM_INTEL=y\n")
    # the source of v6.12 the run exported (bench/tree.sh source-git)
    source = Path(os.environ.get("BUILD_DIR", ROOT / "build")) / "git" / git(
        ksrc, "rev-parse", "v6.12^{commit}")
    proc = subprocess.run(["bash", "bench/kconfig.sh", "make", str(tmp_path / "config"),
                           str(source), "tinyconfig", str(frag)], cwd=ROOT, text=True,
                          capture_output=True, timeout=600)
    assert proc.returncode != 0
    assert ("CONFIG_MMLAT_NO_SUCH_OPTION: wanted y, got unset (%s): unknown to this tree's "
            "Kconfig" % frag) in proc.stderr, proc.stderr
    assert "CONFIG_KVM_INTEL: wanted y, got unset" in proc.stderr
    assert "did not take effect" in proc.stderr and "nothing was built" in proc.stderr
    assert not (tmp_path / "config").exists()
