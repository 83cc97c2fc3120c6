"""The primary endpoints table, per-boot values and the verdicts."""
import pytest

from mmlat import endpoints, load, report, stats

from fakerun import make_run
import fakerun


def test_every_workload_has_latency_primary_and_the_table_names_real_endpoints():
    for w, names in endpoints.PRIMARY.items():
        assert set(names) <= set(endpoints.ENDPOINTS), w
        assert names[:2] == endpoints.LATENCY
    # a parameterised entry is its workload; an unknown one gets latency and pages/s
    assert endpoints.primary("imap:n=256,s=1") == endpoints.primary("imap")
    assert [e.name for e in endpoints.primary("sng-mm")] == list(endpoints.LATENCY_AND_WORK)
    names = {e.name for e in endpoints.primary("truncate")}
    assert "i_mmap-lock window" in names and "i_mmap hold" not in names
    assert not names & {e.name for e in endpoints.exploratory("truncate")}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return load.load_run(make_run(str(tmp_path_factory.mktemp("e") / "run"), shift=25,
                                  repeats=3, failed=False))


def test_per_boot_values(run):
    cells = {(c["variant"], c["boot"], c["repeat"]): c for c in run["cells"]
             if c["workload"] == "munmap"}
    e = endpoints.ENDPOINTS
    traced_b, traced_p = cells["baseline", "traced", 2], cells["patched", "traced", 2]
    assert e["pte-lock-zap window"].value(traced_b) == fakerun.zap_ns(0, 25) / 1000
    # the zap path: the longest of its classes, whichever opened the window
    by_class = traced_b["windows"]["preemptoff"]["by_class"]
    assert e["zap-path window"].value(traced_b) == max(
        max(by_class.get(c, {0: 0})) for c in endpoints.ZAP_PATH_CLASSES)
    assert e["zap-path window"].value(traced_b) >= e["mmu-gather window"].value(traced_b)
    # the patched i_mmap lock sleeps: no window of its class, read as the floor
    assert e["i_mmap-lock window"].value(traced_p) == endpoints.WINDOW_FLOOR_US
    assert e["i_mmap hold"].value(traced_b) == fakerun.i_mmap_ns(0, "munmap") / 1000
    assert e["ops/s"].value(cells["patched", "clean", 2]) == fakerun.clean_ops(1, 2)
    assert e["pages/s"].value(cells["patched", "clean", 2]) == (
        fakerun.clean_ops(1, 2) * fakerun.PAGES_PER_OP)
    clean = cells["baseline", "clean", 1]
    assert e["cyclictest max"].value(clean) == stats.summarize_hist(clean["lat_hist"])["max"]


def comparison(endpoint, p, t):
    return endpoints.Comparison("w", endpoint, True, [1.0, 2.0], [1.0, 2.0], p=p, t=t)


def test_verdicts_are_holm_over_the_family_and_oriented():
    cs = [comparison("cyclictest max", 0.001, 5.0),      # higher latency: worse
          comparison("pages/s", 0.001, 5.0),             # more work: better
          comparison("pages/s", 0.001, -5.0),            # less work: worse
          comparison("cyclictest p99.9", 0.03, 3.0),     # 0.03 * 2 > 0.05 after Holm
          comparison("cyclictest p99.9", None, None)]    # no test
    assert endpoints.decide(cs) == 5
    assert [c.verdict for c in cs] == ["worse", "better", "worse", "-", "n/a"]
    assert cs[3].p_holm == pytest.approx(0.06)
    # alone in its family the same p passes
    alone = [comparison("cyclictest p99.9", 0.03, 3.0)]
    endpoints.decide(alone)
    assert alone[0].verdict == "worse"


def test_report_gates_on_primary_endpoints_only(run):
    s = report.build(run, n_resamples=50)
    cs = [c for ws in s["workloads"].values() for c in report.comparisons_of(ws)]
    # one family over the whole report: every workload's primary endpoints
    assert s["gate"]["family"] == sum(c.primary for c in cs) == (
        len(endpoints.primary("munmap")) + len(endpoints.primary("fork")))
    assert all(c.verdict == "" for c in cs if not c.primary)
    assert all(c.verdict in ("worse", "better", "-", "n/a") for c in cs if c.primary)
    assert {(c.workload, c.endpoint) for c in report.compare_worse(s)} <= {
        (c.workload, c.endpoint) for c in cs if c.primary}
