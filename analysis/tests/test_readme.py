"""README.md's measured tables are rendered from the committed summaries
of the runs they name (results/summaries/): a figure that no longer
matches its summary fails here."""
import json
import os

import pytest

from mmlat import load, model, readme, render_readme, summarize
from mmlat.__main__ import main

from fakerun import make_run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")


def test_readme_tables_are_their_summaries():
    with open(README, encoding="utf-8") as f:
        marked = readme.tables(f.read().split("\n"))
    assert marked, "README.md has no table rendered from a summary"
    stale = readme.check(README)
    assert not stale, "stale README tables (mmlat readme --write README.md): %s" % (
        ", ".join(spec for spec, _, _ in stale))


def test_committed_summaries_are_compact():
    directory = os.path.join(ROOT, "results", "summaries")
    for name in os.listdir(directory):
        assert model.read(os.path.join(directory, name)).compact, name


@pytest.fixture(scope="module")
def summary_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    run = load.load_run(make_run(str(root / "run"), shift=25, repeats=3, failed=False))
    path = root / "summaries" / "run.json"
    path.parent.mkdir()
    model.write(model.compact(summarize.build(run, n_resamples=20)), str(path))
    return path


def test_a_stale_figure_is_named_and_rewritten(summary_file, capsys):
    doc = summary_file.parent.parent / "doc.md"
    table = render_readme.headline(model.read(str(summary_file)))
    stale = [line.replace("| munmap | cyclictest max us | ", "| munmap | cyclictest max us | 1")
             for line in table]
    assert stale != table
    doc.write_text("Intro.\n\n<!-- mmlat table: headline summaries/run.json -->\n"
                   + "\n".join(stale) + "\n<!-- mmlat table end -->\n\nMore.\n")
    assert [spec for spec, _, _ in readme.check(str(doc))] == ["headline summaries/run.json"]
    assert main(["readme", str(doc)]) == 1
    assert "stale: headline summaries/run.json" in capsys.readouterr().out
    assert main(["readme", "--write", str(doc)]) == 0
    assert readme.check(str(doc)) == []
    text = doc.read_text()
    assert text.startswith("Intro.\n\n") and text.endswith("\n\nMore.\n")
    assert "\n".join(table) in text


def test_markers_that_do_not_pair_are_refused(tmp_path):
    for text, why in (("<!-- mmlat table: headline a.json -->\n", "without its end"),
                      ("<!-- mmlat table end -->\n", "without its start"),
                      ("<!-- mmlat table: headline a.json -->\n" * 2, "inside the one")):
        with pytest.raises(readme.TableError, match=why):
            readme.tables(text.split("\n"))
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- mmlat table: chart a.json -->\n<!-- mmlat table end -->\n")
    with pytest.raises(readme.TableError, match="no table kind chart"):
        readme.check(str(doc))


def test_steps_keep_the_rows_beyond_their_margin():
    from mmlat import endpoints
    moved = endpoints.Comparison("w", "cyclictest p99.9", True, [100.0, 102.0], [130.0, 131.0],
                                 [1, 2], [1, 2], lo=25.0, hi=33.0, margin=0.1)
    within = endpoints.Comparison("w", "cyclictest p99.9", True, [100.0, 102.0],
                                  [105.0, 106.0], [1, 2], [1, 2], lo=2.0, hi=7.0, margin=0.1)
    gone = endpoints.Comparison("w", "i_mmap-lock window", True, [500.0, 510.0], [5.0, 5.0],
                                [1, 2], [1, 2], lo=-506.0, hi=-494.0, margin=0.1)
    assert [render_readme.moved(c) for c in (moved, within, gone)] == [True, False, True]


def test_reach_follows_the_study_it_names(tmp_path):
    # twice fork's measured spread of p99.9: more boots to settle it, the
    # margin unchanged
    from mmlat import simulate

    def fork_p999(lines):
        cells = next(line for line in lines if line.startswith("| fork | cyclictest p99.9 |"))
        return [c.strip() for c in cells.split("|")[1:-1]]
    study = simulate.load_study()
    entry = simulate.study_entry(study, "fork", "cyclictest p99.9")
    entry["sd_log"] *= 2
    entry["cv"] *= 2
    noisier = tmp_path / "study.json"
    noisier.write_text(json.dumps(study))
    measured = fork_p999(render_readme.reach(simulate.AA_STUDY))
    doubled = fork_p999(render_readme.reach(str(noisier)))
    assert measured[3] == doubled[3] == "10%"
    assert float(doubled[2]) == pytest.approx(2 * float(measured[2]), abs=0.1)
    assert int(doubled[4]) > int(measured[4])


def test_spikes_table_counts_what_the_compact_summary_keeps(tmp_path):
    """A plugin run's spikes table from its compact summary: per workload
    and side, the spikes and how many a window explains, by class."""
    run = load.load_run(make_run(str(tmp_path / "run"), repeats=2, trace="plugin", failed=False))
    path = tmp_path / "plugin.json"
    model.write(model.compact(summarize.build(run, n_resamples=20)), str(path))
    table = render_readme.spikes(model.read(str(path)))
    assert "| munmap | baseline | 2 | 4004 | 4 | 2 (50.0 %) | pte-lock-zap 2 |" in table
    assert len([line for line in table if line.startswith("| fork |")]) == 2
    # a module run has no per-wakeup records: no rows
    module = load.load_run(make_run(str(tmp_path / "module"), repeats=2, failed=False))
    assert not [line for line in render_readme.spikes(summarize.build(module, n_resamples=20))
                if line.startswith("| munmap")]
