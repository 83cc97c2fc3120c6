"""The workload registry: one row per workload, and the WORKLOADS and
SWEEP grammar checked against it.

A row names the workload, its kind (a driver, workloads/<name>.c built as
mmlat-<name>; a stress-ng recipe; idle), the parameters a WORKLOADS entry
may give it (NAME:KEY=VALUE,...: each KEY the driver's option letter, each
VALUE a decimal integer in the key's range, passed as -KEY VALUE after the
runner's own options), its primary endpoints (names the analysis maps,
analysis/mmlat/endpoints.py) and what it needs from the kernel, which the
guest runner prepares. The host's checks, the guest runner (its
/etc/mmlat/workloads.conf, plan/render.py), workloads/Makefile's driver
list and the analysis all read these rows: adding a workload is one row
plus its driver."""
import re
from dataclasses import dataclass

from .model import Sweep

DRIVER, STRESS_NG, IDLE = "driver", "stress-ng", "idle"
# What the guest runner sets up before a workload that needs it: cgroup
# v2's memory controller and swap on zram.
MEMCG_SWAP = "memcg-swap"
# The primary endpoints: cyclictest's p99.9 and max (clean boots), the
# longest window of the zap path and of each lock the series converts that
# the workload's code path reaches (traced boots), and throughput in pages
# (clean boots).
LATENCY = ("cyclictest p99.9", "cyclictest max")
WORK = ("pages/s",)
ZAP = ("zap-path window",)
I_MMAP = ("i_mmap-lock window",)
ANON_VMA = ("anon_vma-lock window",)
# The stress-ng recipes' word for the guest's CPU count.
NCPU = "NCPU"


@dataclass(frozen=True)
class Param:
    key: str                # the driver's option letter
    lo: int
    hi: int
    help: str

    def __str__(self):
        return "%s=%d..%d (%s)" % (self.key, self.lo, self.hi, self.help)


@dataclass(frozen=True)
class Workload:
    name: str
    kind: str
    help: str
    primary: tuple                  # endpoint names
    params: tuple = ()              # Param
    needs: tuple = ()               # MEMCG_SWAP
    stress_ng: str = ""             # a STRESS_NG recipe's arguments, NCPU for the guest's CPUs

    def takes(self):
        return ", ".join(str(p) for p in self.params)


WORKLOADS = (
    Workload("munmap", DRIVER, "zap and gather of the unmapped range", LATENCY + ZAP + WORK),
    Workload("exit", DRIVER, "the exits' zaps, and unlink_anon_vmas() under the anon_vma lock",
             LATENCY + ANON_VMA + ZAP + WORK),
    Workload("truncate", DRIVER, "unmap_mapping_range() under the i_mmap lock, its zaps and "
             "gathers", LATENCY + I_MMAP + ZAP + WORK),
    Workload("fork", DRIVER, "anon_vma_fork() under the anon_vma lock, the children's exits",
             LATENCY + ANON_VMA + ZAP + WORK),
    Workload("mixed", DRIVER, "munmap, exit, truncate and fork at once",
             LATENCY + I_MMAP + ANON_VMA + ZAP + WORK),
    Workload("imap", DRIVER, "the i_mmap fan-out: a file mapped n times, truncated while remapped",
             LATENCY + I_MMAP + ZAP + WORK, params=(
                 Param("n", 1, 4096, "vmas mapping the file; driver default 64"),
                 Param("s", 1, 64, "file size in MiB, in place of SIZE_MIB"),
                 # Two truncations of one file take turns on its inode
                 # lock; w writers unmap it at once instead: the file
                 # becomes a zram device that each maps n times and
                 # overwrites with direct I/O, which unmaps the device's
                 # pages from every mapping first. On one vCPU the
                 # writers only interleave, from two on their unmaps
                 # overlap.
                 Param("w", 1, 8, "direct-I/O writers of a zram device, in place of the "
                       "truncation"))),
    # reclaim's anonymous memory is half of s, its cgroup's memory.max as
    # much, and its file F MiB; the page tables of the file's n mappings,
    # which memory.max counts too, may take at most half of it, which the
    # driver checks (n=256 allows F up to 6 at s=16, 30 at s=64; at s=2, n
    # up to 64).
    Workload("reclaim", DRIVER, "rmap walks: pages shared by k readers, reclaimed to zram in a "
             "memcg", LATENCY + I_MMAP + ANON_VMA + WORK, params=(
                 Param("k", 1, 32, "readers of the anonymous half; driver default 4"),
                 Param("n", 1, 256, "vmas mapping the file; driver default 16"),
                 Param("s", 2, 64, "MiB, twice the anonymous memory and memory.max, in place "
                       "of SIZE_MIB"),
                 Param("F", 1, 16, "file size in MiB; driver default 1")),
             needs=(MEMCG_SWAP,)),
    # anonchain's W * (D + 1) tasks below its root take 1/16 of the region
    # each: at most 264 MiB at s=16, in the 1 GiB guest.
    Workload("anonchain", DRIVER, "fork chains D deep: anon_vma_clone() and unlink_anon_vmas() "
             "over long chains", LATENCY + ANON_VMA + ZAP + WORK, params=(
                 Param("D", 1, 32, "tasks in each chain; driver default 16"),
                 Param("w", 1, 8, "chains under the root task; driver default 2"),
                 Param("s", 1, 16, "region in MiB, in place of SIZE_MIB"))),
    Workload("sng-mm", STRESS_NG, "stress-ng's mmap, munmap, brk, mremap and madvise",
             LATENCY + WORK, stress_ng="--mmap NCPU --mmap-bytes 32M --munmap NCPU --brk 1 "
             "--mremap 1 --madvise 1"),
    Workload("sng-fork", STRESS_NG, "stress-ng's fork and vm", LATENCY + WORK,
             stress_ng="--fork NCPU --vm 1 --vm-bytes 32M"),
    Workload("sng-vm", STRESS_NG, "stress-ng's vm, every method", LATENCY + WORK,
             stress_ng="--vm NCPU --vm-bytes 64M --vm-method all"),
    Workload("idle", IDLE, "no workload: cyclictest alone", LATENCY),
)

BY_NAME = {w.name: w for w in WORKLOADS}
NAMES = tuple(w.name for w in WORKLOADS)
DRIVERS = tuple(w.name for w in WORKLOADS if w.kind == DRIVER)
_VALUE = re.compile(r"0|[1-9][0-9]{0,8}")


class EntryError(ValueError):
    """A WORKLOADS entry or a SWEEP is not allowed; the message says why."""


def primary(entry):
    """The primary endpoint names of a WORKLOADS entry (imap:n=256 is imap);
    of a name no row has (a run's of a workload since removed), latency and
    work."""
    name = entry.partition(":")[0]
    return BY_NAME[name].primary if name in BY_NAME else LATENCY + WORK


def check_name(what, name):
    if name not in BY_NAME:
        raise EntryError("%s: unknown workload '%s': a workload is one of: %s (parameters: "
                         "NAME:KEY=VALUE,... as bench/plan/workloads.py allows)"
                         % (what, name, " ".join(NAMES)))
    return BY_NAME[name]


def parse_entry(entry, what=None):
    """A WORKLOADS entry, NAME or NAME:KEY=VALUE[,KEY=VALUE...], as (name,
    {key: int}) in the order given; raises EntryError naming the entry
    (or what) and the keys its workload takes."""
    what = what or "WORKLOADS entry '%s'" % entry
    name, colon, params = entry.partition(":")
    w = check_name(what, name)
    if not colon:
        return name, {}
    if not w.params:
        raise EntryError("%s: workload '%s' takes no parameters (with parameters: %s)"
                         % (what, name, " ".join(sorted(x.name for x in WORKLOADS if x.params))))
    if not params or "" in params.split(","):
        raise EntryError("%s: an empty parameter; write %s:KEY=VALUE[,KEY=VALUE...] with %s"
                         % (what, name, w.takes()))
    keys = {p.key: p for p in w.params}
    out = {}
    for kv in params.split(","):
        key, eq, value = kv.partition("=")
        if not eq:
            raise EntryError("%s: '%s' is not KEY=VALUE; %s takes %s" % (what, kv, name, w.takes()))
        if key not in keys:
            raise EntryError("%s: no parameter '%s' for %s; it takes %s"
                             % (what, key, name, w.takes()))
        if key in out:
            raise EntryError("%s: '%s' given twice; %s takes %s" % (what, key, name, w.takes()))
        p = keys[key]
        if not _VALUE.fullmatch(value) or not p.lo <= int(value) <= p.hi:
            raise EntryError("%s: %s=%s is not an integer in %d..%d; %s takes %s"
                             % (what, key, value, p.lo, p.hi, name, w.takes()))
        out[key] = int(value)
    return name, out


def parse_sweep(spec):
    """One SWEEP, NAME:KEY=VALUE,... where a token without '=' is one more
    value of the key before it and exactly one key has several values
    (imap:s=1,n=16,64,256: imap:s=1,n=16 imap:s=1,n=64 imap:s=1,n=256), as
    a Sweep; each entry is checked as parse_entry does."""
    name, _, params = spec.partition(":")
    if not name or not params:
        raise EntryError("SWEEP '%s': no parameters; write NAME:KEY=V1,V2,...[,KEY=VALUE...], as "
                         "in imap:s=1,n=16,64,256" % spec)
    if "" in params.split(","):
        raise EntryError("SWEEP '%s': an empty value; write %s:KEY=V1,V2,...[,KEY=VALUE...]"
                         % (spec, name))
    keys, values = [], []
    for tok in params.split(","):
        key, eq, value = tok.partition("=")
        if eq:
            keys.append(key)
            values.append([value])
        elif not keys:
            raise EntryError("SWEEP '%s': '%s' comes before any KEY=; write %s:KEY=V1,V2,..."
                             % (spec, tok, name))
        else:
            values[-1].append(tok)
    swept = [i for i, v in enumerate(values) if len(v) > 1]
    if len(swept) > 1:
        raise EntryError("SWEEP '%s': '%s' and '%s' both have several values; a sweep varies "
                         "one key" % (spec, keys[swept[0]], keys[swept[1]]))
    if not swept:
        raise EntryError("SWEEP '%s': no key has several values; a sweep varies one key "
                         "(imap:n=16,64,256), a single entry goes in WORKLOADS" % spec)
    s = swept[0]
    seen, entries = set(), []
    for value in values[s]:
        if value in seen:
            raise EntryError("SWEEP '%s': %s=%s given twice" % (spec, keys[s], value))
        seen.add(value)
        entry = "%s:%s" % (name, ",".join(
            "%s=%s" % (k, value if i == s else v[0]) for i, (k, v) in enumerate(zip(keys, values))))
        parse_entry(entry, "SWEEP '%s' (entry '%s')" % (spec, entry))
        entries.append(entry)
    return Sweep(spec=spec, name=name, key=keys[s], values=[int(v) for v in values[s]],
                 fixed={k: int(v[0]) for i, (k, v) in enumerate(zip(keys, values)) if i != s},
                 workloads=entries)
