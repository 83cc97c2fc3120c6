"""The workload registry (bench/plan/workloads.py): its rows against the
drivers, the analysis's endpoints and workloads/Makefile; WORKLOADS and
SWEEP checked against it; and the calibration grammar (bench/plan/
calib.py), parsed once on the host."""
import subprocess

import pytest
from helpers import ROOT
from mmlat import endpoints
from plan import calib, workloads


def test_every_driver_row_has_its_driver_and_every_driver_a_row():
    drivers = {p.stem for p in (ROOT / "workloads").glob("*.c")} - {"common"}
    assert set(workloads.DRIVERS) == drivers
    out = subprocess.run(["make", "-n", "-C", "workloads", "O=/nonexistent"], cwd=ROOT,
                         text=True, capture_output=True, check=True).stdout
    assert sorted(w for w in drivers if "mmlat-%s " % w in out) == sorted(drivers)


def test_every_workload_parameter_is_a_driver_option_letter():
    for w in workloads.WORKLOADS:
        for p in w.params:
            assert w.kind == workloads.DRIVER and p.help
            assert len(p.key) == 1 and p.key.isalpha() and 1 <= p.lo <= p.hi
            # the options every driver takes (common.c) and its own
            extra = (ROOT / f"workloads/{w.name}.c").read_text().split("mm_parse(")[1].split('"')[1]
            assert f"{p.key}:" in "d:s:" + extra


def test_every_primary_endpoint_is_one_the_analysis_measures():
    for w in workloads.WORKLOADS:
        assert w.primary and set(w.primary) <= set(endpoints.ENDPOINTS), w.name
        # the row's, but those the analysis demotes (endpoints.OVERRIDES)
        demoted = [x.endpoint for x in endpoints.demoted(w.name)]
        assert [e.name for e in endpoints.primary(w.name + ":n=1")] == [
            e for e in w.primary if e not in demoted]


def test_stress_ng_rows_have_a_recipe_and_others_none():
    for w in workloads.WORKLOADS:
        assert bool(w.stress_ng) == (w.kind == workloads.STRESS_NG), w.name


def test_sweep_expands_the_swept_key_in_place_and_keeps_the_fixed_ones():
    a, b = (workloads.parse_sweep(s) for s in ("imap:s=1,n=16,64,256", "imap:n=8,s=2,3"))
    assert (a.name, a.key, a.values, a.fixed, a.workloads) == (
        "imap", "n", [16, 64, 256], {"s": 1},
        ["imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256"])
    assert (b.key, b.values, b.fixed, b.workloads) == (
        "s", [2, 3], {"n": 8}, ["imap:n=8,s=2", "imap:n=8,s=3"])


@pytest.mark.parametrize("sweep, message", [
    ("imap", "SWEEP 'imap': no parameters; write NAME:KEY=V1,V2,..."),
    ("imap:", "SWEEP 'imap:': no parameters"),
    ("imap:16,64", "SWEEP 'imap:16,64': '16' comes before any KEY="),
    ("imap:n=16", "SWEEP 'imap:n=16': no key has several values"),
    ("imap:n=16,64,s=1,2", "'n' and 's' both have several values; a sweep varies one key"),
    ("imap:n=16,,64", "SWEEP 'imap:n=16,,64': an empty value"),
    ("imap:n=16,64,", "an empty value"),
    ("imap:n=16,64,16", "SWEEP 'imap:n=16,64,16': n=16 given twice"),
    ("imap:n=16,5000", "SWEEP 'imap:n=16,5000' (entry 'imap:n=5000'): n=5000 is not an "
                       "integer in 1..4096"),
    ("imap:m=1,2", "(entry 'imap:m=1'): no parameter 'm' for imap; it takes n=1..4096"),
    ("imap:n=1,2,n=3", "(entry 'imap:n=1,n=3'): 'n' given twice"),
    ("munmap:n=1,2", "(entry 'munmap:n=1'): workload 'munmap' takes no parameters"),
])
def test_sweep_errors_name_the_sweep_and_the_problem(sweep, message):
    with pytest.raises(workloads.EntryError) as e:
        workloads.parse_sweep(sweep)
    assert message in str(e.value)


def test_the_calibration_grammar_expands_rounds_lengths_and_kinds_in_order():
    assert calib.parse("preempt/irq:10/20x2,ptl:5") == [
        ("preempt", 10), ("irq", 10), ("preempt", 20), ("irq", 20),
        ("preempt", 10), ("irq", 10), ("preempt", 20), ("irq", 20), ("ptl", 5)]
    assert calib.guest_form(calib.parse("preempt/ptl_nested:200x2")) == "p200,n200,p200,n200"
    # make calibrate's 135 windows fit the x86 kernel command line
    windows = calib.parse("preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x3")
    assert len(windows) == 135 and len("mmlat.calib=" + calib.guest_form(windows)) < 1024


@pytest.mark.parametrize("bad", ["preempt", "preempt:", "bogus:10", "preempt:10x0",
                                 "preempt:1//2", "preempt:0", ":10"])
def test_a_bad_calibration_item_is_refused(bad):
    with pytest.raises(calib.CalibError):
        calib.parse(bad)
