"""The version-drift guard (mmlat drift): guest/classes.txt's names, with
their version ranges, against a kernel's System.map; and the window
module's Kbuild, which reads the same table."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from mmlat import __main__ as cli
from mmlat import attribute, drift

FIXTURE_MAP = Path(__file__).parent / "fixtures" / "guest-6.1-tcg" / "System.map"
KBUILD = Path(__file__).resolve().parents[2] / "guest" / "modules" / "mmlat_windows" / "Kbuild"

TABLE = (
    "-        any plumbing -  _raw_spin_lock* __pte_offset_map_lock@6.5-6.19 lock_page_lruvec*?\n"
    "-        any boundary -  irq_exit_rcu\n"
    "zap      any opener   pte  zap_pte_range unmap_page_range@6.12\n"
    "vma      any opener   i_mmap  __vma_adjust@-6.2 vma_prepare@6.3-\n"
    "idle     any opener   -  [idle] do_idle\n"
    "calib    any within   -  mmlat_calib_*@guest\n")


def system_map(*names):
    """A System.map with these text symbols, after _stext."""
    lines = ["ffffffff81000000 T _stext"]
    lines += ["%016x t %s" % (0xffffffff81001000 + 0x100 * i, n) for i, n in enumerate(names)]
    return "\n".join(lines) + "\n"


def symbols(*names):
    return drift.symbol_names(drift.parse.SymbolMap(system_map(*names), is_text=True))


def missing(syms, version, table=TABLE):
    """The names of the table these symbols lack, optional ones left out."""
    return [m.spelled for m in drift.check(syms, version, attribute.parse_rules(table))
            if not m.optional]


def kernel_dir(tmp_path, version, text, name="k"):
    d = tmp_path / name
    d.mkdir()
    (d / "System.map").write_text(text)
    (d / "build.json").write_text(json.dumps({"variant": name, "kernel_version": version}))
    return d


# ------------------------------------------------------------- ranges
@pytest.mark.parametrize("token, since, until, spelled", [
    ("zap_pte_range", None, None, "zap_pte_range"),
    ("vma_prepare@6.3-", (6, 3), None, "vma_prepare@6.3-"),
    ("__vma_adjust@-6.2", None, (6, 2), "__vma_adjust@-6.2"),
    ("__pte_offset_map_lock@6.5-6.19", (6, 5), (6, 19), "__pte_offset_map_lock@6.5-6.19"),
    ("map_pte@6.12", (6, 12), (6, 12), "map_pte@6.12"),
    ("mw_*@guest", None, None, "mw_*@guest"),
    ("zap_pte_range?", None, None, "zap_pte_range?"),
    ("__tlb_gather_mmu@-6.1?", None, (6, 1), "__tlb_gather_mmu@-6.1?"),
])
def test_a_name_carries_the_versions_it_is_expected_in(token, since, until, spelled):
    n = attribute.parse_name(token)
    assert (n.since, n.until, n.spelled()) == (since, until, spelled)
    assert n.optional == token.endswith("?") and n.name == token.split("@")[0].rstrip("?")


def test_which_versions_expect_a_name():
    always, new, old, only = (attribute.parse_name(t) for t in (
        "f", "f@6.3-", "f@-6.2", "f@6.12"))
    assert [always.expected_in(v) for v in ((6, 1), (6, 12), (7, 3))] == [True] * 3
    assert [new.expected_in(v) for v in ((6, 1), (6, 2), (6, 3), (7, 3))] == [
        False, False, True, True]
    assert [old.expected_in(v) for v in ((6, 1), (6, 2), (6, 3))] == [True, True, False]
    assert [only.expected_in(v) for v in ((6, 11), (6, 12), (6, 13))] == [False, True, False]
    # the minor version is a number, not a decimal fraction
    assert attribute.parse_name("f@6.2-").expected_in((6, 12))
    assert (always.range_text(), old.range_text(), new.range_text(), only.range_text()) == (
        "6.1 on", "6.1 to 6.2", "6.3 on", "6.12 only")
    # the guest modules' functions are in no kernel's System.map
    guest = attribute.parse_name("mmlat_calib_*@guest")
    assert guest.guest and not any(guest.expected_in(v) for v in ((6, 1), (7, 3)))


@pytest.mark.parametrize("token, why", [
    ("f@", "none of X.Y"), ("f@6", "none of X.Y"), ("f@-", "none of X.Y"),
    ("f@6.1-6.2-", "none of X.Y"), ("f@7.3-6.1", "is empty"),
    ("f@-6.0", "ends before 6.1"), ("@6.1", "no function"), ("?", "no function"),
    ("f@guest?", "none of X.Y"),
])
def test_a_bad_range_is_named_by_its_line(token, why):
    with pytest.raises(attribute.ClassesError, match=r"^t\.txt:2: .*" + why):
        attribute.parse_rules("ok any opener - foo\nbad any opener - %s\n" % token, "t.txt")


def test_rows_match_their_names_without_the_ranges():
    rules = attribute.parse_rules(TABLE)
    assert rules[3].functions == ("__vma_adjust", "vma_prepare")
    assert rules[3].has("__vma_adjust") and rules[3].has("vma_prepare")
    assert attribute.is_plumbing("__pte_offset_map_lock", rules)


@pytest.mark.parametrize("version", [(6, 1), (6, 12), (7, 3)])
def test_the_kernel_versions_parse(version):
    text = "%d.%d" % version
    assert attribute.parse_version(text + ".4") == version
    assert attribute.parse_version(text + ".192-mmlat-mainline") == version
    assert attribute.parse_version(text) == version


def test_a_version_that_is_none_is_refused():
    for bad in ("", "seven", "7", None):
        with pytest.raises(ValueError):
            attribute.parse_version(bad)


# -------------------------------------------------------------- check
def test_each_version_is_checked_against_its_own_names():
    v61 = symbols("_raw_spin_lock", "irq_exit_rcu", "zap_pte_range", "__vma_adjust", "do_idle")
    v612 = symbols("_raw_spin_lock_irqsave", "irq_exit_rcu", "zap_pte_range",
                   "unmap_page_range", "vma_prepare", "__pte_offset_map_lock", "do_idle")
    assert missing(v61, (6, 1)) == []
    assert missing(v612, (6, 12)) == []
    # 6.1's names in a 6.12 kernel: what 6.12 expects and lacks
    assert missing(v61, (6, 12)) == ["__pte_offset_map_lock@6.5-6.19",
                                     "unmap_page_range@6.12", "vma_prepare@6.3-"]
    # 7.3 expects neither 6.12-only name
    assert missing(v612, (7, 3)) == []


def test_suffixes_wildcards_and_idle():
    # zap_pte_range.isra.0 is zap_pte_range; _raw_spin_lock* needs one
    # symbol of that stem; [idle] is no symbol
    s = symbols("_raw_spin_lock_bh", "irq_exit_rcu", "zap_pte_range.isra.0",
                "vma_prepare.constprop.0.isra.0", "do_idle.cold")
    assert missing(s, (7, 3)) == []
    s = symbols("irq_exit_rcu", "zap_pte_range", "vma_prepare", "do_idle", "raw_spin_lock")
    assert missing(s, (7, 3)) == ["_raw_spin_lock*"]


def test_an_optional_name_is_counted_not_failed(tmp_path, capsys):
    # lock_page_lruvec*? is in neither map: absent, no drift
    rules = attribute.parse_rules(TABLE)
    gone = drift.check(symbols("_raw_spin_lock", "irq_exit_rcu", "zap_pte_range", "do_idle",
                               "vma_prepare"), (7, 3), rules)
    assert [(m.spelled, m.optional) for m in gone] == [("lock_page_lruvec*?", True)]
    assert drift.check(symbols("_raw_spin_lock", "lock_page_lruvec", "irq_exit_rcu",
                               "zap_pte_range", "do_idle", "vma_prepare"), (7, 3), rules) == []


def test_a_missing_name_says_where_and_what_to_change():
    rules = attribute.parse_rules("# one\n" + TABLE)
    m = drift.check(symbols("_raw_spin_lock", "irq_exit_rcu", "zap_pte_range", "do_idle"),
                    (7, 3), rules)
    m = [x for x in m if not x.optional]
    assert [(x.name, x.line, x.cls, x.lock) for x in m] == [("vma_prepare", 5, "vma", "i_mmap")]
    text = m[0].message("7.3.4")
    for part in ("Linux 7.3.4", "vma_prepare", "guest/classes.txt:5", "i_mmap-lock user",
                 "from 6.3 on", "vma_prepare@-X.Y"):
        assert part in text, (part, text)
    d = drift.Drift("k", "7.3.4", 9, m)
    assert drift.Drift.from_json(json.loads(json.dumps(d.to_json()))) == d


def test_the_trimmed_6_1_map_has_some_names_and_lacks_the_rest():
    # the fixture keeps only the symbols two window histograms resolved to
    syms = drift.symbol_names(str(FIXTURE_MAP))
    gone = drift.check(syms, (6, 1))
    names = {m.name for m in gone}
    # found: plain names, a wildcard (rcu_core*, on_each_cpu*), plumbing
    for present in ("do_idle", "__schedule", "free_unref_page_list", "_raw_spin_lock*",
                    "rcu_core*", "on_each_cpu*", "irqentry_exit*", "do_exit"):
        assert present not in names, present
    # lacking: the lock users the two histograms never resolved to, and
    # names some kernels inline (optional)
    for absent in ("copy_page_range", "unlink_anon_vmas", "__handle_mm_fault"):
        assert absent in names, absent
    optional = {m.name for m in gone if m.optional}
    assert "zap_pte_range" in optional and "copy_page_range" not in optional
    by_name = {m.name: m for m in gone}
    line = by_name["unlink_anon_vmas"].line
    assert "unlink_anon_vmas" in attribute.CLASSES_PATH.read_text().splitlines()[line - 1]
    assert len(gone) < len(drift.expected_names((6, 1)))


def test_the_cli_names_each_missing_symbol_and_exits_1(tmp_path, capsys):
    k = kernel_dir(tmp_path, "6.1.192", FIXTURE_MAP.read_text())
    assert cli.main(["drift", str(k)]) == 1
    out, err = capsys.readouterr()
    r = drift.check_kernel_dir(str(k))
    assert "copy_page_range" in err and "guest/classes.txt:" in err
    assert "zap_pte_range" not in err and "zap_pte_range?" in r.absent_optional
    assert err.count("mmlat: drift: %s: " % k) == len(r.missing)
    assert "Linux 6.1.192" in out and "%d optional ones absent" % len(r.absent_optional) in out


def test_the_cli_passes_a_kernel_with_every_name(tmp_path, capsys):
    names = {n.name.rstrip("*") + ("_x" if n.name.endswith("*") else "")
             for n, _ in drift.expected_names((7, 3)) if not n.optional}
    k = kernel_dir(tmp_path, "7.3.4", system_map(*sorted(names)))
    assert cli.main(["drift", str(k)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and "0 of %d" % len(drift.expected_names((7, 3))) in out
    assert "optional ones absent" in out


@pytest.mark.parametrize("what, build, smap, why", [
    ("no build.json", None, system_map("f"), "build.json"),
    ("no version", {"variant": "k"}, system_map("f"), "no kernel version"),
    ("too old", {"kernel_version": "5.15.3"}, system_map("f"), "older than 6.1"),
    ("no System.map", {"kernel_version": "7.3.4"}, None, "System.map"),
    ("no _stext", {"kernel_version": "7.3.4"}, "ffffffff81000000 T f\n", "_stext"),
])
def test_an_unreadable_kernel_dir_exits_2(tmp_path, capsys, what, build, smap, why):
    d = tmp_path / "k"
    d.mkdir()
    if build is not None:
        (d / "build.json").write_text(json.dumps(build))
    if smap is not None:
        (d / "System.map").write_text(smap)
    assert cli.main(["drift", str(d)]) == 2, what
    assert why in capsys.readouterr().err


# ------------------------------------------------------------ the table
def test_every_name_of_the_table_is_expected_in_a_tested_version():
    # a name no tested kernel has is dead, unless no kernel has it at all
    for r in attribute.RULES:
        for n in r.names:
            assert any(n.expected_in(v) for v in ((6, 1), (6, 12), (7, 3))) or \
                n.guest or n.name.startswith("["), (r.line, n)


def quoted(text):
    """The C strings of a piece of lock_users.h."""
    return {w.strip('",') for w in text.split() if w.startswith('"')}


def module_lock_users(tmp_path, smap=None):
    """The window module's lock_users.h, made by its Kbuild from
    classes.txt (and the kernel's System.map, if given): its lock users
    and, of those, the ones that take the lock for their caller."""
    obj, kernel = tmp_path / "obj", tmp_path / "kernel"
    obj.mkdir()
    kernel.mkdir()
    (obj / "classes.txt").write_text(attribute.CLASSES_PATH.read_text())
    shutil.copy(KBUILD.parent / "lock_users.awk", obj)
    if smap is not None:
        (kernel / "System.map").write_text(smap)
    subprocess.run(["make", "-s", "-f", str(KBUILD), "obj=%s" % obj, "src=%s" % obj,
                    "srctree=%s" % kernel, "objtree=%s" % kernel, "%s/lock_users.h" % obj],
                   check=True, capture_output=True, text=True)
    users, through = (obj / "lock_users.h").read_text().split("lock_through[]")
    return quoted(users), quoted(through)


TABLE_USERS = {f for r in attribute.RULES if r.lock and r.match not in attribute.FRAME_LISTS
               for f in r.functions if "*" not in f}
TABLE_THROUGH = TABLE_USERS & {f for r in attribute.RULES if r.match == "plumbing"
                               for f in r.functions}


def test_the_module_reads_the_same_lock_users(tmp_path):
    # without a System.map: the table's names, without ranges or wildcards
    users, through = module_lock_users(tmp_path)
    assert users == TABLE_USERS and through == TABLE_THROUGH
    assert TABLE_THROUGH and not any("@" in f for f in users)


def test_the_module_looks_lock_users_up_as_the_kernel_names_them(tmp_path):
    # GCC's clones and pieces are the symbols the module finds at load; a
    # name the map lacks stays, for the module to count missing
    through = sorted(TABLE_THROUGH)[0]
    smap = system_map("zap_pte_range.isra.0", "copy_pte_range", "copy_pte_range.cold",
                      "unmap_mapping_range.constprop.0.isra.0", through + ".part.0",
                      "zap_pte_range_not", "zap")
    users, thru = module_lock_users(tmp_path, smap)
    expanded = {"zap_pte_range.isra.0", "copy_pte_range", "copy_pte_range.cold",
                "unmap_mapping_range.constprop.0.isra.0", through + ".part.0"}
    assert expanded <= users
    assert {"zap_pte_range", "unmap_mapping_range", through, "zap_pte_range_not",
            "zap"}.isdisjoint(users)
    assert users - expanded == TABLE_USERS - {"zap_pte_range", "copy_pte_range",
                                              "unmap_mapping_range", through}
    assert through + ".part.0" in thru and through not in thru
