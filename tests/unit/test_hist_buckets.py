"""The histogram buckets, one definition a side: the guest modules' header
(guest/modules/include/mmlat_hist.h), built into a host program
(hist_buckets.c), against the analysis's reader (analysis/mmlat/buckets.py),
bucket for bucket, at both resolutions the window module keeps."""
import subprocess

import pytest
from helpers import ROOT

from mmlat import buckets

HEADER_DIR = ROOT / "guest" / "modules" / "include"


@pytest.fixture(scope="module")
def c_side(tmp_path_factory):
    """What the header makes of every bucket: {sub_bits: count},
    {sub_bits: [lo of each bucket]}, [(sub_bits, ns, bucket)]."""
    exe = tmp_path_factory.mktemp("hist") / "hist_buckets"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-I", str(HEADER_DIR), "-o", str(exe),
                    str(ROOT / "tests" / "unit" / "hist_buckets.c")], check=True)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    counts, los, values = {}, {}, []
    for line in out.splitlines():
        word, *nums = line.split()
        nums = [int(n) for n in nums]
        if word == "resolution":
            counts[nums[0]] = nums[1]
            los[nums[0]] = []
        elif word == "lo":
            assert nums[1] == len(los[nums[0]])
            los[nums[0]].append(nums[2])
        else:
            values.append(tuple(nums))
    return counts, los, values


def test_both_sides_keep_the_same_resolutions(c_side):
    counts, _, _ = c_side
    assert counts == {buckets.SUB_BITS: buckets.count(buckets.SUB_BITS),
                      buckets.KEY_SUB_BITS: buckets.count(buckets.KEY_SUB_BITS)}


@pytest.mark.parametrize("sub_bits", [buckets.SUB_BITS, buckets.KEY_SUB_BITS])
def test_every_bucket_starts_and_ends_where_the_reader_says(c_side, sub_bits):
    _, los, _ = c_side
    c_los = los[sub_bits]
    assert c_los == [buckets.lo_of(b, sub_bits) for b in range(len(c_los))]
    # each bucket ends where the next begins: the width the reader's
    # midpoints assume
    for lo, next_lo in zip(c_los, c_los[1:]):
        assert buckets.hi(lo, sub_bits) == next_lo, lo
    assert c_los == sorted(set(c_los))


def test_every_value_falls_in_the_same_bucket(c_side):
    _, los, values = c_side
    assert len(values) > 3 * sum(len(v) for v in los.values()) - 2
    for sub_bits, ns, b in values:
        assert buckets.index(ns, sub_bits) == b, (sub_bits, ns)
        assert buckets.lo(ns, sub_bits) == los[sub_bits][b]
    # the largest values share the last bucket
    top = [(s, b) for s, ns, b in values if ns >= 1 << buckets.MAX_LOG]
    assert top and all(b == buckets.count(s) - 1 for s, b in top)
