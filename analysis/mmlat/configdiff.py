"""The config differences that matter for latency between two kernels of a
run whose configs differ (CROSS=yes: other kernel versions, other
sources).  Each kernel's .config and the fragments it was made from are
in the run (kernels/<variant>/config, fragments.config: bench/build.sh
and the orchestrator copy them there).

What matters: every option the fragments set (the preemption model, the
tracers and the mm options the bench config asks for), plus the options
of the families that shape a window whatever the fragment says: the
preemption model, the tick, the tracers, lock debugging and the page
allocator's and reclaim's build options.
"""
import os
import re
from dataclasses import dataclass

_LINE = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set")
_FAMILIES = re.compile(
    r"^CONFIG_(PREEMPT\w*|HZ\w*|NO_HZ\w*|\w*TRACER\w*|FTRACE\w*|\w*_TRACE\w*|TRACING\w*"
    r"|TRACE_\w*|FUNCTION_(GRAPH_)?TRACER|KPROBES\w*|LOCKDEP\w*|PROVE_\w*"
    r"|DEBUG_(LOCK|ATOMIC|VM|PREEMPT)\w*"
    r"|TRANSPARENT_HUGEPAGE\w*|LRU_GEN\w*|NUMA|MEMCG\w*|SWAP|ZRAM\w*|SPLIT_PTLOCK\w*"
    r"|MMU_GATHER\w*|PER_VMA_LOCK|RCU\w*|NR_CPUS|SMP)$")


@dataclass(frozen=True)
class OptionDiff:
    option: str
    values: tuple       # one per kernel, "unset" where it is not set
    from_fragment: bool  # a fragment names it (else: its family matters)


def read_config(path):
    """{CONFIG_X: value} of a .config or fragment; "unset" for '# ... is
    not set' lines."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = _LINE.match(line.strip())
            if m:
                out[m.group(1)] = m.group(2)
                continue
            m = _UNSET.match(line.strip())
            if m:
                out[m.group(1)] = "unset"
    return out


def diff(configs, fragments):
    """configs: one {option: value} per kernel; fragments: the options the
    fragments name.  The options that matter and differ, fragment options
    first, each group by name; and how many other options differ."""
    names = set().union(*configs)
    matter, others = [], 0
    for name in names:
        values = tuple(c.get(name, "unset") for c in configs)
        if len(set(values)) == 1:
            continue
        if name in fragments or _FAMILIES.match(name):
            matter.append(OptionDiff(name, values, name in fragments))
        else:
            others += 1
    matter.sort(key=lambda d: (not d.from_fragment, d.option))
    return matter, others


def run_diff(run_dir, variants):
    """The config differences of variants in run_dir, None when their
    configs are the same (or a variant's config is not in the run)."""
    configs, fragments = [], set()
    for v in variants:
        kd = os.path.join(run_dir, "kernels", v)
        path = os.path.join(kd, "config")
        if not os.path.exists(path):
            return None
        configs.append(read_config(path))
        frag = os.path.join(kd, "fragments.config")
        if os.path.exists(frag):
            fragments |= set(read_config(frag))
    if all(c == configs[0] for c in configs):
        return None
    matter, others = diff(configs, fragments)
    return {"variants": list(variants),
            "options": [{"option": d.option, "values": list(d.values),
                         "from_fragment": d.from_fragment} for d in matter],
            "other_differences": others}
