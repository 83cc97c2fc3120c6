"""`mmlat posting`: the measurement section of a cover letter from a
run's summary (72 columns, plain text, the run's numbers), and the
measured series as mails with the poster's identity and the tree's
maintainers."""
import dataclasses
import os
import re

import pytest

from mmlat import formatting, load, model, posting, render_posting, summarize
from plan import codec
from mmlat.__main__ import main

from fakerun import make_run, update_meta, write_kernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = [{"variant": "patched.1", "previous": "baseline", "series": "mine",
          "patch": "0001-mm-first.patch", "index": 1},
         {"variant": "patched", "previous": "patched.1", "series": "mine",
          "patch": "0002-mm-second.patch", "index": 2}]
POSTER = "Ada Porter <ada@example.org>"


@pytest.fixture(scope="module")
def stepped(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("p") / "run")
    make_run(root, shift=25, repeats=4, failed=False,
             variants=("baseline", "patched.1", "patched"), workloads=("munmap", "truncate"))
    update_meta(root, steps=STEPS, accel="tcg-icount", run_id="run",
                knobs={"VARIANTS": "baseline patched.1 patched", "WORKLOADS": "munmap truncate",
                       "SWEEP": "", "REPEAT": "4", "ACCEL": "tcg-icount", "RUN_ID": "run",
                       "FLAVOR": "bench", "ICOUNT_SHIFT": "3", "TRACE": "windows"})
    return summarize.build(load.load_run(root), n_resamples=50)


@pytest.fixture(scope="module")
def section(stepped):
    return render_posting.render(stepped, "results/run/report")


def test_section_is_plain_text_within_72_columns(section):
    assert all(len(line) <= 72 for line in section.splitlines())
    assert section.isascii() and "\t" not in section


def test_section_says_what_a_guest_microsecond_is(section):
    flat = " ".join(section.split())
    assert ("Accelerator: tcg-icount. Guest time is the instruction count (icount shift 3: "
            "8 ns an instruction), so a guest microsecond is 125 instructions, not a hardware "
            "microsecond") in flat


def test_command_from_the_knobs_and_the_recorded_commit(stepped, section):
    words = render_posting.command_words(stepped)
    assert words == ["make", "bench", "BASELINE=baseline", "PATCHED=patched",
                     'VARIANTS="baseline patched.1 patched"', 'WORKLOADS="munmap truncate"',
                     "REPEAT=4", "ACCEL=tcg-icount", "TRACE=windows"]
    assert "knobs as one command (mmlat commit not recorded)" in " ".join(section.split())
    stated = "\n".join(render_posting.how_section(dataclasses.replace(
        stepped, run=dataclasses.replace(stepped.run, mmlat_commit="abc123"))))
    assert "(mmlat abc123):\n  make bench BASELINE=baseline" in stated


def test_a_long_command_breaks_inside_its_quotes():
    lines = render_posting.command_lines(
        ["make", "bench", 'SWEEP="imap:s=1,n=16,64,256,1024 reclaim:n=4,16,64,256 '
         'reclaim:k=1,4,16 anonchain:D=1,4,16"'])
    assert all(len(line) <= 72 for line in lines)
    assert lines[-2].endswith(" \\") and lines[-1].startswith("      ")
    joined = "".join(line[:-1] if line.endswith("\\") else line for line in lines)
    assert re.sub(r" +", " ", joined).strip() == (
        'make bench SWEEP="imap:s=1,n=16,64,256,1024 reclaim:n=4,16,64,256 '
        'reclaim:k=1,4,16 anonchain:D=1,4,16"')


def test_headline_rows_are_the_models(stepped, section):
    lines = section.splitlines()
    for w in stepped.workloads:
        start = lines.index("%s (%s)" % (w.name, formatting.boots_text(w)))
        for line, c in zip(lines[start + 1:], w.primary()):
            cells = line.split()
            name = formatting.headline_name(c.spec).split()
            assert cells[:len(name)] == name
            assert cells[len(name):len(name) + 2] == list(formatting.sides_text(c))
            assert cells[-1] == c.verdict and formatting.margin_text(c.margin) in cells
    assert "%d primary endpoints: " % stepped.gate.family in section


def test_per_patch_table_only_with_steps(stepped, section):
    assert "Each patch against the one before it" in section
    assert "  1 0001-mm-first" in section and "  2 0002-mm-second" in section
    plain = dataclasses.replace(stepped, steps=[])
    assert "Each patch" not in render_posting.render(plain)


def test_critical_sections_by_class_and_call_site(stepped, section):
    zap = stepped.workload("munmap").windows["preemptoff"].classes["pte-lock-zap"]
    row = [line for line in section.splitlines() if line.startswith("  pte-lock-zap")][0]
    assert row.split() == [
        "pte-lock-zap", str(zap.baseline.count), "%.1f" % zap.baseline.max,
        str(zap.patched.count), "%.1f" % zap.patched.max]
    assert "    zap_pte_range <- zap_pmd_range" in section


def test_latency_tail_from_the_pooled_histogram(stepped, section):
    w = stepped.workload("munmap")
    rows = render_posting.tail_rows(stepped, w)
    # 4 clean boots of 4000 samples: decades to 1e-4, then the max
    assert [r[0] for r in rows] == ["1e-1", "1e-2", "1e-3", "1e-4", "max"]
    assert rows[-1][1:] == (w.latency.baseline.max, w.latency.patched.max)
    assert rows[1][1] == w.latency.baseline.p99
    assert all(a <= b for a, b in zip([r[1] for r in rows], [r[1] for r in rows[1:]]))


def test_plots_to_attach(stepped):
    plain = render_posting.render(stepped)
    assert "None: the report was written without plots" in plain
    drawn = dataclasses.replace(stepped, plots=["summary.png"])
    assert "  results/run/report/summary.png" in render_posting.render(drawn,
                                                                       "results/run/report")


def test_compact_summaries_are_refused(stepped):
    with pytest.raises(model.SummaryFormatError, match="a posting needs the full"):
        render_posting.render(model.compact(stepped))


# ------------------------------------------------------------- the mails

# a mail's signature: "-- " and git's version
SIGNATURE = "-- \n2.39.5\n"
PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
{author}Date: Fri, 4 Dec 2026 21:00:01 +0000
Subject: [RFC PATCH {n}/2] mm: {title}

Why this change.

{trailers}---
 mm/memory.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/mm/memory.c b/mm/memory.c
--- a/mm/memory.c
+++ b/mm/memory.c
@@ -1,1 +1,2 @@
 a
+b
""" + SIGNATURE
COVER = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
Date: Fri, 4 Dec 2026 21:00:00 +0000
Subject: [RFC PATCH 0/2] mm: two changes

What the series does.

 mm/memory.c | 2 ++
 1 file changed, 2 insertions(+)

""" + SIGNATURE
GET_MAINTAINER = """#!/usr/bin/perl
# a stand-in: the maintainers of the files the patch touches
print "Andrew Morton <akpm\\@linux-foundation.org>\\nlinux-mm\\@kvack.org\\n";
"""


def posting_run(tmp_path, series_files, package="6.1.1-1"):
    """A fake run whose patched side adds the series "mine" (patches/ in
    tmp_path) to the baseline's, its build records hashing it (package
    None: built before the sources came from Debian's archive); a fake
    tree with get_maintainer.pl; the report written."""
    root = tmp_path / "run"
    make_run(str(root), shift=25, repeats=2, failed=False)
    series = tmp_path / "patches" / "mine"
    series.mkdir(parents=True)
    for name, text in series_files.items():
        (series / name).write_text(text)
    tree = tmp_path / "build" / "linux-source-6.1"
    (tree / "scripts").mkdir(parents=True)
    (tree / "scripts" / "get_maintainer.pl").write_text(GET_MAINTAINER)
    for variant, names in (("baseline", []), ("patched", ["mine"])):
        kernel = model.Kernel(series=names, source="tree:6.1", source_package=package and
                              model.SourcePackage("linux-source-6.1", package))
        write_kernel(str(root), variant, series=names, series_sha256=posting.variant_sha256(kernel),
                     source_package=package and codec.to_json(kernel.source_package))
    assert main(["report", str(root), "--no-plots", "--resamples", "20"]) == 0
    return root


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(posting, "PATCHES_DIR", str(tmp_path / "patches"))
    monkeypatch.setattr(posting, "BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setattr(posting, "identity", lambda: POSTER)
    return tmp_path


def two_patches():
    return {"series": "0001-mm-first.patch\n# a comment\n0002-mm-second.patch\n",
            "0000-cover-letter.patch": COVER,
            "0001-mm-first.patch": PATCH.format(
                author="From: Peter Zijlstra <a.p.zijlstra@chello.nl>\n", n=1, title="first",
                trailers="Signed-off-by: Peter Zijlstra <a.p.zijlstra@chello.nl>\n[port note]\n"),
            "0002-mm-second.patch": PATCH.format(author="", n=2, title="second",
                                                 trailers="")}


def test_the_series_as_mails_with_the_posters_identity(in_tmp, capsys):
    root = posting_run(in_tmp, two_patches())
    assert main(["posting", str(root)]) == 0
    out = root / "posting" / "mine"
    assert sorted(os.listdir(out)) == ["0000-cover-letter.patch", "0001-mm-first.patch",
                                       "0002-mm-second.patch"]
    first = (out / "0001-mm-first.patch").read_text()
    # the author stays; the poster signs off after the port note
    assert first.count("From: ") == 1 and "From: Peter Zijlstra" in first
    assert ("Signed-off-by: Peter Zijlstra <a.p.zijlstra@chello.nl>\n[port note]\n"
            "Signed-off-by: %s\n---\n" % POSTER) in first
    assert "Cc: Andrew Morton <akpm@linux-foundation.org>\nCc: linux-mm@kvack.org\n\n" in first
    second = (out / "0002-mm-second.patch").read_text()
    # mmlat's own patch has no author: the poster is
    assert second.splitlines()[1] == "From: " + POSTER
    assert "Why this change.\n\nSigned-off-by: %s\n---\n" % POSTER in second
    cover = (out / "0000-cover-letter.patch").read_text()
    section = (root / "posting" / "measurements.txt").read_text()
    assert "What the series does.\n\n" + section + "\n mm/memory.c | 2 ++" in cover
    assert "Signed-off-by" not in cover and "From: " + POSTER in cover
    assert section in capsys.readouterr().out


def test_one_patch_carries_the_section_under_its_divider(in_tmp):
    root = posting_run(in_tmp, {"series": "0001-mm-only.patch\n",
                                "0001-mm-only.patch": PATCH.format(author="", n=1,
                                                                   title="only", trailers="")})
    assert main(["posting", str(root)]) == 0
    mail = (root / "posting" / "mine" / "0001-mm-only.patch").read_text()
    section = (root / "posting" / "measurements.txt").read_text()
    assert "Signed-off-by: %s\n---\n%s\n mm/memory.c | 1 +" % (POSTER, section) in mail


def test_patches_changed_since_the_run_are_refused(in_tmp, capsys):
    root = posting_run(in_tmp, two_patches())
    patch = in_tmp / "patches" / "mine" / "0002-mm-second.patch"
    patch.write_text(patch.read_text().replace("Why this change.", "Why, now."))
    assert main(["posting", str(root)]) == 2
    assert "the series of patched changed since the run measured them" in capsys.readouterr().err
    assert not (root / "posting" / "mine").exists()


def test_a_run_from_before_packaged_sources_posts_what_it_measured(in_tmp, capsys):
    root = posting_run(in_tmp, two_patches(), package=None)
    assert main(["posting", str(root)]) == 0
    assert (root / "posting" / "mine" / "0002-mm-second.patch").is_file()
    patch = in_tmp / "patches" / "mine" / "0001-mm-first.patch"
    patch.write_text(patch.read_text().replace("Why this change.", "Why, now."))
    assert main(["posting", str(root)]) == 2
    assert "the series of patched changed since the run measured them" in capsys.readouterr().err


def test_the_hash_before_packaged_sources_is_the_one_run_matrix_recorded(tmp_path):
    """bench/run-matrix.sh's hash of a 6.1 tree, before the sources came
    from Debian's archive: { cat series; cat each patch; } | sha256sum."""
    for name, text in (("series", "a.patch\n\n# comment\nb.patch\n"), ("a.patch", "A\n"),
                       ("b.patch", "B\n")):
        (tmp_path / name).write_text(text)
    kernel = model.Kernel(series=[str(tmp_path)], source="tree:6.1")
    assert posting.variant_sha256(kernel) == (
        "a990d2c89a26cdf81faafe5e39119947c5c38971427084ce5b05ac9f687acc51")


def test_the_hash_is_the_one_bench_records(tmp_path):
    """posting.variant_sha256 against the orchestrator's series_sha256, and
    both against the value bench/variants.sh recorded before them."""
    from orchestrator import variants
    from plan.model import Variant
    for name, text in (("series", "a.patch\n\n# comment\nb.patch\n"), ("a.patch", "A\n"),
                       ("b.patch", "B\n")):
        (tmp_path / name).write_text(text)
    src = tmp_path / "src"
    src.mkdir()
    (src / ".mmlat-package").write_text("6.1.1-1\n")
    variant = Variant("v", "v", "tree:6.1", "6.1", "", (str(tmp_path),), 0)
    bench = variants.series_sha256(variant, str(src))
    assert bench == "14984e4e0f9118d9fdb581b6cb2b94d0d81d0660df53f45b10e682abf928057a"
    kernel = model.Kernel(series=[str(tmp_path)], source="tree:6.1",
                          source_package=model.SourcePackage("linux-source-6.1", "6.1.1-1"))
    assert posting.variant_sha256(kernel) == bench


def test_a_run_that_adds_no_series_posts_the_section_alone(tmp_path, capsys):
    root = make_run(str(tmp_path / "aa"), repeats=2, failed=False)
    for variant in ("baseline", "patched"):
        os.remove(os.path.join(root, "kernels", variant, "build.json"))
    assert main(["report", root, "--no-plots", "--resamples", "20"]) == 0
    assert main(["posting", root]) == 2
    assert "no build record" in capsys.readouterr().err
    assert main(["posting", root, "--section-only"]) == 0
    assert os.listdir(os.path.join(root, "posting")) == ["measurements.txt"]


def test_no_report_no_posting(tmp_path, capsys):
    root = make_run(str(tmp_path / "bare"), repeats=1, failed=False)
    assert main(["posting", root]) == 2
    assert "make report RUN=%s first" % root in capsys.readouterr().err
