"""report.html: one self-contained page to open in a browser, from the
summary model and the PNGs its plots wrote: the headline table, the
method, every plot inline (base64 PNG), every boot with its status and the
cause of a failed one, then report.txt in full."""
import base64
import html
import os

from . import render_text
from . import formatting as fmt

STYLE = """
body { font-family: sans-serif; max-width: 70em; margin: 1em auto; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #bbb; padding: 0.15em 0.5em; text-align: right; }
th.left, td.left { text-align: left; }
tr.workload td { background: #eee; font-weight: bold; text-align: left; }
td.worse { background: #f4c7c3; } td.better { background: #c8e6c9; }
td.same { background: #dde7f0; } td.inconclusive { background: #fff3c4; }
tr.failed td { background: #f4c7c3; }
img { max-width: 100%; }
pre { font-size: 85%; background: #f8f8f8; padding: 0.5em; overflow-x: auto; }
"""


def _cells(values, tag="td", cls=None):
    attr = ' class="%s"' % cls if cls else ""
    return "".join("<%s%s>%s</%s>" % (tag, attr, html.escape(str(v)), tag) for v in values)


def headline_table(summary):
    """The headline of report.txt as a table: a row per primary endpoint,
    grouped by workload, with its margin, the verdict coloured, the
    decision interval, what would settle an inconclusive one and the
    boot bootstrap interval of the change in the unit."""
    labels = summary.short_labels()
    heads = [labels.baseline, labels.patched, "delta", "%", "margin", "verdict",
             "decision interval %", "boots a side to settle",
             "%d%% interval (bootstrap)" % round(summary.gate.conf * 100)]
    rows = ["<tr>%s</tr>" % (_cells(["endpoint"], "th", "left") + _cells(heads, "th"))]
    for w in summary.workloads:
        rows.append('<tr class="workload"><td colspan="%d">%s (%s)</td></tr>'
                    % (len(heads) + 1, html.escape(w.name), fmt.boots_text(w)))
        for c in w.primary():
            base, patched, delta, pct, interval = fmt.comparison_cells(c)
            verdict = '<td class="%s">%s</td>' % (c.verdict, html.escape(c.verdict))
            rows.append("<tr>%s%s%s%s</tr>" % (
                _cells([fmt.headline_label(c.spec)], cls="left"),
                _cells([base, patched, fmt.delta_text(c.delta, c.spec), pct,
                        fmt.margin_text(c.margin)]),
                verdict, _cells([fmt.decision_interval_text(c), fmt.settle_text(c),
                                 interval])))
    return "<table>%s</table>" % "\n".join(rows)


def boots_table(summary):
    """Every boot of the run with its status; a failed one with its cause."""
    rows = ["<tr>%s</tr>" % _cells(["variant", "workload", "boot", "repeat", "status",
                                    "cause"], "th", "left")]
    for b in sorted(summary.boots, key=lambda b: (b.status == "ok", b.variant, b.workload,
                                                  b.boot, b.repeat)):
        rows.append('<tr%s>%s</tr>' % (' class="failed"' if b.status != "ok" else "",
                                       _cells([b.variant, b.workload, b.boot,
                                               "r%d" % b.repeat, b.status, b.cause or ""],
                                              cls="left")))
    return "<table>%s</table>" % "\n".join(rows)


def _png(out_dir, name):
    with open(os.path.join(out_dir, name), "rb") as f:
        return base64.b64encode(f.read()).decode("ascii")


def render(summary, out_dir):
    """The page, its plots read from out_dir (summary.plots)."""
    title = "mmlat report: %s vs %s" % (summary.baseline, summary.patched)
    parts = ["<!DOCTYPE html>", '<html><head><meta charset="utf-8">',
             "<title>%s</title><style>%s</style></head><body>" % (html.escape(title), STYLE),
             "<h1>%s</h1>" % html.escape(title),
             "<h2>Primary endpoints</h2>", headline_table(summary)]
    parts += ["<p>%s</p>" % html.escape(text) for text in (
        fmt.demoted_sentence(summary),
        " ".join([fmt.method_text(summary), fmt.verdict_rule_text(summary)])) if text]
    parts.append("<h2>Plots</h2>")
    for name in summary.plots:
        parts.append('<figure><img alt="%s" src="data:image/png;base64,%s">'
                     "<figcaption>%s</figcaption></figure>"
                     % (html.escape(name), _png(out_dir, name), html.escape(name)))
    parts.append("<h2>Boots (%d, %d failed)</h2>" % (len(summary.boots),
                                                     len(summary.failed_boots())))
    parts.append(boots_table(summary))
    parts.append("<h2>report.txt</h2><pre>%s</pre>" % html.escape(render_text.render(summary)))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
