"""The window module's records and dump lines, one definition for the
module and the QEMU plugin (guest/modules/include/mmlat_records.h and
mmlat_dump.h), built into a host program (records_dump.c) as the plugin
builds them: random windows and lock holds on two CPUs go in, both dumps
come out, and the analysis's parser (analysis/mmlat/parse.py) must read
back what this test counts itself: totals, the longest window and its
stacks, the histograms, the keyed windows and the lock sites."""
import collections
import random
import subprocess

import pytest
from helpers import ROOT

from mmlat import buckets, parse

LOCKS = ("pte", "i_mmap", "anon_vma")
MODES = ("spin", "mutex", "rwsem-write", "rwsem-read")
KINDS = ("preempt", "irq")
THRESH = 5000


@pytest.fixture(scope="module")
def records_dump(tmp_path_factory):
    exe = tmp_path_factory.mktemp("records") / "records_dump"
    subprocess.run(["gcc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                    "-I", str(ROOT / "plugin" / "src"),
                    "-I", str(ROOT / "guest" / "modules" / "include"),
                    "-o", str(exe), str(ROOT / "tests" / "unit" / "records_dump.c")], check=True)

    def run(events, table_size):
        out = subprocess.run([str(exe), str(table_size), str(THRESH)], input="\n".join(events) + "\n",
                             check=True, capture_output=True, text=True).stdout
        at = out.index("mmlat_locks ")
        return (parse.parse_windows(out[:at], is_text=True),
                parse.parse_locks(out[at:], is_text=True))
    return run


def frame(addr):
    return "fn_%x+0x0/0x10" % addr


def make_windows(rng, n, stacks):
    """n windows of distinct lengths (the longest is one window) over a few
    stacks and lock tags: [(cpu, kind, lock, ns, stack)]."""
    lengths = rng.sample(range(1, 200000), n)
    return [(rng.randrange(2), rng.randrange(2), rng.randrange(4), ns, rng.choice(stacks))
            for ns in lengths]


def window_events(windows):
    return ["win %d %d %d %d %d %s" % (cpu, kind, lock, ns, len(stack),
                                       " ".join("%x" % f for f in stack))
            for cpu, kind, lock, ns, stack in windows]


def histogram(lengths, sub_bits):
    return collections.Counter(buckets.lo_of(buckets.index(ns, sub_bits), sub_bits)
                               for ns in lengths)


@pytest.fixture(scope="module")
def stacks():
    rng = random.Random(7)
    return [tuple(0xffffffff81000000 + rng.randrange(1 << 20) for _ in range(rng.randint(1, 6)))
            for _ in range(12)]


def test_windows_read_back_as_counted(records_dump, stacks):
    rng = random.Random(1)
    windows = make_windows(rng, 3000, stacks)
    events = window_events(windows) + ["unmatched 1 1", "unmatched 0 1", "edge 1 0"]
    dump, _ = records_dump(events, 4096)
    assert dump["version"] == 3
    for k, kind in enumerate(KINDS):
        mine = [w for w in windows if w[1] == k]
        got = dump["kinds"][kind]
        longest = max(mine, key=lambda w: w[3])
        assert (got["n"], got["total_ns"], got["max_ns"]) == (
            len(mine), sum(w[3] for w in mine), longest[3])
        assert got["max_lock"] == (LOCKS[longest[2] - 1] if longest[2] else "none")
        assert got["maxopen"] == [frame(f) for f in longest[4]]
        assert got["maxstack"] == [frame(f) for f in reversed(longest[4])]
        assert {lo: n for lo, _, n in got["buckets"]} == histogram(
            [w[3] for w in mine], buckets.SUB_BITS)
        assert all(hi == buckets.hi(lo, buckets.SUB_BITS) for lo, hi, _ in got["buckets"])
        keyed = [w for w in mine if w[3] >= THRESH]
        assert (got["keyed"], got["overflow"]) == (len(keyed), 0)
    assert (dump["kinds"]["irq"]["unmatched"], dump["kinds"]["preempt"]["edge"]) == (2, 1)
    # one key per CPU, kind, stack and lock tag, as the host merges them
    want = collections.defaultdict(list)
    for cpu, kind, lock, ns, stack in windows:
        if ns >= THRESH:
            want[(cpu, KINDS[kind], LOCKS[lock - 1] if lock else "none",
                  tuple(frame(f) for f in stack))].append(ns)
    got = {(k["cpu"], k["kind"], k["lock"], tuple(k["stack"])): k for k in dump["keys"]}
    assert got.keys() == want.keys()
    for key, lengths in want.items():
        k = got[key]
        assert (k["n"], k["total_ns"], k["max_ns"]) == (len(lengths), sum(lengths), max(lengths))
        assert k["buckets"] == histogram(lengths, buckets.KEY_SUB_BITS)


def test_a_full_keyed_table_counts_whole_keys_in_overflow(records_dump, stacks):
    """A table of 8 entries holds 8 keys: every window of another key
    counts in overflow (and stays in the histogram), every window of a
    key it holds under that key."""
    rng = random.Random(2)
    windows = [w for w in make_windows(rng, 3000, stacks) if w[:2] == (0, 0)]
    dump, _ = records_dump(window_events(windows), 8)
    kind = dump["kinds"]["preempt"]
    by_key = collections.defaultdict(list)
    for _, _, lock, ns, stack in windows:
        if ns >= THRESH:
            by_key[(LOCKS[lock - 1] if lock else "none", tuple(frame(f) for f in stack))].append(ns)
    held = {(k["lock"], tuple(k["stack"])) for k in dump["keys"]}
    assert len(held) == 8 and kind["overflow"] > 0
    assert kind["keyed"] == sum(len(by_key[k]) for k in held)
    assert kind["keyed"] + kind["overflow"] == sum(len(v) for v in by_key.values())
    assert kind["overflow_max_ns"] == max(ns for k, v in by_key.items() if k not in held for ns in v)
    assert kind["n"] == len(windows)


def test_lock_sites_read_back_summed_over_the_cpus(records_dump):
    rng = random.Random(3)
    sites = [(0xffffffff81100000 + 16 * i, rng.randrange(3), rng.randrange(4)) for i in range(40)]
    holds = [(rng.randrange(2), rng.choice(sites), rng.randrange(1, 10 ** 6)) for _ in range(5000)]
    lost = [(rng.randrange(2), rng.choice(sites)) for _ in range(300)]
    events = (["hold %d %x %d %d %d" % (cpu, ret, kind, mode, ns)
               for cpu, (ret, kind, mode), ns in holds] +
              ["lost %d %x %d %d" % (cpu, ret, kind, mode) for cpu, (ret, kind, mode) in lost])
    _, dump = records_dump(events, 4096)
    assert dump["version"] == 3
    for k, lock in enumerate(LOCKS):
        t = dump["totals"][lock]
        assert (t["holds"], t["lost"], t["discarded"]) == (
            sum(1 for _, s, _ in holds if s[1] == k), sum(1 for _, s in lost if s[1] == k), 0)
    assert dump["totals"]["all"]["site_overflow"] == 0
    got = {(s["at"], s["lock"], s["mode"]): s for s in dump["sites"]}
    assert len(got) == len(dump["sites"]) == len({s for _, s, _ in holds} | {s for _, s in lost})
    for ret, kind, mode in set(s for _, s, _ in holds):
        s = got[(frame(ret), LOCKS[kind], MODES[mode])]
        lengths = [ns for _, site, ns in holds if site == (ret, kind, mode)]
        assert (s["n"], s["total_ns"], s["max_ns"]) == (len(lengths), sum(lengths), max(lengths))
        assert s["lost"] == sum(1 for _, site in lost if site == (ret, kind, mode))
        assert s["buckets"] == histogram(lengths, buckets.SUB_BITS)
