import json
import os
import re

import pytest

from mmlat import load, plot, report, stats
from mmlat.__main__ import main

from fakerun import make_run


@pytest.fixture(scope="module")
def worse_run(tmp_path_factory):
    # One cell fails; the rest are enough boots for significance.
    return make_run(str(tmp_path_factory.mktemp("r") / "run"), shift=25,
                    repeats=stats.MIN_REPEATS + 1)


def test_load_attribution(worse_run):
    run = load.load_run(worse_run)
    c = [x for x in run["cells"] if x["variant"] == "baseline"][0]
    po = c["windows"]["preemptoff"]
    assert po["by_class"]["pte-lock-zap"] == {3: 500, 1000: 2}
    assert po["by_class"]["pte-lock-fork"] == {40: 20}
    assert po["by_class"]["softirq"] == {80: 5}
    assert po["tracer_max"] == 1000


def test_report_cli(worse_run, capsys):
    assert main(["report", worse_run, "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    txt = open(os.path.join(worse_run, "report", "report.txt")).read()
    assert txt in out
    assert all(len(l) <= 80 for l in txt.splitlines())
    assert "kernel:   6.1.0-test" in txt and "accel: tcg" in txt
    assert "FAILED CELLS:" in txt and "guest timed out after 600 s" in txt
    assert "== munmap" in txt and "== fork" in txt
    assert re.search(r"^p99\.9 .*\* worse", txt, re.M)
    assert "pte-lock-zap" in txt and "1000" in txt and "500" in txt
    assert "200 resamples, 95% conf" in txt
    s = json.load(open(os.path.join(worse_run, "report", "summary.json")))
    assert s["bootstrap"]["n_resamples"] == 200
    d = s["workloads"]["munmap"]["latency"]["diff"]["stats"]["p50"]
    assert d["lo"] <= 25 <= d["hi"] + 1 and d["significant"]
    cl = s["workloads"]["munmap"]["windows"]["preemptoff"]["classes"]["pte-lock-zap"]
    assert cl["baseline"]["max"] == 1000 and cl["patched"]["max"] == 500
    md = open(os.path.join(worse_run, "report", "report.md")).read()
    for p in s["plots"]:
        assert "](%s)" % p in md
        assert os.path.getsize(os.path.join(worse_run, "report", p)) > 1000
    svg = open(os.path.join(worse_run, "report", "latency_hist.svg")).read()
    assert "accel tcg" in svg and "munmap" in svg


def test_compare_exit(worse_run, tmp_path, capsys):
    assert main(["compare", worse_run, "--resamples", "200"]) == 1
    assert "WORSE: munmap p99.9" in capsys.readouterr().out
    same = make_run(str(tmp_path / "same"), shift=0, seed=0, failed=False)
    # baseline vs itself (A/A): never significant
    assert main(["compare", same, "--baseline", "baseline", "--patched", "baseline",
                 "--resamples", "200"]) == 0


def test_refuse_mixed_accel(tmp_path, capsys):
    r = make_run(str(tmp_path / "mixed"), accel=("tcg", "kvm"), repeats=2)
    assert main(["compare", r, "--resamples", "50"]) == 3
    assert "refusing to compare" in capsys.readouterr().err


def test_summary_cli(worse_run, capsys):
    assert main(["summary", worse_run]) == 0
    t = open(os.path.join(worse_run, "summary.txt")).read()
    assert "preemptoff" in t.splitlines()[0]
    row = [l for l in t.splitlines() if l.startswith("baseline") and "munmap" in l][0]
    assert row.split()[-2] == "1000" and row.split()[-1] == "10"
    ok = "%d/%d" % (stats.MIN_REPEATS, stats.MIN_REPEATS + 1)
    assert ok in [l for l in t.splitlines() if l.startswith("patched") and "fork" in l][0]


def test_figure_content(worse_run):
    run = load.load_run(worse_run)
    s = report.build(run, n_resamples=50)
    fig = plot.fig_latency_hist(run, s)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("baseline (max") and labels[1].startswith("patched (max")
    assert ax.get_yscale() == "log" and ax.get_title() in ("cyclictest latency: fork", "cyclictest latency: munmap")
    assert {a.get_title() for a in fig.axes} == {"cyclictest latency: fork", "cyclictest latency: munmap"}
    assert "accel tcg" in fig._suptitle.get_text()
    fc = plot.fig_classes(run, s, "preemptoff")
    ticks = [t.get_text() for t in fc.axes[0].get_xticklabels()]
    assert "pte-lock-zap" in ticks


def test_text_hist():
    t = report.text_hist({10: 100, 20: 1}, {10: 10}, rows=4)
    assert "#" in t and "o" in t and all(len(l) <= 80 for l in t.splitlines())


def test_header_from_build_json(tmp_path):
    r = make_run(str(tmp_path / "b"), repeats=2, failed=False)
    for v, ser in (("baseline", []), ("patched", ["mm-preempt-v10"])):
        with open(os.path.join(r, "kernels", v, "build.json"), "w") as f:
            json.dump({"series": ser, "series_sha256": "e3b0" + "0" * 60,
                       "config_sha256": "c0ffee", "kernel_release": "6.1.192-mmlat-" + v}, f)
    run = load.load_run(r)
    txt = report.render_txt(report.build(run, n_resamples=20), run)
    assert "series:   patched: mm-preempt-v10  [6.1.192-mmlat-patched]" in txt
    assert "  series sha256 e3b0" + "0" * 60 in txt
    assert all(len(l) <= 80 for l in txt.splitlines())
