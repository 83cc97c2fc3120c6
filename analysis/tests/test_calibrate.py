"""Calibration checks on a real calibration cell (mainline, tcg-icount,
make calibrate) and on copies of it with one figure broken."""
import re
import shutil
from pathlib import Path

import pytest

from mmlat import calibrate

FIX = Path(__file__).parent / "fixtures" / "calib-6.1-tcg"
REQUEST = calibrate.parse_request(
    "preempt:200,preempt:1000,preempt:5000,irq:200,irq:1000,irq:5000")


@pytest.fixture
def cell(tmp_path):
    dst = tmp_path / "guest"
    shutil.copytree(FIX, dst)
    return dst


def test_real_cell_passes_every_check(cell):
    rows, failures = calibrate.check_cell(str(cell), REQUEST)
    assert failures == []
    windows = rows[:-1]
    assert [r["class"] for r in windows] == ["calibration"] * 6
    assert [r["tracer_us"] for r in windows] == [219, 1019, 5019, 213, 1013, 5013]
    assert rows[-1]["max_us"] >= 5000 - 500


def test_tracer_reading_far_off_fails(cell):
    calib = cell / "calib.txt"
    calib.write_text(calib.read_text().replace("tracer_us=5019", "tracer_us=2488", 1))
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert failures == ["preempt 5000 us: tracer saw 2488 us, module timed 5000.3 us "
                        "inside, 5893.7 us around (-50.2%)"]


def test_tracer_beyond_the_time_around_the_window_fails(cell):
    calib = cell / "calib.txt"
    calib.write_text(calib.read_text().replace("tracer_us=219", "tracer_us=700", 1))
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert len(failures) == 1 and failures[0].startswith("preempt 200 us: tracer saw 700 us")


def test_window_module_reading_is_checked(cell):
    rows, failures = calibrate.check_cell(str(cell), REQUEST)
    assert [r.get("windows_us") for r in rows[:-1]] == [None, None, 5015.152, None, None, 5002.424]
    win = cell / "windows" / "windows.txt"
    win.write_text(win.read_text().replace("max_ns=5015152", "max_ns=2015152"))
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert failures == ["preempt 5000 us: the window module saw 2015.2 us, module timed "
                        "5000.3 us inside, 5893.7 us around"]


def test_window_attributed_elsewhere_fails(cell):
    trace = cell / "calib" / "1.trace"
    trace.write_text(trace.read_text().replace("mmlat_calib_preempt_window", "unmap_page_range"))
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert len(failures) == 1
    assert failures[0].startswith("preempt 200 us: attributed to pte-lock-zap")


def test_cyclictest_missing_the_window_fails(cell):
    js = cell / "cyclictest.json"
    text = js.read_text()
    peak = max(int(v) for v in re.findall(r'"max": (\d+)', text))
    js.write_text(text.replace('"max": %d' % peak, '"max": 2000'))
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert len(failures) == 1 and failures[0].startswith("cyclictest max 2000 us")


def test_missing_and_extra_windows_are_named(cell):
    _, failures = calibrate.check_cell(str(cell), REQUEST[:5])
    assert failures[0] == "5 windows requested, 6 recorded"
    (cell / "calib.txt").unlink()
    _, failures = calibrate.check_cell(str(cell), REQUEST)
    assert "the calibration did not run" in failures[0]


@pytest.mark.parametrize("bad", ["preempt", "irq:", "nmi:100", "preempt:1e3"])
def test_bad_request_is_refused(bad):
    with pytest.raises(ValueError):
        calibrate.parse_request(bad)
