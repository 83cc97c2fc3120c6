"""A run grows in rounds: each round boots repeats first..last of every
cell, and between rounds a decision says whether to add one (recorded in
meta.json's "rounds" before its boots start, so that a resumed run boots
the rounds already decided). REPEAT=N is one round of N. REPEAT=auto
(plan.model.AUTO) asks the analysis after each round (`mmlat look`:
analysis/mmlat/sequential.py's rule over the primary endpoints, which
replays a look after every round recorded): another round while an
endpoint is open and the budget lasts, of the cells and boot kinds the
open endpoints need."""
from plan.model import AUTO

from .analysis import look
from .records import write_meta
from .say import log


def next_round(meta, run, values):
    """The Round to add after the rounds of meta's plan, or None. A fixed
    REPEAT plans its one round up front."""
    plan = meta.plan
    if plan.repeat != "auto" or plan.rounds[-1].spent >= 1:
        return None
    answer = look(run, values)
    log("REPEAT=auto: %s" % answer["progress"])
    if not answer["another_round"]:
        return None
    return AUTO.round(len(plan.rounds) + 1, answer["needs"],
                      "REPEAT=auto: open after look %d: %s" % (answer["look"],
                                                               ", ".join(answer["open"])))


def run_rounds(sched, meta, run, values):
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
        rnd = next_round(meta, run, values)
        if rnd is None:
            break
        meta.plan.rounds.append(rnd)
        write_meta(run, meta)
    return ran, total
