"""The summary model: built once from a run, written as summary.json and
read back whole (records.py); a compact form for the README's tables;
refused, naming why, when another format or a partial summary is given
to a renderer that needs more."""
import json
from dataclasses import dataclass

import pytest

from mmlat import load, model, render_readme, render_text, summarize
from plan import codec

from fakerun import make_run


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    run = load.load_run(make_run(str(tmp_path_factory.mktemp("m") / "run"), shift=25,
                                 repeats=3, workloads=("munmap", "imap:n=64", "imap:n=16")))
    return summarize.build(run, n_resamples=20)


def test_summary_json_reads_back_to_the_same_model(summary, tmp_path):
    path = str(tmp_path / "summary.json")
    model.write(summary, path)
    back = model.read(path)
    assert back == summary
    assert render_text.render(back) == render_text.render(summary)
    # workloads keep the run's order (a parameter's values as numbers),
    # which a JSON object with sorted keys lost
    assert [w.name for w in back.workloads] == ["imap:n=16", "imap:n=64", "munmap"]


def test_another_format_is_refused_by_name(summary):
    doc = model.to_json(summary)
    with pytest.raises(model.SummaryFormatError, match="summary format 0, this analysis "
                       "reads format %d" % model.SUMMARY_FORMAT):
        model.from_json(dict(doc, format=0))
    with pytest.raises(model.SummaryFormatError, match="summary format None"):
        model.from_json({k: v for k, v in doc.items() if k != "format"})


def test_a_field_the_model_does_not_know_is_refused_with_its_path(summary):
    doc = json.loads(json.dumps(model.to_json(summary)))
    doc["workloads"][1]["latency"]["patched"]["p99.9"] = 1
    with pytest.raises(codec.RecordError, match=r"workloads\[1\]\.latency\.patched: "
                       r"Latency has no field p99\.9"):
        model.from_json(doc)
    doc = json.loads(json.dumps(model.to_json(summary)))
    doc["gate"]["family"] = "nine"
    with pytest.raises(codec.RecordError, match=r"gate\.family: int expected"):
        model.from_json(doc)


@dataclass
class Inner:
    n: int


@dataclass
class Outer:
    sides: model.Sides[Inner]
    pairs: list[tuple[int, float]]
    maybe: Inner | None = None
    either: int | str = 0


def test_records_decode_by_annotation():
    doc = {"sides": {"baseline": {"n": 1}, "patched": {"n": 2}}, "pairs": [[1, 0.5]],
           "either": "auto"}
    value = codec.from_json(Outer, doc)
    assert value == Outer(model.Sides(Inner(1), Inner(2)), [(1, 0.5)], None, "auto")
    assert codec.to_json(value) == dict(doc, maybe=None, pairs=[[1, 0.5]])
    with pytest.raises(codec.RecordError, match="Outer.sides.patched: Inner needs the "
                       "field n"):
        codec.from_json(Outer, dict(doc, sides={"baseline": {"n": 1}, "patched": {}}))
    with pytest.raises(codec.RecordError, match=r"Outer.either: 1.5 is none of int, str"):
        codec.from_json(Outer, dict(doc, either=1.5))


def test_compact_keeps_the_readme_tables_and_is_small(summary, tmp_path):
    small = model.compact(summary)
    path = str(tmp_path / "compact.json")
    model.write(small, path)
    back = model.read(path)
    assert back == small and back.compact
    for table in (render_readme.headline, render_readme.steps):
        assert table(back) == table(summary)
    assert (render_readme.windows([back], "preemptoff", "munmap", "baseline")
            == render_readme.windows([summary], "preemptoff", "munmap", "baseline"))
    for tracer in load.TRACERS:
        full = render_readme.sites(summary, tracer, "munmap")
        kept = min(model.COMPACT_WINDOW_SITES, len(full) - 4)
        assert kept > 0 and render_readme.sites(back, tracer, "munmap") == full[:2 + kept] + full[-2:]
    holds = render_readme.holds(back, "munmap")
    assert holds == render_readme.holds(summary, "munmap") and len(holds) > 4
    full = str(tmp_path / "full.json")
    model.write(summary, full)
    with open(path) as f, open(full) as g:
        assert len(f.read()) * 4 < len(g.read())
    with pytest.raises(model.SummaryFormatError, match="report.txt needs the full summary"):
        render_text.render(back)


def test_narrow_labels_drop_only_what_the_variants_share():
    assert model.distinct_tails(["mainline-6.12", "mainline-7.3"]) == {
        "mainline-6.12": "6.12", "mainline-7.3": "7.3"}
    for names in (["mainline", "mainline-6.12"], ["baseline", "patched", "as-posted"],
                  ["v-1", "v-1"]):
        assert model.distinct_tails(names) == {n: n for n in names}
