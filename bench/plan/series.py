"""A series directory (a quilt series file and its patches) and the hash
of a variant's series, which its build record keeps (build.json's
series_sha256): the orchestrator rebuilds a tree and a kernel when it
changes, and a posting refuses patches other than those measured."""
import hashlib
import os


class MissingPatch(FileNotFoundError):
    """A series file names a patch that is not there."""


def patches(directory):
    """The patch files of a series directory, in order; blank lines and
    '#' comments of its series file are skipped, as quilt does."""
    out = []
    with open(os.path.join(directory, "series"), encoding="utf-8") as f:
        for line in f:
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            path = os.path.join(directory, name)
            if not os.path.isfile(path):
                raise MissingPatch("series %s/series names '%s', which does not exist"
                                   % (directory, name))
            out.append(path)
    return out


def sha256(source, package_version, directories):
    """One hash over a variant's source (a packaged tree with the Debian
    package version it was unpacked from, "" for a git source) and its
    series files and patches, in application order."""
    return _series_hash("source %s %s\n" % (source, package_version), directories)


def sha256_before_packages(source, directories):
    """The hash bench/run-matrix.sh recorded before kernel sources came
    from Debian's archive (a build record without source_package): the
    series files and patches alone, after a source line for any source
    but the first, Debian's 6.1."""
    return _series_hash("" if source == "tree:6.1" else "source %s\n" % source, directories)


def _series_hash(head, directories):
    h = hashlib.sha256(head.encode())
    for d in directories:
        with open(os.path.join(d, "series"), "rb") as f:
            h.update(f.read())
        for p in patches(d):
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()
