"""report.md, for the git forges: report.txt in a code block, then every
plot of the summary embedded by its file name (beside report.md)."""
import os

from . import render_text


def render(summary):
    out = ["# mmlat report: %s vs %s" % (summary.baseline, summary.patched), "",
           "```", render_text.render(summary).rstrip(), "```", ""]
    for png in summary.plots:
        out.append("![%s](%s)" % (os.path.splitext(png)[0], png))
        out.append("")
    return "\n".join(out)
