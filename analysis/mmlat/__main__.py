"""python3 -m mmlat {report,compare,summary,calibrate} RUN_DIR
python3 -m mmlat drift KERNEL_DIR..."""
import argparse
import os
import sys

from . import calibrate, drift, load, report, stats


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mmlat")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("report", "compare", "summary", "calibrate"):
        p = sub.add_parser(name)
        p.add_argument("run_dir")
        if name not in ("summary", "calibrate"):
            p.add_argument("--baseline")
            p.add_argument("--patched")
            p.add_argument("--resamples", type=int, default=2000)
            p.add_argument("--conf", type=float, default=0.95)
            p.add_argument("--seed", type=int, default=1)
        if name == "report":
            p.add_argument("--no-plots", action="store_true")
    p = sub.add_parser("drift", help="check built kernels' System.map against guest/classes.txt")
    p.add_argument("kernel_dirs", nargs="+", metavar="kernel_dir",
                   help="build/kernels/<variant> or results/<run>/kernels/<variant>")
    a = ap.parse_args(argv)
    if a.cmd == "drift":
        return drift.main(a.kernel_dirs)
    if not os.path.isdir(a.run_dir):
        print("mmlat: no such run directory: %s" % a.run_dir, file=sys.stderr)
        return 2
    if a.cmd == "calibrate":
        return calibrate.check_run(a.run_dir)
    try:
        run = load.load_run(a.run_dir)
    except load.UnreadableRun as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    if not run["cells"]:
        print("mmlat: no boots under %s/cells" % a.run_dir, file=sys.stderr)
        return 2
    if a.cmd == "summary":
        t = report.summary_table(run)
        with open(os.path.join(a.run_dir, "summary.txt"), "w") as f:
            f.write(t)
        sys.stdout.write(t)
        return 0
    a.baseline = load.variant_named(run, a.baseline)
    a.patched = load.variant_named(run, a.patched)
    kw = dict(n_resamples=a.resamples, conf=a.conf, seed=a.seed)
    try:
        if a.cmd == "report":
            out = os.path.join(a.run_dir, "report")
            s, txt = report.write_report(run, out, a.baseline, a.patched,
                                         plots=not a.no_plots, **kw)
            sys.stdout.write(txt)
            print("plots: %s" % ", ".join(os.path.join(out, p) for p in s["plots"]))
            return 0
        s = report.build(run, a.baseline, a.patched, **kw)
    except stats.IncompatibleCells as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 3
    bad = report.compare_worse(s)
    for c in bad:
        pct = report.pct_text(c)
        print("WORSE: %s %s %s %s%s, interval %s, Holm p %.2g" % (
            c.workload, c.endpoint, report.delta_text(c.delta, c.spec), c.spec.unit,
            "" if pct == "-" else " (%s %%)" % pct, report.interval_text(c), c.p_holm))
    if report.failed_boots(s):
        print("note: %d failed boots" % len(report.failed_boots(s)))
    print("compare: %s (%s, %s over %d primary endpoints, alpha %g)" % (
        "FAIL" if bad else "ok", s["gate"]["test"], s["gate"]["correction"],
        s["gate"]["family"], s["gate"]["alpha"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
