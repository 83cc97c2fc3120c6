"""Unit tests of the host-side shell glue: config checking, variants and
series, and patch application into variant trees. They use tiny fake trees,
so they need neither the kernel source nor QEMU."""
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(args, env=None, check=False):
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.run(args, cwd=ROOT, env=full_env, text=True,
                          capture_output=True)
    if check and proc.returncode:
        raise AssertionError(proc.stderr)
    return proc


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


def make_patch(tmp_path, name, old, new, path="mm/memory.c"):
    body = textwrap.dedent(f"""\
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
    return body


@pytest.fixture
def fake_env(tmp_path):
    # As in the real layout, build/ lies inside a git work tree: git apply
    # run there must still patch the variant tree, not skip it silently.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    build = tmp_path / "build"
    pristine = build / "linux-source-6.1"
    (pristine / "mm").mkdir(parents=True)
    (pristine / "Makefile").write_text("# fake\n")
    (pristine / "mm/memory.c").write_text("one\ntwo\nthree\n")
    patches = tmp_path / "patches"
    good = patches / "good"
    good.mkdir(parents=True)
    (good / "0001-good.patch").write_text(make_patch(tmp_path, "good", "two", "TWO"))
    (good / "series").write_text("# a comment\n0001-good.patch\n")
    bad = patches / "bad"
    bad.mkdir()
    (bad / "0001-bad.patch").write_text(make_patch(tmp_path, "bad", "zwei", "ZWEI"))
    (bad / "series").write_text("0001-bad.patch\n")
    conf = tmp_path / "variants.conf"
    conf.write_text("mainline:\ngood: good\nboth: good bad\n")
    env = {"BUILD_DIR": str(build), "PATCHES_DIR": str(patches),
           "VARIANTS_CONF": str(conf)}
    return env, pristine


def test_variant_tree_applies_series_and_keeps_pristine(fake_env):
    env, pristine = fake_env
    out = run(["bash", "bench/tree.sh", "variant", "good"], env, check=True)
    tree = Path(out.stdout.strip())
    assert (tree / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"
    assert (tree / ".mmlat-series-sha256").read_text().strip()


def test_patch_that_does_not_apply_is_named_and_leaves_old_tree(fake_env):
    env, pristine = fake_env
    good = Path(run(["bash", "bench/tree.sh", "variant", "good"], env,
                     check=True).stdout.strip())
    res = run(["bash", "bench/tree.sh", "variant", "both"], env)
    assert res.returncode != 0
    assert "0001-bad.patch does not apply" in res.stderr
    assert "mm/memory.c" in res.stderr
    assert not (good.parent / "both").exists()
    assert (good / "mm/memory.c").read_text() == "one\nTWO\nthree\n"
    assert (pristine / "mm/memory.c").read_text() == "one\ntwo\nthree\n"


def test_unknown_variant_and_missing_series_are_errors(fake_env):
    env, _ = fake_env
    res = run(["bash", "bench/tree.sh", "variant", "nosuch"], env)
    assert res.returncode != 0 and "unknown variant 'nosuch'" in res.stderr
    res = run(["bash", "bench/tree.sh", "variant", "x=missing-dir"], env)
    assert res.returncode != 0 and "does not exist" in res.stderr


def series_sha(env, spec):
    script = ('. bench/lib.sh; . bench/variants.sh; resolve_variant "$1"; '
              'variant_sha256')
    return run(["bash", "-c", script, "sha", spec], env, check=True).stdout.strip()


def test_series_hash_follows_patch_content(fake_env, tmp_path):
    env, _ = fake_env
    first = series_sha(env, "good")
    assert first == series_sha(env, "adhoc=good")
    assert first != series_sha(env, "mainline")
    patch = tmp_path / "patches/good/0001-good.patch"
    patch.write_text(patch.read_text().replace("+TWO", "+Two"))
    assert series_sha(env, "good") != first


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
