"""A run grows in rounds: each round boots repeats first..last of every
cell, and between rounds a decision says whether to add one (recorded in
meta.json's "rounds" before its boots start, so that a resumed run boots
the rounds already decided). REPEAT=N is one round of N, after which
next_round decides none; REPEAT=auto, the sequential rule over the
primary endpoints, is refused at the entry until analysis/mmlat has the
rule to decide with."""
from .records import write_meta


def next_round(meta):
    """The Round to add after the rounds of meta's plan, or None. A fixed
    REPEAT plans its one round up front."""
    return None


def run_rounds(sched, meta, run):
    """Every round of meta's plan, and those next_round adds; returns (boots
    run, boots of the plan)."""
    ran = total = 0
    done = 0
    while not sched.host_fault:
        for rnd in meta.plan.rounds[done:]:
            boots = meta.plan.boots_of(rnd)
            total += len(boots)
            ran += sched.run_boots(boots)
            done += 1
            if sched.host_fault:
                return ran, total
        rnd = next_round(meta)
        if rnd is None:
            break
        meta.plan.rounds.append(rnd)
        write_meta(run, meta)
    return ran, total
