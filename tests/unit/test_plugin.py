"""The QEMU plugin (plugin/): its frames as the guest module prints them,
its dumps read by the analysis as the module's are, and the calibration
read-back from its event log. Fixtures are real plugin output
(plugin/tests/fixtures/README); nothing boots here."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))

from mmlat import attribute, calibrate, load, parse, plugin_events  # noqa: E402

FIXTURES = ROOT / "plugin" / "tests" / "fixtures"
CALIB = FIXTURES / "calib-6.1-icount"
MUNMAP = FIXTURES / "munmap-6.1-icount"

# A System.map as the kernel's build writes it: text, init text, data and
# a per-CPU variable (a small address), two names at one address.
SYSTEM_MAP = """\
000000000001abc0 D __preempt_count
ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff813f0800 t zap_pte_range
ffffffff813f08a0 T _raw_spin_lock
ffffffff813f08e0 T _raw_spin_unlock
ffffffff813f08e0 T __raw_spin_unlock_alias
ffffffff813f0900 t zap_pte_range
ffffffff81600a00 T __entry_text_end_fn
ffffffff81600b08 T _etext
ffffffff81800000 D jiffies
ffffffff81b36000 T _sinittext
ffffffff81b36000 T start_kernel
ffffffff81b36b80 T arch_call_rest_init
ffffffff81b36b99 T _einittext
"""


@pytest.fixture(scope="module")
def symbols_test(tmp_path_factory):
    """plugin/src/symbols.c built into plugin/tests/symbols_test.c's driver."""
    if not shutil.which("gcc") or subprocess.run(
            ["pkg-config", "--exists", "glib-2.0"]).returncode:
        pytest.skip("needs gcc and glib's headers (libglib2.0-dev)")
    d = tmp_path_factory.mktemp("symbols")
    exe = d / "symbols_test"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "glib-2.0"],
                           capture_output=True, text=True, check=True).stdout.split()
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-I", str(ROOT / "plugin/src"),
                    "-o", str(exe), str(ROOT / "plugin/src/symbols.c"),
                    str(ROOT / "plugin/tests/symbols_test.c")] + flags, check=True)
    sysmap = d / "System.map"
    sysmap.write_text(SYSTEM_MAP)

    def run(*args):
        proc = subprocess.run([str(exe), str(sysmap)] + list(args), capture_output=True,
                              text=True)
        return proc.returncode, proc.stdout.split("\n")[:-1]
    return run


def test_frames_print_as_the_module_prints_them(symbols_test):
    rc, out = symbols_test("ffffffff813f08b7", "ffffffff813f0800", "ffffffff81b36b8e",
                           "ffffffffa0000450", "ffffffff81700000", "ffffffff81600b00")
    assert rc == 0
    assert out == [
        "_raw_spin_lock+0x17/0x40",          # size: up to the next text symbol
        "zap_pte_range+0x0/0xa0",
        "arch_call_rest_init+0xe/0x19",      # init text ends at _einittext
        "0xffffffffa0000450",                # module code: not in System.map
        "0xffffffff81700000",                # past _etext: no function's
        "__entry_text_end_fn+0x100/0x108",   # the last function ends at _etext
    ]


def test_a_function_is_found_by_name_and_a_variable_is_not(symbols_test):
    assert symbols_test("-r", "_raw_spin_lock") == (0, ["ffffffff813f08a0 ffffffff813f08e0"])
    # static functions repeat: the first of the name
    assert symbols_test("-r", "zap_pte_range") == (0, ["ffffffff813f0800 ffffffff813f08a0"])
    assert symbols_test("-r", "jiffies")[0] == 1
    assert symbols_test("-r", "__preempt_count")[0] == 1


def test_the_plugins_dumps_read_as_the_modules():
    w = parse.parse_windows(MUNMAP / "windows.txt")
    locks = parse.parse_locks(MUNMAP / "locks.txt")
    assert w["params"]["clock"] == "icount" and w["params"]["shift"] == 3
    assert w["params"]["sub_bits"] == 6 and w["params"]["key_sub_bits"] == 3
    for kind in ("preempt", "irq"):
        k = w["kinds"][kind]
        assert k["n"] > 100000 and k["unmatched"] == 0 and k["overflow"] == 0
        assert sum(n for _, _, n in k["buckets"]) == k["n"]
        assert k["keyed"] == sum(e["n"] for e in w["keys"] if e["kind"] == kind)
        # the longest window, classed from its stack at open and at its end
        m = load.max_window(k, kind, load.lock_sites(locks))
        assert m["agree"], m
    assert load.max_window(w["kinds"]["preempt"], "preempt")["open_class"] == "mmu-gather"
    assert load.max_window(w["kinds"]["irq"], "irq")["open_class"] == "zone-lru-lock"
    # lock holds by call site: the zap path's PTE lock, the rmap's anon_vma
    assert locks["params"]["i_mmap"] == "rwsem-write"
    assert locks["totals"]["pte"]["holds"] > 10000
    assert locks["totals"]["pte"]["lost"] == 0 and locks["totals"]["pte"]["discarded"] == 0
    zap = [s for s in locks["sites"] if s["lock"] == "pte"
           and attribute.hold_class("pte", s["func"]) == "pte-lock-zap"]
    assert zap and max(s["max_ns"] for s in zap) > 100000


def test_event_log_parses():
    ev = plugin_events.parse_events(CALIB / "events.txt")
    assert ev["params"]["clock"] == "icount"
    assert [m["what"] for m in ev["marks"]] == ["start", "stop"]
    start, stop = (m["insn"] for m in ev["marks"])
    assert all(start <= w["begin_insn"] <= stop for w in ev["windows"])
    assert all(w["len_ns"] >= ev["params"]["log_ns"] for w in ev["windows"])
    with pytest.raises(ValueError):
        plugin_events.parse_events("mmlat_plugin_events 2\n", is_text=True)


def test_calibration_reads_back_on_a_line_of_slope_one():
    """Every injected window is read, each kind on reading = inside + b
    with b a whole number of instructions and no residual: the plugin's
    count and the module's local_clock() both follow the icount clock."""
    ev = plugin_events.parse_events(CALIB / "events.txt")
    cal = parse.parse_calib(CALIB / "calib.txt")
    rows = plugin_events.calibration_readings(ev, cal, parse.SymbolMap(CALIB / "kallsyms.txt"))
    assert len(rows) == len(cal) == 135
    assert all(r["reading_us"] is not None for r in rows)
    for kind in calibrate.KINDS:
        pts = [(r["inside_us"], r["reading_us"]) for r in rows if r["kind"] == kind]
        f = calibrate.fit(pts)
        assert f["n"] == 27 and f["a"] == pytest.approx(1.0, abs=1e-9)
        assert 0 < f["b_us"] < calibrate.B_LIMIT_US and round(f["b_us"] * 1000) % 8 == 0
        assert f["max_residual_us"] < 0.008


def test_a_missing_window_is_no_reading():
    ev = plugin_events.parse_events(
        "mmlat_plugin_events 1\nparam clock=icount log_ns=5000\n"
        "window irq cpu=0 begin_insn=10 len_ns=20880 lock=none stack=0xffffffffa0000010\n",
        is_text=True)
    sm = parse.SymbolMap("ffffffff81000000 T _stext\nffffffff81600b08 T _etext\n"
                         "ffffffffa0000000 t mmlat_calib_irq_window\t[mmlat_calib]\n",
                         is_text=True)
    cal = [{"type": "preempt", "ns": 20000}, {"type": "irq", "ns": 20000}]
    rows = plugin_events.calibration_readings(ev, cal, sm)
    assert [r["reading_us"] for r in rows] == [None, 20.88]
