"""Unit tests of the shell leaves, each a command with explicit arguments:
config checking (bench/kconfig.sh check), patch application into variant
trees (bench/tree.sh variant), a kernel log's first splat (bench/lib.sh)
and the leaves' JSON serializer (bench/record.py). Tiny fake trees stand
in for Linux."""
import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT, run
from orchestrator import variants
from orchestrator.variants import Resolver


def test_config_check_names_dropped_options(tmp_path):
    config = tmp_path / "config"
    config.write_text("CONFIG_SMP=y\nCONFIG_NR_CPUS=8\n# CONFIG_KSM is not set\n")
    frag = tmp_path / "frag.config"
    frag.write_text(textwrap.dedent("""\
        # comment
        CONFIG_SMP=y
        CONFIG_NR_CPUS=4
        CONFIG_PREEMPT=y
        # CONFIG_KSM is not set
        # CONFIG_HUGETLBFS is not set
        """))
    out = run(["bash", "bench/kconfig.sh", "check", str(config), str(frag)],
              check=True).stdout.splitlines()
    assert sorted(line.split(":")[0] for line in out) == [
        "CONFIG_NR_CPUS", "CONFIG_PREEMPT"]
    assert any("wanted 4, got 8" in line for line in out)
    assert any("wanted y, got unset" in line for line in out)


def test_shipped_fragment_is_all_config_lines(tmp_path):
    frag = ROOT / "bench/config/mmlat.config"
    empty = tmp_path / "empty"
    empty.write_text("")
    out = run(["bash", "bench/kconfig.sh", "check", str(empty), str(frag)],
              check=True).stdout
    assert "not a config line" not in out
    assert "CONFIG_PREEMPT: wanted y" in out


def make_patch(name, old, new, path="mm/memory.c"):
    return textwrap.dedent(f"""\
        From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
        From: Test <test@localhost>
        Subject: [PATCH] {name}

        ---
        diff --git a/{path} b/{path}
        --- a/{path}
        +++ b/{path}
        @@ -1,3 +1,3 @@
         one
        -{old}
        +{new}
         three
        """)


@pytest.fixture
def fake_env(tmp_path):
    """The knobs' values of a tiny project: a packaged 6.1 source, series
    directories good and bad, and the variants that carry them."""
    # As in the real layout, build/ lies inside a git work tree: git apply
    # run there must still patch the variant tree, not skip it silently.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    build = tmp_path / "build"
    pristine = build / "linux-source-6.1"
    (pristine / "mm").mkdir(parents=True)
    (pristine / "Makefile").write_text("# fake\n")
    (pristine / "mm/memory.c").write_text("one\ntwo\nthree\n")
    # unpacked from a fetched Debian package (bench/kernel-source.sh)
    (pristine / ".mmlat-package").write_text("6.1.0-1\n")
    patches = tmp_path / "patches"
    good = patches / "good"
    good.mkdir(parents=True)
    (good / "0001-good.patch").write_text(make_patch("good", "two", "TWO"))
    (good / "series").write_text("# a comment\n0001-good.patch\n")
    bad = patches / "bad"
    bad.mkdir()
    (bad / "0001-bad.patch").write_text(make_patch("bad", "zwei", "ZWEI"))
    (bad / "series").write_text("0001-bad.patch\n")
    conf = tmp_path / "variants.conf"
    conf.write_text("mainline:\ngood: good\nboth: good bad\n")
    from plan import knobs
    values = knobs.read({"BUILD_DIR": str(build), "PATCHES_DIR": str(patches),
                         "VARIANTS_CONF": str(conf), "INSTRUMENTATION_SERIES": ""})
    return values, pristine


def make_tree(values, pristine, spec):
    """bench/tree.sh variant of spec's patches onto the pristine source."""
    v = Resolver(values).resolve(spec)
    patches = [p for d in v.series for p in variants.series_patches(d)]
    out = Path(values["BUILD_DIR"]) / "trees" / v.name
    return run(["bash", "bench/tree.sh", "variant", v.name, str(pristine), str(out),
                variants.series_sha256(v, str(pristine)), *patches])


def test_variant_tree_applies_series_and_keeps_pristine(fake_env):
    values, pristine = fake_env
    tree = Path(make_tree(values, pristine, "good").stdout.strip())
    assert (tree / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"
    assert (tree / ".mmlat-series-sha256").read_text().strip()


def test_patch_that_does_not_apply_is_named_and_leaves_old_tree(fake_env):
    values, pristine = fake_env
    good = Path(make_tree(values, pristine, "good").stdout.strip())
    res = make_tree(values, pristine, "both")
    assert res.returncode != 0
    assert "0001-bad.patch does not apply" in res.stderr
    assert "mm/memory.c" in res.stderr
    assert not (good.parent / "both").exists()
    assert (good / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"


def test_unknown_variant_and_missing_series_are_errors(fake_env):
    values, _ = fake_env
    with pytest.raises(Exception, match="unknown variant 'nosuch'"):
        Resolver(values).resolve("nosuch")
    with pytest.raises(Exception, match="does not exist"):
        Resolver(values).resolve("x=missing-dir")


def test_series_hash_follows_patch_content(fake_env, tmp_path):
    values, pristine = fake_env

    def sha(spec):
        return variants.series_sha256(Resolver(values).resolve(spec), str(pristine))
    first = sha("good")
    assert first == sha("adhoc=good")
    assert first != sha("mainline")
    patch = tmp_path / "patches/good/0001-good.patch"
    patch.write_text(patch.read_text().replace("+TWO", "+Two"))
    assert sha("good") != first


def test_series_hash_is_the_one_trees_and_kernels_carry(fake_env):
    """The hash of bench/variants.sh before it, so that the trees and
    kernels built then are not built again: the source and its package's
    version, then each series file and its patches."""
    import hashlib
    values, pristine = fake_env
    good = Path(values["PATCHES_DIR"]) / "good"
    want = hashlib.sha256(b"source tree:6.1 6.1.0-1\n" + (good / "series").read_bytes()
                          + (good / "0001-good.patch").read_bytes()).hexdigest()
    assert variants.series_sha256(Resolver(values).resolve("good"), str(pristine)) == want


def first_splat(tmp_path, lines):
    log = tmp_path / "dmesg.txt"
    log.write_text("".join(line + "\n" for line in lines))
    return run(["bash", "-c", '. bench/lib.sh && first_splat "$1"', "-", str(log)])


# Lines as a check-config 6.1 guest prints them.
BENIGN = [
    "[    0.270780] rcu: \tRCU lockdep checking is enabled.",
    "[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar",
    "[    0.551852] smpboot: Total of 1 processors activated (2000.01 BogoMIPS)",
]


def test_check_boot_info_lines_are_not_splats(tmp_path):
    assert first_splat(tmp_path, BENIGN).returncode != 0


@pytest.mark.parametrize("splat", [
    "BUG: sleeping function called from invalid context at mm/memory.c:1234",
    "BUG: scheduling while atomic: mmlat-munmap/91/0x00000002",
    "WARNING: possible circular locking dependency detected",
    "WARNING: possible recursive locking detected",
    "WARNING: inconsistent lock state",
    "WARNING: suspicious RCU usage",
    "WARNING: CPU: 0 PID: 1 at mm/rmap.c:300 anon_vma_clone+0x1/0x2",
])
def test_check_boot_splats_are_named(tmp_path, splat):
    res = first_splat(tmp_path, BENIGN + ["[   12.345678] " + splat, "[   12.4] next"])
    assert res.returncode == 0
    assert res.stdout.strip() == splat


# The leaves' records (a boot's boot.json, a package's package.json):
# written and read by bench/record.py (Python's json). A value with quotes,
# backslashes and newlines survives the round trip.
NASTY = {"cause": 'runner: FAIL: "quoted" \\back\\slash\nsecond line\ttab $HOME `x`',
         "qemu_cmdline": "qemu-system-x86_64 -kernel '/tmp/a dir/\"b\"\\c/bzImage' "
                         "-drive file=/x,,y/results.img"}


def test_record_round_trips_quotes_backslashes_and_newlines(tmp_path):
    out = run(["python3", "bench/record.py", "write", "repeat:=2", "wall:=.5",
               "cause=" + NASTY["cause"], "qemu_cmdline=" + NASTY["qemu_cmdline"],
               "list[]=a", "list[]:=1"], check=True).stdout
    doc = json.loads(out)
    assert doc == dict(NASTY, repeat=2, wall=0.5, list=["a", 1])
    path = tmp_path / "r.json"
    path.write_text(out)
    for key, value in NASTY.items():
        got = run(["python3", "bench/record.py", "get", str(path), key], check=True).stdout
        assert got == value + "\n"
    assert run(["python3", "bench/record.py", "get", str(path), "repeat"]).stdout == "2\n"
    missing = run(["python3", "bench/record.py", "get", str(path), "nosuch"])
    assert missing.returncode == 3 and "has no 'nosuch'" in missing.stderr
