"""The primary endpoints table, per-boot values and the verdicts."""
import numpy as np
import pytest

from mmlat import endpoints, load, sequential, stats, summarize
from plan import instruments, workloads

from fakerun import make_run
import fakerun


def test_every_workload_has_latency_primary_and_the_table_names_real_endpoints():
    for w in workloads.WORKLOADS:
        assert set(w.primary) <= set(endpoints.ENDPOINTS), w.name
        # both latency endpoints, primary or demoted, first
        assert w.primary[:2] == workloads.LATENCY
        assert all(endpoints.margin(w.name, e.name) > 0 for e in endpoints.primary(w.name))
    # an override is of one of its workload's primary endpoints, and says why
    for w, overrides in endpoints.OVERRIDES.items():
        for x in overrides:
            assert x.endpoint in workloads.BY_NAME[w].primary and len(x.why) > 20, (w, x)
    # a parameterised entry is its workload
    assert endpoints.primary("imap:n=256,s=1") == endpoints.primary("imap")
    assert [e.name for e in endpoints.primary("sng-mm")] == list(
        workloads.LATENCY + workloads.WORK)
    names = {e.name for e in endpoints.primary("truncate")}
    assert "i_mmap-lock window" in names and "i_mmap hold" not in names
    assert not names & {e.name for e in endpoints.exploratory("truncate")}


def test_margins_by_kind_overridden_and_demoted():
    assert endpoints.margin("munmap", "cyclictest p99.9") == endpoints.MARGIN[
        "cyclictest percentile"] == 0.10
    assert endpoints.margin("munmap", "cyclictest max") == 0.15
    assert endpoints.margin("munmap", "zap-path window") == 0.10
    assert endpoints.margin("fork", "pages/s") == 0.02
    # the short anon_vma windows: a factor 2
    assert endpoints.margin("exit:n=4", "anon_vma-lock window") == 1.0
    # truncate's p99.9: exploratory, and the report says why
    assert "cyclictest p99.9" not in {e.name for e in endpoints.primary("truncate")}
    assert "cyclictest p99.9" in {e.name for e in endpoints.exploratory("truncate")}
    assert [d.endpoint for d in endpoints.demoted("truncate")] == ["cyclictest p99.9"]
    assert "24.6 %" in endpoints.demoted("truncate")[0].why
    with pytest.raises(KeyError):
        endpoints.margin("truncate", "cyclictest p99.9")


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


def comparison(workload, endpoint, base, patched):
    spec = endpoints.ENDPOINTS[endpoint]
    return endpoints.compare(workload, spec, True, cells(spec, base), cells(spec, patched),
                             n_resamples=0)


def cells(spec, values):
    """Boots whose endpoint reads values (the cell keys Endpoint.value uses)."""
    out = []
    for r, v in enumerate(values, 1):
        if spec.kind == "throughput":
            out.append({"repeat": r, spec.of: v})
        elif spec.kind == "window":
            out.append({"repeat": r, "windows": {endpoints.TRACER: {"by_class": {
                spec.of[0]: {v: 1}} if v > 0 else {}}}})
        else:
            out.append({"repeat": r, "lat_hist": {v: 1}})
    return out


def noise(seed, sd=0.02, n=8):
    return 100 * np.exp(np.random.default_rng(seed).normal(0, sd, n))


def test_verdicts_are_three_way_against_the_margin_and_oriented():
    cs = [comparison("w", "cyclictest max", noise(1), noise(2) * 1.4),     # higher: worse
          comparison("w", "pages/s", noise(3), noise(4) * 1.1),            # more work: better
          comparison("w", "pages/s", noise(5), noise(6) / 1.1),            # less work: worse
          comparison("w", "cyclictest p99.9", noise(7), noise(8) * 1.02),  # within 10 %: same
          comparison("w", "cyclictest p99.9", noise(9, 0.2), noise(10, 0.2)),  # too noisy
          comparison("w", "cyclictest p99.9", [100.0], [100.0, 101.0])]    # no test
    rnd = endpoints.decide(cs, [sequential.Look(8, 1.0)], instruments.of("windows").figure_boot)
    assert len(rnd.outcomes) == 6
    assert [c.verdict for c in cs] == ["worse", "better", "worse", "same", "inconclusive",
                                       "n/a"]
    # the decision interval (relative change) lies where the verdict says
    assert cs[0].dlo > 0.15 and cs[1].dlo > 0.02 and cs[2].dhi < -0.02 / 1.02
    assert -0.1 / 1.1 < cs[3].dlo < cs[3].dhi < 0.1
    assert cs[4].dlo < 0.1 < cs[4].dhi and cs[4].more_boots > 0
    assert cs[5].dlo is None and cs[5].more_boots is None


def test_a_window_that_vanishes_gets_a_verdict():
    # exit's anon_vma-lock window: 30-110 us in the baseline, under the
    # module's 5 us floor in every patched boot (read as 5)
    base = [43.0, 38.5, 61.2, 33.0, 104.9, 47.7, 35.1, 52.8, 40.2, 71.3]
    c = comparison("exit", "anon_vma-lock window", base, [0.0] * 10)
    assert c.patched == [endpoints.WINDOW_FLOOR_US] * 10 and c.margin == 1.0
    endpoints.decide([c], [sequential.Look(10, 1.0)], instruments.of("windows").figure_boot)
    assert c.verdict == "better" and c.dhi < -0.5


def test_report_gates_on_primary_endpoints_only(run):
    s = summarize.build(run, n_resamples=50)
    cs = [c for w in s.workloads for c in w.comparisons]
    # one family over the whole report: every workload's primary endpoints
    assert s.gate.family == sum(c.primary for c in cs) == (
        len(endpoints.primary("munmap")) + len(endpoints.primary("fork")))
    assert s.gate.looks == [sequential.Look(3, 1.0)]
    assert all(c.verdict == "" and c.margin is None for c in cs if not c.primary)
    assert all(c.verdict in ("worse", "better", "same", "inconclusive", "n/a")
               for c in cs if c.primary)
    assert {(c.workload, c.endpoint) for c in s.worse()} <= {
        (c.workload, c.endpoint) for c in cs if c.primary}
