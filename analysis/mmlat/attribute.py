"""Attribution of preempt-off / irq-off windows and lock holds to classes a
kernel developer recognises.  The rules are data: guest/classes.txt, the one
table of classes and lock users that guest/modules/mmlat_windows reads too
(its header comment says what each column means).  It is parsed once, on
import; a line it cannot read raises ClassesError naming the line.

A window is described by its stack at open (the module's frame walk, opener
first, "func+0x1a/0x200" frames) and by the lock the module tagged it with
(the lock whose acquisition opened it), if any.
"""
import re
from dataclasses import dataclass
from pathlib import Path

CLASSES_PATH = Path(__file__).resolve().parents[2] / "guest" / "classes.txt"

KINDS = ("preempt", "irq", "any")
MATCHES = ("opener", "within", "plumbing", "boundary")
# Rows that list frames rather than name a class.
FRAME_LISTS = ("plumbing", "boundary")
LOCKS = ("pte", "i_mmap", "anon_vma")
# The class of a hold or window tagged with the lock alone; PTE-lock holds
# and windows are split further by the function that took the lock.
LOCK_CLASS = {"i_mmap": "i_mmap-lock", "anon_vma": "anon_vma-lock"}
PTE_FALLBACK = "pte-lock-other"
OTHER = "other"
# The report's tracer names for the module's window kinds.
TRACER_KIND = {"preemptoff": "preempt", "irqsoff": "irq"}

_SUFFIX = re.compile(r"\.(isra|constprop|part|cold)(\.\d+)?")
# A function's kernel versions: name@6.3-, name@-6.2, name@6.5-6.19, name@6.12.
_RANGE = re.compile(r"^(\d+\.\d+)?(-)?(\d+\.\d+)?$")
# The oldest kernel the tables describe: a name without a range is
# expected from this version on.
OLDEST = (6, 1)


class ClassesError(ValueError):
    """guest/classes.txt has a line this analysis cannot read."""


def parse_version(text):
    """'7.3.4', '6.12' or '6.1.192-mmlat-mainline' -> (7, 3), (6, 12),
    (6, 1); ValueError on anything else."""
    m = re.match(r"^(\d+)\.(\d+)(?:[.-]|$)", text or "")
    if not m:
        raise ValueError("not a kernel version: %r" % text)
    return int(m.group(1)), int(m.group(2))


def version_text(version):
    return "%d.%d" % version


# The range of a function of mmlat's own guest modules: in no kernel's
# System.map.
GUEST = "guest"
# The mark of a name some kernels of its versions lack.
OPTIONAL = "?"


@dataclass(frozen=True)
class Name:
    """A function a row names, and the kernel versions (X.Y, both ends
    included; None: open) whose System.map is expected to have it; guest:
    a function of mmlat's guest modules, expected in none; optional: some
    kernels of those versions lack it (inlined there, or added by a
    series), so its absence is no drift."""
    name: str
    since: tuple = None
    until: tuple = None
    guest: bool = False
    optional: bool = False

    def expected_in(self, version):
        """Is this name expected in the System.map of a kernel of version
        (X, Y)?  From OLDEST on when the row gives no lower end."""
        return (not self.guest and version >= (self.since or OLDEST)
                and (self.until is None or version <= self.until))

    def spelled(self):
        """As the table spells it: 'vma_prepare@6.3-', 'zap_pte_range?'."""
        mark = OPTIONAL if self.optional else ""
        if self.guest:
            return "%s@%s" % (self.name, GUEST)
        if self.since is None and self.until is None:
            return self.name + mark
        if self.since == self.until:
            return "%s@%s%s" % (self.name, version_text(self.since), mark)
        return "%s@%s-%s%s" % (self.name, version_text(self.since) if self.since else "",
                               version_text(self.until) if self.until else "", mark)

    def range_text(self):
        if self.guest:
            return "mmlat's guest modules"
        if self.since == self.until and self.since:
            return version_text(self.since) + " only"
        if self.until is None:
            return "%s on" % version_text(self.since or OLDEST)
        return "%s to %s" % (version_text(self.since or OLDEST), version_text(self.until))


def parse_name(token):
    """'vma_prepare@6.3-' -> Name('vma_prepare', (6, 3), None),
    'mw_*@guest' -> Name('mw_*', guest=True), 'zap_pte_range@-6.1?' ->
    Name('zap_pte_range', None, (6, 1), optional=True); ValueError on a
    range that is not X.Y, X.Y-, -X.Y, X.Y-X.Y or guest, or that is empty."""
    optional = token.endswith(OPTIONAL)
    name, at, span = token[:len(token) - optional].partition("@")
    if not name:
        raise ValueError("no function in %r" % token)
    if not at:
        return Name(name, optional=optional)
    if span == GUEST and not optional:
        return Name(name, guest=True)
    m = _RANGE.match(span)
    if not name or not m or not (m.group(1) or m.group(3)) or (
            m.group(1) and m.group(3) and not m.group(2)):
        raise ValueError("version range %r is none of X.Y, X.Y-, -X.Y, X.Y-X.Y, %s"
                         % (span, GUEST))
    lo = parse_version(m.group(1)) if m.group(1) else None
    hi = parse_version(m.group(3)) if m.group(3) else None
    if not m.group(2):
        hi = lo
    if lo and hi and lo > hi:
        raise ValueError("version range %r is empty" % span)
    if hi and hi < OLDEST:
        raise ValueError("version range %r ends before %s, the oldest kernel the table describes"
                         % (span, version_text(OLDEST)))
    return Name(name, lo, hi, optional=optional)


@dataclass(frozen=True)
class Rule:
    cls: str
    kind: str       # preempt, irq or any
    match: str      # opener, within or plumbing
    lock: str       # pte, i_mmap, anon_vma or None
    functions: tuple    # the names, matched in every kernel
    line: int
    names: tuple = ()   # the same as Name, with their version ranges

    def applies_to(self, kind):
        return self.kind == "any" or kind is None or self.kind == kind

    def has(self, func):
        return any(func.startswith(f[:-1]) if f.endswith("*") else func == f
                   for f in self.functions)


def parse_rules(text, source="classes.txt"):
    """The rows of a classes table, in order.  Raises ClassesError with
    the line number on a row of fewer than five columns, with an unknown
    kind, match or lock, or with a version range it cannot read."""
    rules = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].split()
        if not line:
            continue

        def bad(why):
            return ClassesError("%s:%d: %s: %r" % (source, n, why, raw.strip()))
        if len(line) < 5:
            raise bad("want class, kind, match, lock and at least one function")
        cls, kind, match, lock, funcs = line[0], line[1], line[2], line[3], line[4:]
        if kind not in KINDS:
            raise bad("kind %r is none of %s" % (kind, ", ".join(KINDS)))
        if match not in MATCHES:
            raise bad("match %r is none of %s" % (match, ", ".join(MATCHES)))
        if lock != "-" and lock not in LOCKS:
            raise bad("lock %r is none of %s or -" % (lock, ", ".join(LOCKS)))
        if (match in FRAME_LISTS) != (cls == "-"):
            raise bad("plumbing and boundary rows, and only they, have class -")
        try:
            names = tuple(parse_name(f) for f in funcs)
        except ValueError as e:
            raise bad(str(e))
        rules.append(Rule(cls, kind, match, None if lock == "-" else lock,
                          tuple(x.name for x in names), n, names))
    return rules


def load_rules(path=CLASSES_PATH):
    with open(path, encoding="utf-8") as f:
        return parse_rules(f.read(), str(path))


RULES = load_rules()
CLASSES = list(dict.fromkeys(r.cls for r in RULES if r.match not in FRAME_LISTS)) + [OTHER]


def func_name(frame):
    """'zap_pte_range.isra.0+0x1f3/0x500 [mod]' -> 'zap_pte_range'; '[idle]' stays."""
    if not frame:
        return ""
    name = frame.strip().split(" ", 1)[0].split("+", 1)[0]
    return _SUFFIX.sub("", name) if not name.startswith("[") else name


def is_plumbing(func, rules=None):
    return any(r.match == "plumbing" and r.has(func) for r in rules or RULES)


def own_frames(funcs, rules=None):
    """The frames of a stack (names, innermost first) that are the
    window's own: up to and including the first interrupt entry (a
    boundary row's frame); below it is the interrupted code, which a
    softirq run at irq exit, say, did not enter."""
    for i, f in enumerate(funcs):
        if any(r.match == "boundary" and r.has(f) for r in rules or RULES):
            return funcs[:i + 1]
    return funcs


def opener_index(frames, rules=None):
    """Index of the first frame that is not plumbing, None if all are."""
    for i, f in enumerate(frames):
        if not is_plumbing(func_name(f), rules):
            return i
    return None


def opener(frames, rules=None):
    """The function that opened a window: the first frame of its stack that
    is not lock, preempt, irq or tracing plumbing ("" if there is none)."""
    i = opener_index(frames, rules)
    return "" if i is None else func_name(frames[i])


def call_site(frames, rules=None):
    """What the report calls a window's call site: its opener and, for
    context, the next function of the stack that is not plumbing
    ("free_unref_page_list <- release_pages")."""
    i = opener_index(frames, rules)
    if i is None:
        return func_name(frames[0]) if frames else "[none]"
    rest = frames[i + 1:]
    j = opener_index(rest, rules)
    return func_name(frames[i]) + ("" if j is None else " <- " + func_name(rest[j]))


def _pte_class(func, kind, rules):
    for r in rules:
        if r.lock == "pte" and r.applies_to(kind) and r.has(func):
            return r.cls
    return PTE_FALLBACK


def hold_class(lock, func, rules=None):
    """The class of a lock hold taken in func: the PTE lock's by the pte
    rows that list func (pte-lock-other when none does), the i_mmap and
    anon_vma locks' by the lock alone."""
    if lock == "pte":
        return _pte_class(func_name(func), None, rules or RULES)
    return LOCK_CLASS.get(lock, OTHER)


def classify_stack(frames, kind=None, lock=None, rules=None):
    """The class of one window from its stack (opener first) and kind
    (preempt or irq; preemptoff and irqsoff are read as those; None tests
    every row).

    lock is the module's tag: "pte", "i_mmap" or "anon_vma" classes the
    window by that lock, unless a row above that lock's first row matches
    (an injected calibration hold stays calibration, at open as at its
    end); any other value ("none", "") says the opening call took none of
    them, so the rows of lock users do not
    apply (a spin_lock in __anon_vma_prepare on mm->page_table_lock is no
    anon_vma-lock window); None (no tag known: a hist trigger, the
    kernel's stack at a window's end) lets the stack alone decide."""
    rules = rules or RULES
    kind = TRACER_KIND.get(kind, kind)
    op = opener(frames, rules)
    funcs = own_frames([func_name(f) for f in frames], rules)
    for r in rules:
        if r.match in FRAME_LISTS or not r.applies_to(kind):
            continue
        if r.lock and r.lock == lock:
            # The tag decides from the lock's first row on; only the rows
            # above it (the calibration module's) come first.
            return _pte_class(op, kind, rules) if lock == "pte" else LOCK_CLASS[lock]
        if r.lock and lock is not None:
            continue
        if r.match == "opener" and op and r.has(op):
            return r.cls
        if r.match == "within" and any(r.has(f) for f in funcs):
            return r.cls
    if lock == "pte":
        return PTE_FALLBACK
    return LOCK_CLASS.get(lock, OTHER)
