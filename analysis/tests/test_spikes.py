"""Each latency spike tied to the window that held it off (spikes.py),
from the plugin's per-wakeup records."""
import pytest
from fakerun import SPIKE_NS, WAKEUP_NS, WAKEUPS, ZAP_STACK, wakeup_line, wakeups_log

from mmlat import spikes

HEAD = "mmlat_plugin_wakeups 1\nparam clock=icount shift=3\n"


def boot(lines, **kw):
    return spikes.boot_spikes(spikes.parse_wakeups(HEAD + "\n".join(lines) + "\n", True), 1,
                              **kw)


def quiet(n=999, ns=10000):
    """n wakeups of ns each: a boot's median and p99.9."""
    return [wakeup_line(10 ** 9 + i * 500000, ns) for i in range(n)]


def test_a_window_open_at_the_expiry_explains_the_spike_it_covers():
    b = spikes.boot_spikes(spikes.parse_wakeups(wakeups_log(), True), 1)
    assert b.wakeups == WAKEUPS + 2
    assert b.median_ns == WAKEUP_NS + 2 * ((WAKEUPS + 2) // 2 - 1)
    assert len(b.spikes) == 2
    held, bare = b.spikes
    assert held.explained and not bare.explained
    assert held.causes[0].kind == "preempt"
    assert held.causes[0].window_class == "pte-lock-zap"
    assert held.causes[0].site.startswith("zap_pte_range")
    assert held.latency_us == SPIKE_NS / 1000
    assert bare.running == "kworker/0:1" and bare.covered_us == 0
    # what held it off opened after the expiry: named, never a cause
    assert (bare.after.kind, bare.after.window_class) == ("preempt", "softirq")
    assert bare.after.covered_us == (SPIKE_NS - 3000) / 1000
    assert held.after is None


@pytest.mark.parametrize("share, explained", [(0.79, False), (0.81, True)])
def test_the_window_must_cover_80_percent_of_the_latency_above_the_median(share, explained):
    excess = 100000     # above the median, 10 us
    spike = wakeup_line(2 * 10 ** 9, 10000 + excess, held=[
        ("irq", -8000, round(share * excess), ",".join(ZAP_STACK))])
    b = boot(quiet() + [spike])
    assert len(b.spikes) == 1
    assert b.spikes[0].explained is explained


def test_a_window_opened_after_the_expiry_explains_nothing():
    spike = wakeup_line(2 * 10 ** 9, 300000, held=[("preempt", 800, 300000, "__schedule+0x10/0x900")])
    b = boot(quiet() + [spike])
    assert not b.spikes[0].explained and b.spikes[0].covered_us == 0


def test_a_window_whose_end_fell_out_of_the_ring_counts_to_the_interrupt_only():
    """end_insn=0: closed somewhere before the task ran; only the stretch
    to the hrtimer interrupt's clock read (1 us here) is sure."""
    spike = wakeup_line(2 * 10 ** 9, 300000, held=[("preempt", -1000, 0, ",".join(ZAP_STACK))])
    b = boot(quiet() + [spike])
    assert b.spikes[0].covered_us == 1.0 and not b.spikes[0].explained


def test_the_longest_covering_window_names_the_class():
    spike = wakeup_line(2 * 10 ** 9, 300000, held=[
        ("irq", -1000, 280000, "__do_softirq+0x5/0x300,irq_exit_rcu+0x9/0x40"),
        ("preempt", -5000, 300000, ",".join(ZAP_STACK))])
    s = boot(quiet() + [spike]).spikes[0]
    assert [c.kind for c in s.causes] == ["preempt", "irq"]


def test_another_format_is_refused():
    with pytest.raises(ValueError, match="format"):
        spikes.parse_wakeups("mmlat_plugin_wakeups 2\nparam clock=icount shift=3\n", True)
    with pytest.raises(ValueError, match="not a plugin wakeups log"):
        spikes.parse_wakeups("mmlat_windows 3\n", True)


def test_the_timeline_holds_the_longest_spike_and_its_window():
    log = spikes.parse_wakeups(wakeups_log(), True)
    t = spikes.timeline(log, spikes.boot_spikes(log, 1))
    assert len(t.spikes) == 2
    assert max(lat for _, lat in t.spikes) == SPIKE_NS / 1000
    assert [w.kind for w in t.windows] == ["preempt"]
    w = t.windows[0]
    assert w.end_ms - w.begin_ms == pytest.approx((SPIKE_NS + 20000) / 1e6)
    assert all(0 <= x <= spikes.TIMELINE_SPAN_MS for x, _ in t.samples + t.spikes)
