import os
from mmlat import parse

FX = os.path.join(os.path.dirname(__file__), "fixtures")


def fx(n):
    return os.path.join(FX, n)


def test_cyclictest_json_real():
    d = parse.parse_cyclictest_json(fx("cyclictest.json"))
    assert d["version"] == "2.40"
    t = d["threads"][0]
    assert t["cycles"] == 2000 and t["min"] == 13 and t["max"] == 97
    assert sum(t["hist"].values()) == 2000
    assert t["hist"][17] == 566 and max(t["hist"]) == 97


def test_cyclictest_hist_real():
    d = parse.parse_cyclictest_hist(fx("cyclictest.hist"))
    t = d["threads"][0]
    assert d["buckets"] == 400
    assert t["total"] == 2000 and t["max"] == 97 and t["overflows"] == 0
    assert t["hist"][16] == 503


def test_cyclictest_hist_two_threads_overflow():
    d = parse.parse_cyclictest_hist(fx("cyclictest-t2.hist"))
    assert len(d["threads"]) == 2
    t0, t1 = d["threads"]
    assert t0["overflows"] == 1 and t0["max"] == 264
    assert sum(t0["hist"].values()) == t0["total"] == 999
    assert t1["total"] == 1000 and t1["overflows"] == 0
    j = parse.parse_cyclictest_json(fx("cyclictest-t2.json"))
    assert j["threads"][0]["max"] == 264


HIST = """# event histogram
#
# trigger info: hist:keys=lat,caller_offs,parent_offs:vals=hitcount:sort=lat:size=2048 [active]
#

{ lat:          3, caller_offs:      -4096, parent_offs:        512 } hitcount:         10
{ lat:         12, caller_offs:     123456, parent_offs:        789 } hitcount:          3

Totals:
    Hits: 13
    Entries: 2
    Dropped: 0
"""


def test_hist_trigger_doc_format():
    d = parse.parse_hist_trigger(HIST, is_text=True)
    assert d["hits"] == 13 and d["entries_n"] == 2 and d["dropped"] == 0
    e = d["entries"][0]
    assert e == {"lat": 3, "caller_offs": -4096, "parent_offs": 512, "hitcount": 10}


TRACE = """# tracer: preemptoff
#
# preemptoff latency trace v1.1.5 on 6.1.0-mmlat
# --------------------------------------------------------------------
# latency: 2013 us, #4/4, CPU#0 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:1)
#    -----------------
#    | task: munmap-123 (uid:0 nice:0 policy:0 rt_prio:0)
#    -----------------
#  => started at: _raw_spin_lock
#  => ended at:   _raw_spin_unlock
#
#
  munmap-123     0...1.    0us : _raw_spin_lock <-zap_pte_range
  munmap-123     0...1. 2013us : _raw_spin_unlock <-zap_pte_range
  munmap-123     0...1. 2014us : <stack trace>
 => zap_pte_range
 => unmap_page_range
 => __do_sys_munmap
"""


def test_tracer_snapshot():
    d = parse.parse_tracer_snapshot(TRACE, is_text=True)
    assert d["tracer"] == "preemptoff" and d["latency_us"] == 2013
    assert d["cpu"] == 0 and d["started_at"] == "_raw_spin_lock"
    assert d["ended_at"] == "_raw_spin_unlock"
    assert d["stack"] == ["zap_pte_range", "unmap_page_range", "__do_sys_munmap"]


def test_workload():
    r = parse.parse_workload("workload=munmap duration_s=10 ops=500 bytes=1024 ops_per_s=50.0 "
                             "threads=4\n", is_text=True)
    assert r[0]["workload"] == "munmap" and r[0]["ops_per_s"] == 50.0 and r[0]["threads"] == 4
    assert parse.workload_throughput(r) == 50.0


YAML = """---
system-info:
      stress-ng-version: 0.15.06
metrics:
    - stressor: mmap
      bogo-ops: 1234
      bogo-ops-per-second-real-time: 123.4
      wall-clock-time: 10.0
    - stressor: fork
      bogo-ops: 55
      bogo-ops-per-second-real-time: 5.5
times:
      run-time: 10.0
"""


def test_stressng_yaml():
    m = parse.parse_stressng_yaml(YAML, is_text=True)
    assert [x["stressor"] for x in m] == ["mmap", "fork"]
    assert m[0]["bogo-ops-per-second-real-time"] == 123.4


SYSMAP = """ffffffff81000000 T _stext
ffffffff81000000 T startup_64
ffffffff81001000 T zap_pte_range
ffffffff81001800 t copy_pte_range
ffffffff81002000 D some_data
ffffffff81003000 T _etext
"""

KALLSYMS = """ffffffff81000000 T _stext
ffffffff81001000 T zap_pte_range
ffffffff81003000 T _etext
ffffffffc0001000 t mmlat_calib_preempt	[mmlat_calib]
"""


def test_symbol_map():
    m = parse.SymbolMap(SYSMAP, is_text=True)
    assert m.resolve_offs(0x1010) == ("zap_pte_range", 0x10)
    assert m.resolve_offs(0x1800) == ("copy_pte_range", 0)
    assert m.resolve_offs(-16) == (None, None)


def test_module_addresses():
    m = parse.SymbolMap(SYSMAP, is_text=True)
    assert m.resolve_offs(0x3f001010)[0] == "[module]"
    k = parse.SymbolMap(KALLSYMS, is_text=True)
    assert k.resolve_offs(0xffffffffc0001010 - 0xffffffff81000000) == ("mmlat_calib_preempt", 0x10)


def test_workload_real_drivers():
    r = parse.parse_workload(fx("workload-munmap.txt"))
    assert len(r) == 1 and r[0]["workload"] == "munmap"
    assert r[0]["ops"] == 49 and r[0]["ops_per_s"] == 47.016 and r[0]["small_ops"] == 3136
    assert parse.workload_throughput(r) == 47.016
    m = parse.parse_workload(fx("workload-mixed.txt"))
    assert len(m) == 1 and m[0]["fork_ops"] == 288 and m[0]["ops_per_s"] == 350.498


def test_workload_pages_rate():
    text = ("workload=truncate\nduration_s=5.928\nops=7\nbytes=117440512\nops_per_s=1.181\n"
            "seed=3\nstart_delay_us=1561\nlayout_pad_pages=494\nlayout_base=0x7f83acf2d000\n"
            "pages=25347\npages_s=5.000412\npages_per_s=5069.982\nprocesses=2\n")
    r = parse.parse_workload(text, is_text=True)
    assert len(r) == 1 and r[0]["pages"] == 25347 and r[0]["seed"] == 3
    assert parse.workload_pages_rate(r) == 5069.982
    assert parse.workload_throughput(r) == 1.181
    # drivers from before the fine count, and stress-ng, have none
    assert parse.workload_pages_rate(parse.parse_workload(fx("workload-munmap.txt"))) is None
    assert parse.workload_pages_rate([]) is None


def test_stressng_yaml_real():
    m = parse.parse_stressng_yaml(fx("stress-ng.yaml"))
    assert [x["stressor"] for x in m] == ["mmap", "fork"]
    assert m[1]["bogo-ops"] == 11457
    assert m[1]["bogo-ops-per-second-real-time"] == 3818.817601


def test_calib_lines():
    r = parse.parse_calib("type=preempt ns=1000514 cpu=0\ntype=irq ns=1000418 cpu=0\n",
                          is_text=True)
    assert r == [{"type": "preempt", "ns": 1000514, "cpu": 0},
                 {"type": "irq", "ns": 1000418, "cpu": 0}]
