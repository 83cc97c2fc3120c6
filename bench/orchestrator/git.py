"""Reads of KSRC, a developer's git tree: only its objects (rev-parse,
show, rev-list, log); nothing is checked out or written there."""
import re
import subprocess


def _git(ksrc, *args):
    """git's output, or None when it fails."""
    proc = subprocess.run(["git", "-C", ksrc, *args], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def is_tree(ksrc):
    return _git(ksrc, "rev-parse", "--git-dir") is not None


def commit(ksrc, ref):
    """The commit ref names, or None."""
    return _git(ksrc, "rev-parse", "--verify", "-q", ref + "^{commit}")


def version(ksrc, commit_id):
    """VERSION.PATCHLEVEL of the commit's top-level Makefile; "" when it
    has none; None when there is no Makefile."""
    makefile = _git(ksrc, "show", commit_id + ":Makefile")
    if makefile is None:
        return None
    found = dict(re.findall(r"^(VERSION|PATCHLEVEL)\s*=\s*(\S+)", makefile, re.M))
    return "%s.%s" % (found["VERSION"], found["PATCHLEVEL"]) if len(found) == 2 else ""


def is_ancestor(ksrc, older, newer):
    return subprocess.run(["git", "-C", ksrc, "merge-base", "--is-ancestor", older, newer],
                          capture_output=True).returncode == 0


def first_parents(ksrc, older, newer):
    """The commits of older..newer, first parents only, oldest first."""
    out = _git(ksrc, "rev-list", "--reverse", "--first-parent", "%s..%s" % (older, newer))
    return out.split() if out else []


def oneline(ksrc, commit_id):
    """"<abbreviated hash> <subject>"."""
    return _git(ksrc, "log", "-1", "--format=%h %s", commit_id)


def describe(ksrc, commit_id):
    return _git(ksrc, "describe", "--tags", "--always", commit_id)
