"""python3 -m mmlat {report,compare,summary,calibrate,look,posting} RUN_DIR,
python3 -m mmlat summarize SUMMARY_JSON OUT, python3 -m mmlat readme [--write] FILE,
python3 -m mmlat drift KERNEL_DIR..."""
import argparse
import json
import os
import sys

from . import (calibrate, drift, endpoints, load, model, posting, readme, report, run_table, stats,
               summarize)
from . import formatting as fmt


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mmlat")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("readme")
    p.add_argument("file", nargs="?", default="README.md")
    p.add_argument("--write", action="store_true")
    p = sub.add_parser("summarize")
    p.add_argument("summary_json")
    p.add_argument("out")
    for name in ("report", "compare", "summary", "calibrate", "look", "posting"):
        p = sub.add_parser(name)
        p.add_argument("run_dir")
        if name not in ("summary", "calibrate", "posting"):
            p.add_argument("--baseline")
            p.add_argument("--patched")
        if name in ("report", "compare"):
            p.add_argument("--resamples", type=int, default=2000)
            p.add_argument("--conf", type=float, default=0.95)
            p.add_argument("--seed", type=int, default=1)
        if name == "report":
            p.add_argument("--no-plots", action="store_true")
        if name == "posting":
            # the section alone, without the series as mails
            p.add_argument("--section-only", action="store_true")
    p = sub.add_parser("drift", help="check built kernels' System.map against guest/classes.txt")
    p.add_argument("kernel_dirs", nargs="+", metavar="kernel_dir",
                   help="build/kernels/<variant> or results/<run>/kernels/<variant>")
    a = ap.parse_args(argv)
    if a.cmd == "drift":
        return drift.main(a.kernel_dirs)
    if a.cmd == "readme":
        return readme_tables(a)
    if a.cmd == "summarize":
        return compact_summary(a)
    if not os.path.isdir(a.run_dir):
        print("mmlat: no such run directory: %s" % a.run_dir, file=sys.stderr)
        return 2
    if a.cmd == "calibrate":
        return calibrate.check_run(a.run_dir)
    if a.cmd == "posting":
        return write_posting(a)
    try:
        run = load.load_run(a.run_dir)
    except load.UnreadableRun as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    if not run["cells"]:
        print("mmlat: no boots under %s/cells" % a.run_dir, file=sys.stderr)
        return 2
    if a.cmd == "summary":
        t = run_table.summary_table(run)
        with open(os.path.join(a.run_dir, "summary.txt"), "w") as f:
            f.write(t)
        sys.stdout.write(t)
        return 0
    a.baseline = load.variant_named(run, a.baseline)
    a.patched = load.variant_named(run, a.patched)
    if a.cmd == "look":
        return look(run, a)
    kw = dict(n_resamples=a.resamples, conf=a.conf, seed=a.seed)
    try:
        if a.cmd == "report":
            out = os.path.join(a.run_dir, "report")
            summary = report.write_report(run, out, a.baseline, a.patched,
                                          plots=not a.no_plots, **kw)
            with open(os.path.join(out, "report.txt"), encoding="utf-8") as f:
                sys.stdout.write(f.read())
            print("plots: %s" % ", ".join(os.path.join(out, p) for p in summary.plots))
            return 0
        summary = summarize.build(run, a.baseline, a.patched, **kw)
    except stats.IncompatibleCells as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 3
    bad = summary.worse()
    for c in bad:
        pct = fmt.pct_text(c)
        print("WORSE: %s %s %s %s%s, margin %s, decision interval %s %%" % (
            c.workload, c.endpoint, fmt.delta_text(c.delta, c.spec), c.spec.unit,
            "" if pct == "-" else " (%s %%)" % pct, fmt.margin_text(c.margin),
            fmt.decision_interval_text(c)))
    if summary.failed_boots():
        print("note: %d failed boots" % len(summary.failed_boots()))
    verdicts = [c.verdict for c in summary.primary()]
    counts = ", ".join("%d %s" % (verdicts.count(v), v) for v in (
        endpoints.WORSE, endpoints.BETTER, endpoints.SAME, endpoints.INCONCLUSIVE,
        endpoints.NO_TEST) if verdicts.count(v))
    gate = summary.gate
    print("compare: %s (%s; %s against margins, %s over %d primary endpoints, alpha %g)" % (
        "FAIL" if bad else "ok", counts or "no primary endpoint", gate.test,
        gate.correction, gate.family, gate.alpha))
    return 1 if bad else 0


def readme_tables(a):
    """`mmlat readme [--write] FILE`: its marked tables against their
    summaries; exit 1 naming each stale one, or with --write renew them."""
    try:
        if a.write:
            print("%s: %d tables renewed" % (a.file, readme.update(a.file)))
            return 0
        stale = readme.check(a.file)
    except (readme.TableError, model.SummaryFormatError, OSError) as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    for spec, _, _ in stale:
        print("stale: %s (mmlat readme --write %s renders it)" % (spec, a.file))
    return 1 if stale else 0


def compact_summary(a):
    """`mmlat summarize SUMMARY_JSON OUT`: a report's summary.json made
    compact (model.compact), for results/summaries/."""
    try:
        model.write(model.compact(model.read(a.summary_json)), a.out)
    except (model.SummaryFormatError, OSError) as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    print("%s: %d bytes" % (a.out, os.path.getsize(a.out)))
    return 0


def write_posting(a):
    """`mmlat posting`: prints the section and the files written."""
    try:
        written = posting.write_posting(a.run_dir, patches=not a.section_only)
    except (posting.PostingError, model.SummaryFormatError) as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    with open(written[0], encoding="utf-8") as f:
        sys.stdout.write(f.read())
    print("posting: %s" % ", ".join(written))
    return 0


def look(run, a):
    """REPEAT=auto's rule after a round, the last meta.json records (the
    orchestrator records a round before its boots): prints the progress
    line to stderr and sequential.Round.as_dict() as JSON to stdout; exits
    2 on looks that are none (a round that adds no repeats)."""
    try:
        comparisons = summarize.primary_comparisons(
            run, *summarize.compared_variants(run, a.baseline, a.patched))
        rnd = endpoints.decide(comparisons, endpoints.looks_of(run["record"], comparisons),
                               load.figure_boot(run))
    except ValueError as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    print(rnd.progress(), file=sys.stderr)
    print(json.dumps(rnd.as_dict(), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
