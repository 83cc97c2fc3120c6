"""The per-patch table (STEPS=each): each step of a fake run compared with
the one before it, from the steps meta.json records."""
import json

import pytest

from mmlat import endpoints, load, model, render_text, summarize

import fakerun
from fakerun import make_run

REPEATS = 4
SHIFT = 25
# The fake run's three variants as two steps: patched.1 (variant 1 of
# fakerun: latency SHIFT us up, the zap path's window 500 us shorter, the
# i_mmap lock sleeping) and patched (variant 2: latency and zap window as
# the baseline's, more throughput).
STEPS = [{"variant": "patched.1", "previous": "baseline", "series": "mm-preempt-v10",
          "patch": "0001-mm-mmu_gather-rework.patch", "index": 1},
         {"variant": "patched", "previous": "patched.1", "series": "mm-preempt-v10",
          "patch": "0002-mm-remove-i_mmap-lock-lockbreak.patch", "index": 2}]
RESAMPLES = 50


def steps_run(root, recorded):
    make_run(root, shift=SHIFT, repeats=REPEATS, failed=False,
             variants=("baseline", "patched.1", "patched"), workloads=("munmap", "truncate"),
             steps=recorded)
    return load.load_run(root)


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    run = steps_run(str(tmp_path_factory.mktemp("s") / "run"), STEPS)
    return run, summarize.build(run, n_resamples=RESAMPLES)


def by_endpoint(step, workload):
    return {c.endpoint: c for c in step.comparisons[workload]}


def test_each_step_is_compared_with_the_one_before_it(stepped):
    run, s = stepped
    first, second = s.steps
    assert [(st.index, st.previous, st.variant) for st in (first, second)] == [
        (1, "baseline", "patched.1"), (2, "patched.1", "patched")]
    for w in ("munmap", "truncate"):
        assert [c.endpoint for c in first.comparisons[w]] == [
            e.name for e in endpoints.primary(w)]
        assert first.boots[w] == {"clean": [REPEATS, REPEATS], "traced": [REPEATS, REPEATS]}
    one, two = by_endpoint(first, "munmap"), by_endpoint(second, "munmap")
    zap = endpoints.ENDPOINTS["zap-path window"]
    assert one["zap-path window"].base == [zap.value(c) for c in load.ok_cells(
        run, "baseline", "munmap", "traced")]
    # patch 1 shortens the zap path's longest window by 500 us, patch 2
    # takes that back
    assert one["zap-path window"].delta == pytest.approx(
        (fakerun.zap_ns(1, SHIFT) - fakerun.zap_ns(0, SHIFT)) / 1000, abs=1)
    assert two["zap-path window"].delta == pytest.approx(500, abs=1)
    # p99.9: SHIFT us up with patch 1, down again with patch 2, each
    # interval clear of 0
    assert one["cyclictest p99.9"].delta == pytest.approx(SHIFT, abs=3)
    assert two["cyclictest p99.9"].delta == pytest.approx(-SHIFT, abs=3)
    assert two["cyclictest p99.9"].hi < 0 < one["cyclictest p99.9"].lo
    # throughput: fakerun's clean boots, in pages
    assert two["pages/s"].base == [fakerun.clean_ops(1, r) * fakerun.PAGES_PER_OP
                                   for r in range(1, REPEATS + 1)]
    assert two["pages/s"].patched == [fakerun.clean_ops(2, r) * fakerun.PAGES_PER_OP
                                      for r in range(1, REPEATS + 1)]
    # truncate's i_mmap-lock window: a spinning hold in the baseline, none
    # (under the floor) once patch 1 makes the lock sleep
    i_mmap = by_endpoint(first, "truncate")["i_mmap-lock window"]
    assert i_mmap.base_gmean == pytest.approx(fakerun.i_mmap_ns(0, "truncate") / 1000, rel=0.02)
    assert i_mmap.patched == [endpoints.WINDOW_FLOOR_US] * REPEATS


def test_steps_use_the_headlines_comparison_without_its_verdict(stepped):
    run, s = stepped
    first = s.steps[0]
    # baseline against patched.1 as a headline of its own: the same
    # per-boot values, test and interval
    alone = summarize.build(run, "baseline", "patched.1", n_resamples=RESAMPLES)
    for w in ("munmap", "truncate"):
        head = alone.workload(w).primary()
        for c, h in zip(first.comparisons[w], head):
            assert (c.endpoint, c.base, c.patched, c.margin, c.lo, c.hi) == (
                h.endpoint, h.base, h.patched, h.margin, h.lo, h.hi)
            assert c.verdict == "" and c.dlo is None and c.look is None
    # the steps stay out of the headline's family
    plain = summarize.build(steps_run(str(run["dir"]) + "-plain", []), n_resamples=RESAMPLES)
    # munmap 4, truncate 4 (its p99.9 demoted)
    assert s.gate.family == plain.gate.family == 4 + 4
    assert s.steps and plain.steps == []
    assert "Each patch" not in render_text.render(plain)


def test_per_patch_table_in_report_txt(stepped):
    _, s = stepped
    txt = render_text.render(s)
    # read back from summary.json as `mmlat report` writes it
    assert render_text.render(model.from_json(json.loads(json.dumps(model.to_json(s))))) == txt
    lines = txt.splitlines()
    head = lines.index("== Each patch against the previous step (STEPS=each) ==")
    assert lines[head + 1:head + 3] == [
        "  1 patched.1: mm-preempt-v10/0001-mm-mmu_gather-rework.patch",
        "  2 patched: mm-preempt-v10/0002-mm-remove-i_mmap-lock-lockbreak.patch"]
    munmap = lines.index(render_text.STEP_HEAD % ("munmap", "before", "after", "delta", "%",
                                                  "95% interval"))
    truncate = lines.index(render_text.STEP_HEAD % ("truncate", "before", "after", "delta", "%",
                                                    "95% interval"))
    # per workload, a block per patch in order: its heading, then a row
    # per primary endpoint
    block = lines[munmap + 1:truncate - 1]
    assert [line for line in block if not line.startswith("    ")] == [
        "  1 0001-mm-mmu_gather-rework (clean 4+4, traced 4+4 boots)",
        "  2 0002-mm-remove-i_mmap-lock-lockbreak (clean 4+4, traced 4+4 boots)"]
    first = by_endpoint(s.steps[0], "munmap")
    assert block[1:5] == [render_text.step_row(first[e.name]) for e in endpoints.primary("munmap")]
    assert [line[4:24].rstrip() for line in block[1:5]] == [
        "cyclictest p99.9 us", "cyclictest max us", "zap-path max us", "pages/s"]
    assert block[3].split()[3:7] == ["1000", "500.1", "-500.0", "-50.0"]
    p999 = first["cyclictest p99.9"]
    assert block[1].endswith(" [%+.0f, %+.0f]" % (p999.lo, p999.hi))
    # the i_mmap lock's window goes under the floor with patch 1: no %
    # of a bound
    i_mmap = [line for line in lines[truncate:] if line.startswith("    i_mmap-lock max us")]
    assert i_mmap[0].split()[3:7] == ["300.1", "<5", "-295.1", "-"]
    assert i_mmap[1].split()[3:7] == ["<5", "<5", "-", "-"]
    assert all(len(line) <= 80 for line in lines[head:])
