"""The results block a guest prints on its serial console
(guest/console-results.sh): found among the console's lines, checked
against the length and sha256 the guest sent with it, and unpacked."""
import base64
import binascii
import bz2
import hashlib
import io
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

# A marker may follow other output on its line (a kernel message without
# its newline), so markers are searched for, not matched at the start.
BEGIN = re.compile(r"mmlat-results: begin v1 tar\.bz2\.base64 bytes=(\d+) sha256=([0-9a-f]{64})\s*$")
END = re.compile(r"mmlat-results: end bytes=(\d+) sha256=([0-9a-f]{64})\s*$")
DATA = re.compile(r"[A-Za-z0-9+/]+={0,2}")


class ResultsBlockError(ValueError):
    """No usable results block; the message is the boot's failure cause."""


@dataclass(frozen=True)
class ResultsBlock:
    archive: bytes          # the bzip2'd tar, checked
    foreign_lines: int      # lines inside the block that were not its own


def _shorten(line, limit=120):
    return line if len(line) <= limit else line[:limit] + "..."


def find_block(lines):
    """The last results block among LINES (the console, one string a line,
    line ends stripped or not), checked; raises ResultsBlockError naming
    what is missing or wrong."""
    begin = None        # (bytes, sha256) of the block being read
    data, foreign = [], []
    found = None
    for line in lines:
        line = line.rstrip("\r\n")
        m = BEGIN.search(line)
        if m:
            begin = (int(m.group(1)), m.group(2))
            data, foreign, found = [], [], None
            continue
        if begin is None or found is not None:
            continue
        m = END.search(line)
        if m:
            if (int(m.group(1)), m.group(2)) != begin:
                raise ResultsBlockError(
                    "results block corrupt: its end line (bytes=%s sha256=%s) does not match its begin line "
                    "(bytes=%d sha256=%s)" % (m.group(1), m.group(2)[:12], begin[0], begin[1][:12]))
            found = begin
            continue
        if DATA.fullmatch(line):
            data.append(line)
        else:
            foreign.append(line)
    if begin is None:
        raise ResultsBlockError("no results block on the console (no 'mmlat-results: begin' line)")
    if found is None:
        raise ResultsBlockError(
            "results block truncated: no end line after its begin line and %d lines of data "
            "(the guest stopped printing, or the log was cut)" % len(data))
    size, digest = found
    note = ""
    if foreign:
        note = "; %d console lines inside it were not base64, the first: '%s'" % (
            len(foreign), _shorten(foreign[0]))
    try:
        archive = base64.b64decode("".join(data), validate=True)
    except binascii.Error as exc:
        raise ResultsBlockError("results block corrupt: not base64 (%s)%s" % (exc, note)) from None
    if len(archive) != size:
        raise ResultsBlockError("results block corrupt: %d bytes decoded, the guest sent %d%s"
                                % (len(archive), size, note))
    got = hashlib.sha256(archive).hexdigest()
    if got != digest:
        raise ResultsBlockError("results block corrupt: sha256 %s decoded, the guest sent %s%s"
                                % (got[:12], digest[:12], note))
    return ResultsBlock(archive, len(foreign))


def unpack(archive, dest):
    """Unpack ARCHIVE (a checked block's bzip2'd tar) into DEST, which must
    not exist: regular files and directories only, all inside DEST. What
    the guest packed fails as ResultsBlockError; the host's own errors (a
    full disk) pass."""
    dest = Path(dest)
    try:
        data = bz2.decompress(archive)
    except (OSError, ValueError) as exc:
        raise ResultsBlockError("results archive unreadable: %s" % exc) from None
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            members = tar.getmembers()
            for member in members:
                path = Path(member.name)
                if path.is_absolute() or ".." in path.parts:
                    raise ResultsBlockError("results archive holds a path outside its folder: %s" % member.name)
                if not (member.isfile() or member.isdir()):
                    raise ResultsBlockError("results archive holds a link or device: %s" % member.name)
            dest.mkdir(parents=True)
            for member in members:
                target = dest / member.name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src:
                    target.write_bytes(src.read())
    except tarfile.TarError as exc:
        raise ResultsBlockError("results archive unreadable: %s" % exc) from None
