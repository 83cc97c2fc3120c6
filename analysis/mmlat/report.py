"""`mmlat report`: a run's summary built once (summarize.py), its plots,
and the files that render it, into <run>/report/: summary.json (the
model, model.py), report.txt, report.md and report.html."""
import os

from . import model, render_html, render_markdown, render_text, summarize


def write_report(run, out_dir, baseline=None, patched=None, plots=True, **build_args):
    """Every report file of a loaded run into out_dir; returns the
    summary.  build_args: summarize.build's n_resamples, conf and seed."""
    os.makedirs(out_dir, exist_ok=True)
    summary = summarize.build(run, baseline, patched, **build_args)
    if plots:
        # imported here: matplotlib costs a second, and `compare` needs none
        from . import plot
        summary.plots = plot.all_plots(summary, out_dir)
    model.write(summary, os.path.join(out_dir, "summary.json"))
    for name, text in (("report.txt", render_text.render(summary)),
                       ("report.md", render_markdown.render(summary)),
                       ("report.html", render_html.render(summary, out_dir))):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return summary
