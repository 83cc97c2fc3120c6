"""`mmlat posting`: what a posting of the measured series needs, into
<run>/posting/: measurements.txt, the measurement section of its cover
letter (render_posting.py, from the run's summary.json), and the patched
side's own patches as mails: its series directories beyond the
baseline's, or, for two refs of a git tree (KSRC), the commits between
them (git format-patch).  Each patch gets the poster's Signed-off-by, a
From: where the committed patch has none (mmlat's own patches carry no
author), and Cc: from the tree's scripts/get_maintainer.pl for the files
it touches; the cover letter (0000-*.patch) gets the section before its
shortlog or diffstat, a series of one patch without one under its
"---".

The poster is git's user.name and user.email at posting time.  The
patches must be those the run measured: their hash (plan/series.py)
must equal the series_sha256 of the patched kernel's build record."""
import os
import re
import subprocess

from plan import series

from . import model, render_posting

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATCHES_DIR = os.environ.get("PATCHES_DIR") or os.path.join(ROOT, "patches")
BUILD_DIR = os.environ.get("BUILD_DIR") or os.path.join(ROOT, "build")
SECTION = "measurements.txt"
DIFFSTAT = re.compile(r"^ \S.*\|\s+(\d+|Bin)")
SHORTLOG = re.compile(r"^\S.* \(\d+\):$")


class PostingError(ValueError):
    pass


def identity():
    """"Name <email>" of git's user.name and user.email, here and now."""
    def config(key):
        proc = subprocess.run(["git", "config", key], cwd=ROOT, capture_output=True, text=True)
        return proc.stdout.strip()
    name, email = config("user.name"), config("user.email")
    if not name or not email:
        raise PostingError("git config user.name and user.email: the poster's identity "
                           "(From: and Signed-off-by:) comes from them; set both")
    return "%s <%s>" % (name, email)


def series_dir(name):
    """A build record's series: a directory of patches/, or a path."""
    return name if os.path.isabs(name) else os.path.join(PATCHES_DIR, name)


def variant_sha256(kernel):
    """The series hash the orchestrator recorded for a variant, taken now;
    for a Debian tree built before the sources came from Debian's archive
    (no source_package), as bench/run-matrix.sh hashed it then."""
    directories = [series_dir(n) for n in kernel.series]
    if kernel.source_package is None and (kernel.source or "").startswith("tree:"):
        return series.sha256_before_packages(kernel.source, directories)
    version = kernel.source_package.version if kernel.source_package else ""
    return series.sha256(kernel.source, version, directories)


def own_series(summary):
    """The patched side's series directories beyond the baseline's."""
    base = summary.kernels.get(summary.baseline)
    patched = summary.kernels.get(summary.patched)
    if patched is None or base is None:
        raise PostingError("the run has no build record (kernels/<variant>/build.json) of "
                           "%s or %s" % (summary.baseline, summary.patched))
    common = 0
    while (common < min(len(base.series), len(patched.series))
           and base.series[common] == patched.series[common]):
        common += 1
    return patched.series[common:]


def check_measured(summary):
    """Refuse patches other than those the run measured."""
    kernel = summary.kernels[summary.patched]
    try:
        now = variant_sha256(kernel)
    except FileNotFoundError as e:
        raise PostingError("a series of %s is gone: %s" % (summary.patched, e))
    if now != kernel.series_sha256:
        raise PostingError(
            "the series of %s changed since the run measured them (%s: series sha256 %s, "
            "now %s): post what was measured, or measure again"
            % (summary.patched, ", ".join(kernel.series), kernel.series_sha256, now))


def tree_dir(kernel):
    """The kernel tree whose scripts/get_maintainer.pl names the Cc:s."""
    if kernel.source and kernel.source.startswith("tree:"):
        return os.path.join(BUILD_DIR, "linux-source-" + kernel.source[len("tree:"):])
    return kernel.ksrc


def maintainers(tree, patch):
    """The maintainers and lists of the files a patch touches."""
    script = os.path.join(tree or "", "scripts", "get_maintainer.pl")
    if not tree or not os.path.isfile(script):
        raise PostingError("no %s: the Cc: lines come from the tree's get_maintainer.pl "
                           "(make kernels unpacks it)" % script)
    proc = subprocess.run(["perl", script, "--no-rolestats", "--no-git", "--no-git-fallback",
                           os.path.abspath(patch)], cwd=tree, capture_output=True, text=True)
    if proc.returncode:
        raise PostingError("get_maintainer.pl %s: %s" % (patch, proc.stderr.strip()))
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def _headers_end(lines):
    return lines.index("")


def with_headers(text, poster, cc):
    """A mail's headers with From: (where it has none) and Cc:."""
    lines = text.split("\n")
    end = _headers_end(lines)
    head, body = lines[:end], lines[end:]
    if not any(line.startswith("From: ") for line in head):
        head.insert(1, "From: " + poster)
    head += ["Cc: " + who for who in cc if "Cc: " + who not in head]
    return "\n".join(head + body)


def signed_off(text, poster):
    """The poster's Signed-off-by: among the trailers, before the "---"
    (git interpret-trailers places it), without a blank line before the
    divider."""
    proc = subprocess.run(["git", "interpret-trailers", "--if-exists", "addIfDifferent",
                           "--trailer", "Signed-off-by: " + poster],
                          input=text, capture_output=True, text=True, check=True)
    return re.sub(r"\n\n+---\n", "\n---\n", proc.stdout, count=1)


def with_section(text, section, cover):
    """The measurement section in a mail: a cover letter's before its
    shortlog or diffstat (else its signature); a patch's under its "---"."""
    lines = text.split("\n")
    body = _headers_end(lines)
    block = section.rstrip("\n").split("\n") + [""]
    if cover:
        at = next((i for i in range(body, len(lines))
                   if DIFFSTAT.match(lines[i]) or SHORTLOG.match(lines[i])
                   or lines[i] == "-- "), len(lines))
        return "\n".join(lines[:at] + block + lines[at:])
    at = lines.index("---", body) + 1
    return "\n".join(lines[:at] + block + lines[at:])


def write_series(directory, out_dir, section, poster, tree):
    """One series as mails in out_dir; returns their paths."""
    patches = series.patches(directory)
    covers = sorted(p for p in os.listdir(directory)
                    if re.match(r"0+-.*\.patch$", p) and os.path.join(directory, p) not in patches)
    cc_of = {p: maintainers(tree, p) for p in patches}
    everyone = list(dict.fromkeys(who for cc in cc_of.values() for who in cc))
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for cover in covers:
        with open(os.path.join(directory, cover), encoding="utf-8") as f:
            text = with_section(with_headers(f.read(), poster, everyone), section, cover=True)
        written.append(_write(out_dir, cover, text))
    for patch in patches:
        with open(patch, encoding="utf-8") as f:
            text = signed_off(with_headers(f.read(), poster, cc_of[patch]), poster)
        if not covers and len(patches) == 1:
            text = with_section(text, section, cover=False)
        written.append(_write(out_dir, os.path.basename(patch), text))
    return written


def _write(out_dir, name, text):
    path = os.path.join(out_dir, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def write_commits(base, patched, out_dir, section, poster):
    """The commits between two refs of a git tree (KSRC) as mails: git
    format-patch with a cover letter, then as write_series does."""
    os.makedirs(out_dir, exist_ok=True)
    proc = subprocess.run(["git", "-C", patched.ksrc, "format-patch", "--cover-letter",
                           "-o", os.path.abspath(out_dir),
                           "%s..%s" % (base.commit, patched.commit)],
                          capture_output=True, text=True)
    if proc.returncode:
        raise PostingError("git format-patch in %s: %s" % (patched.ksrc, proc.stderr.strip()))
    paths = [line.strip() for line in proc.stdout.splitlines() if line.strip()]
    cover, patches = paths[0], paths[1:]
    cc_of = {p: maintainers(patched.ksrc, p) for p in patches}
    everyone = list(dict.fromkeys(who for cc in cc_of.values() for who in cc))
    with open(cover, encoding="utf-8") as f:
        text = with_section(with_headers(f.read(), poster, everyone), section, cover=True)
    _write(out_dir, os.path.basename(cover), text)
    for patch in patches:
        with open(patch, encoding="utf-8") as f:
            text = signed_off(with_headers(f.read(), poster, cc_of[patch]), poster)
        _write(out_dir, os.path.basename(patch), text)
    return paths


def write_posting(run_dir, patches=True):
    """measurements.txt and, with patches, the measured series as mails,
    into <run>/posting/; returns the paths written (the section alone when
    the patched side adds no series and is no commit of a git tree: an
    A/A run, two kernels as they ship)."""
    report_dir = os.path.join(run_dir, "report")
    path = os.path.join(report_dir, "summary.json")
    if not os.path.isfile(path):
        raise PostingError("no %s: make report RUN=%s first" % (path, run_dir))
    summary = model.read(path)
    section = render_posting.render(summary, os.path.relpath(report_dir))
    out_dir = os.path.join(run_dir, "posting")
    os.makedirs(out_dir, exist_ok=True)
    written = [_write(out_dir, SECTION, section)]
    if not patches:
        return written
    series = own_series(summary)
    base, patched = summary.kernels[summary.baseline], summary.kernels[summary.patched]
    if not series and patched.commit and base.commit and patched.ksrc:
        return written + write_commits(base, patched, os.path.join(out_dir, summary.patched),
                                       section, identity())
    if not series:
        return written
    check_measured(summary)
    poster = identity()
    tree = tree_dir(patched)
    for name in series:
        written += write_series(series_dir(name), os.path.join(out_dir, os.path.basename(name)),
                                section, poster, tree)
    return written
