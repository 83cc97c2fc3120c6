"""The log-linear histogram buckets of the guest modules, the analysis's one
definition of them: guest/modules/include/mmlat_hist.h is the module's, and
tests/unit/test_hist_buckets.py builds that header into a host program and
checks the two agree bucket for bucket.

A histogram of sub_bits s counts nanoseconds: values below 2^s have a
bucket each; above that each power of two is split into 2^s buckets, so a
bucket is at most 1/2^s of its lowest value wide. Values of 2^MAX_LOG ns
and more share the last bucket. A dump names a bucket by its lowest value,
lo, and states the s of each histogram in its param line."""

MAX_LOG = 34
# What the window module keeps: totals and lock sites at SUB_BITS (1.6 %),
# the windows keyed by stack at KEY_SUB_BITS (12.5 %).
SUB_BITS = 6
KEY_SUB_BITS = 3


def count(sub_bits):
    """The buckets of a histogram."""
    return (MAX_LOG - sub_bits + 1) << sub_bits


def index(ns, sub_bits):
    """The bucket of a value of ns."""
    if ns < 1 << sub_bits:
        return ns
    msb = ns.bit_length() - 1
    if msb >= MAX_LOG:
        return count(sub_bits) - 1
    return ((msb - sub_bits + 1) << sub_bits) + ((ns >> (msb - sub_bits)) & ((1 << sub_bits) - 1))


def lo_of(b, sub_bits):
    """The lowest value of bucket b."""
    if b < 1 << sub_bits:
        return b
    msb = (b >> sub_bits) + sub_bits - 1
    return (1 << msb) + ((b & ((1 << sub_bits) - 1)) << (msb - sub_bits))


def lo(ns, sub_bits):
    """The lowest value of the bucket holding ns."""
    return lo_of(index(ns, sub_bits), sub_bits)


def hi(lo_ns, sub_bits):
    """The end of the bucket that starts at lo_ns: the next one's lo."""
    if lo_ns < 1 << sub_bits:
        return lo_ns + 1
    return lo_ns + (1 << (lo_ns.bit_length() - 1 - sub_bits))


def midpoint(lo_ns, sub_bits):
    """The value a bucket stands for: the midpoint of [lo, hi), so a
    percentile is at most half a bucket (0.8 % at sub_bits 6) off; buckets
    below 2^sub_bits hold one value each and are exact."""
    if lo_ns < 1 << sub_bits:
        return lo_ns
    return (lo_ns + hi(lo_ns, sub_bits)) / 2
