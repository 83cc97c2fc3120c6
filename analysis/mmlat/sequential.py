"""The verdict rule, for a fixed REPEAT and for REPEAT=auto alike: three-way
verdicts against a margin, Holm over the primary endpoints, and
group-sequential looks with alpha spending.

Each primary endpoint has a margin m, the smallest relative change that
matters (endpoints.py).  On the log scale (Welch on log per-boot values,
stats.margin_tests) its change d = log(patched/baseline) is tested for
three claims: higher (d > log(1 + m)), lower (d < -log(1 + m)) and same
(|d| < log(1 + m), two one-sided tests, TOST).  The region is symmetric on
the log scale, as bioequivalence's 80-125 %: a 10 % margin is a ratio
beyond 1.1 or below 1/1.1.  Each endpoint's claim is the one with the
smallest p; the claims of all endpoints are one family.

Holm over looks (Maurer and Bretz 2013, "Multiple testing in group
sequential trials using graphical approaches", with Holm's graph): each
open endpoint is tested at alpha / (the endpoints still open); at a look,
the open endpoint with the smallest claim p is decided when p is at most
its nominal level, which passes its share of alpha to the others, and so
on until one fails.  Decisions are final: a decided endpoint stays
decided at later looks.  The nominal level of a test at total level a at
look k is the group-sequential boundary of a Lan-DeMets spending
function a(t) (t the share of the budget used, 1 at the last look;
Pocock-type by default, DEFAULT_SPENDING) for the information the looks
had (boots a side), computed from the start with the current a
(nominal_levels: the recursive integration of Armitage, McPherson and
Rowe).  With one look at t = 1 (a fixed REPEAT)
the nominal level is a itself and the rule is Holm over the endpoints'
claims at 5 %.

The decision interval of an endpoint is the interval [d - q se, d + q se]
with q the one-sided Welch t quantile at the level it was decided at (a
repeated confidence interval; for an open endpoint, the level of the last
look): the verdict is exactly where it lies, beyond the margin on one side
(better or worse), inside it (same), or across its edge (inconclusive).

decide() is the one entry: the report calls it with the looks meta.json
records (one look at t = 1 without them), the orchestrator between the
rounds of REPEAT=auto, simulate.py with drawn data."""
import math
from dataclasses import dataclass, field

import numpy as np

from . import stats

HIGHER, LOWER, SAME = 0, 1, 2
CLAIMS = ("higher", "lower", "same")
WORSE, BETTER, SAME_VERDICT, INCONCLUSIVE, NO_TEST = (
    "worse", "better", "same", "inconclusive", "n/a")

# Power at which boots_to_settle counts: the boots a side with which an
# open endpoint, if its change and spread are as observed, is decided in
# 4 runs of 5.
SETTLE_POWER = 0.8
# boots_to_settle looks no further: beyond this the answer is "out of
# reach" (None).
SETTLE_MOST = 200


def obrien_fleming(t, alpha):
    """Lan-DeMets' O'Brien-Fleming-type spending function (one-sided level
    alpha): 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)).  Spends almost nothing
    early: a look at a fifth of the budget needs z of about 4.9 at alpha
    2.5 %, the last look little more than a fixed design's."""
    t = np.asarray(t, dtype=float)
    z = stats.normal_quantile(alpha / 2)
    with np.errstate(divide="ignore"):
        return np.where(t > 0, 2 * stats.normal_sf(z / np.sqrt(np.maximum(t, 1e-300))), 0.0)


def pocock(t, alpha):
    """Lan-DeMets' Pocock-type spending function: alpha log(1 + (e - 1) t).
    Spends evenly: early looks decide more, the last look needs more than
    a fixed design."""
    return alpha * np.log1p((math.e - 1) * np.asarray(t, dtype=float))


SPENDING = {"obrien-fleming": obrien_fleming, "pocock": pocock}
SPENDING_TITLE = {"obrien-fleming": "O'Brien-Fleming-type", "pocock": "Pocock-type"}
# The default, chosen by simulation (simulate.tables()): with Welch's t at
# each look, whose variance is estimated, the boundaries of the normal
# theory keep the error with Pocock-type spending (a false "same" at the
# margin in 4.5 % of 20000 runs over the default family) and reach it
# with O'Brien-Fleming-type (5.0 %; 5.2 % in another 10000); Pocock also
# stops sooner (16 boots a side on average with no change, against 18;
# 13 against 16 at twice the margin), at a cost at half the margin (30 %
# of runs settle every endpoint, against 50 %).
DEFAULT_SPENDING = "pocock"

# Points of the grid of the recursive integration, per look: the levels
# it gives are within 0.3 % of the published boundaries (tests).
GRID = 600
# The grid's lower end, in standard deviations of the score.
GRID_SD = 9.0


def nominal_levels(repeats, spent, alpha, spending=DEFAULT_SPENDING):
    """The one-sided nominal level of each look of a group-sequential test
    at total level alpha: look k (repeats[k] boots a side, the information,
    and spent[k] the share of the budget used, increasing to 1 at the
    last look) rejects when its p is at most the level, and under the null
    the chance of rejecting at any look is spending(spent[k], alpha) by
    look k.  Computed by the recursive numerical integration of the score
    S_k (Brownian motion in the information) over the region where no
    earlier look rejected.  A look that adds no information or spends
    nothing has level 0."""
    spend = SPENDING[spending]
    cumulative = np.minimum(spend(np.asarray(spent, dtype=float), alpha), alpha)
    levels = []
    info_prev, spent_prev = 0.0, 0.0
    grid = weights = density = None
    for info, total in zip(np.asarray(repeats, dtype=float), cumulative):
        step = total - spent_prev
        var = info - info_prev
        if step <= 0 or var <= 0:
            levels.append(0.0)
            continue
        sd = math.sqrt(var)
        if grid is None:
            # first look: S_1 ~ N(0, info)
            b = math.sqrt(info) * float(stats.normal_quantile(step))
        else:
            def crossing(b):
                return float(np.sum(weights * density * stats.normal_sf((b - grid) / sd)))
            lo, hi = grid[0], grid[-1] + 40 * sd
            for _ in range(100):
                mid = (lo + hi) / 2
                lo, hi = (mid, hi) if crossing(mid) > step else (lo, mid)
            b = (lo + hi) / 2
        levels.append(float(stats.normal_sf(b / math.sqrt(info))))
        # the density of S_k where no look rejected yet, on a new grid
        new_grid = np.linspace(-GRID_SD * math.sqrt(info), b, GRID)
        new_weights = np.full(GRID, new_grid[1] - new_grid[0])
        new_weights[[0, -1]] /= 2
        if grid is None:
            new_density = np.exp(-new_grid ** 2 / (2 * info)) / math.sqrt(2 * math.pi * info)
        else:
            kernel = np.exp(-(new_grid[:, None] - grid[None, :]) ** 2 / (2 * var))
            new_density = kernel @ (weights * density) / math.sqrt(2 * math.pi * var)
        grid, weights, density = new_grid, new_weights, new_density
        info_prev, spent_prev = info, total
    return np.array(levels)


def level_table(repeats, spent, alpha, m, spending=DEFAULT_SPENDING):
    """nominal_levels for every share of alpha Holm can give an endpoint:
    row j (1..m) at total level alpha / j; row 0 unused (zeros).  Shape
    (m + 1, looks)."""
    out = np.zeros((m + 1, len(repeats)))
    for j in range(1, m + 1):
        out[j] = nominal_levels(repeats, spent, alpha / j, spending)
    return out


def claims(p_higher, p_lower, p_same):
    """Each endpoint's claim (HIGHER, LOWER, SAME) and its p: the claim with
    the smallest p; no test (NaN) claims nothing with p 1."""
    p = np.stack([p_higher, p_lower, p_same], axis=-1)
    p = np.where(np.isnan(p), 1.0, p)
    return np.argmin(p, axis=-1), np.min(p, axis=-1)


def holm_looks(claim_p, levels):
    """Holm over looks, on arrays: claim_p (..., looks, m), each endpoint's
    claim p at each look; levels: level_table (m + 1, looks).  A run (the
    leading axes) stops at the first look where every endpoint is decided.
    Returns (decided_at, level): per endpoint the look it was decided at
    (-1: open) and the level of its decision interval (for an open
    endpoint, of its run's last look)."""
    claim_p = np.asarray(claim_p, dtype=float)
    *lead, n_looks, m = claim_p.shape
    p = claim_p.reshape(-1, n_looks, m)
    runs = p.shape[0]
    decided_at = np.full((runs, m), -1)
    level = np.zeros((runs, m))
    rows = np.arange(runs)
    for k in range(n_looks):
        live = (decided_at < 0).any(axis=1)
        while True:
            open_ = decided_at < 0
            n_open = open_.sum(axis=1)
            pk = np.where(open_, p[:, k, :], np.inf)
            best = np.argmin(pk, axis=1)
            lvl = levels[n_open, k]
            passes = live & (n_open > 0) & (pk[rows, best] <= lvl)
            if not passes.any():
                break
            decided_at[rows[passes], best[passes]] = k
            level[rows[passes], best[passes]] = lvl[passes]
        # the open endpoints' interval: this look's level for their share
        open_ = (decided_at < 0) & live[:, None]
        level = np.where(open_, levels[(decided_at < 0).sum(axis=1), k][:, None], level)
    return decided_at.reshape(*lead, m), level.reshape(*lead, m)


def verdict_of(claim, higher_is_worse):
    if claim == SAME:
        return SAME_VERDICT
    return WORSE if (claim == HIGHER) == higher_is_worse else BETTER


def boots_to_settle(d, sd_base, sd_patched, log_margin, level, power=SETTLE_POWER,
                    most=SETTLE_MOST):
    """The boots a side with which one look at this one-sided level
    decides an endpoint whose change (d, log scale) and per-side spread
    (sd of the log values) are as observed, in `power` of runs (normal
    approximation, the interval's t quantile): inside the margin, the
    chance that the whole interval stays inside; beyond it, that it clears
    the edge.  None when even `most` do not (d on the edge)."""
    n = np.arange(2, most + 1)
    se = np.sqrt((sd_base ** 2 + sd_patched ** 2) / n)
    q = stats.t_quantile(level, 2 * n - 2)
    a = abs(d)
    if a < log_margin:
        chance = (1 - stats.normal_sf((log_margin - a) / se - q)
                  - stats.normal_sf((log_margin + a) / se - q))
    else:
        chance = 1 - stats.normal_sf((a - log_margin) / se - q)
    enough = n[chance >= power]
    return int(enough[0]) if enough.size else None


@dataclass(frozen=True)
class Look:
    """One look at the data: the repeats done (a boot belongs to the look
    when its repeat index is at most this), and the share of the budget
    used, in boots or minutes (0 < spent <= 1; 1 at the last look the
    budget allows: the caller sets 1 when another round would not fit)."""
    repeats: int
    spent: float

    def __post_init__(self):
        if self.repeats < 1 or not 0 < self.spent <= 1:
            raise ValueError("a look needs repeats >= 1 and 0 < spent <= 1: %d, %g"
                             % (self.repeats, self.spent))

    def as_dict(self):
        return {"repeats": self.repeats, "spent": self.spent}

    @classmethod
    def from_dict(cls, d):
        return cls(int(d["repeats"]), float(d["spent"]))


@dataclass
class Series:
    """One primary endpoint's per-boot values so far: its margin (relative)
    and direction, and per side the values (floored) with the repeat each
    boot had."""
    workload: str
    endpoint: str
    boot: str                # clean | traced: the boots it needs
    margin: float
    higher_is_worse: bool
    base: list
    patched: list
    base_repeats: list
    patched_repeats: list

    @property
    def name(self):
        return "%s %s" % (self.workload, self.endpoint)

    def upto(self, repeats):
        """Both sides' values of the repeats done by a look."""
        return ([v for v, r in zip(self.base, self.base_repeats) if r <= repeats],
                [v for v, r in zip(self.patched, self.patched_repeats) if r <= repeats])


@dataclass
class Outcome:
    """An endpoint after the looks so far: the verdict (open endpoints:
    inconclusive, or n/a with no test), the look (1-based) it was decided
    at, the one-sided level of its decision interval, the interval of the
    relative change (patched / baseline - 1), and for an inconclusive
    endpoint the boots a side a fixed look would likely need to settle it
    (boots_to_settle; None: out of reach)."""
    workload: str
    endpoint: str
    boot: str
    margin: float
    verdict: str
    look: int = None
    level: float = None
    lo: float = None
    hi: float = None
    settle_boots: int = None

    @property
    def name(self):
        return "%s %s" % (self.workload, self.endpoint)

    @property
    def decided(self):
        return self.look is not None


@dataclass
class Round:
    """What decide() answers after a look: every endpoint's outcome and
    whether to boot another round."""
    looks: list
    outcomes: list = field(default_factory=list)

    @property
    def open(self):
        return [o for o in self.outcomes if not o.decided]

    @property
    def another_round(self):
        """Boot again: an endpoint is open and the budget is not spent."""
        return bool(self.open) and self.looks[-1].spent < 1

    @property
    def needs(self):
        """The boots another round needs: {workload: sorted boot kinds} of
        the open endpoints (a decided endpoint needs no more)."""
        out = {}
        for o in self.open:
            out.setdefault(o.workload, set()).add(o.boot)
        return {w: sorted(kinds) for w, kinds in out.items()}

    def as_dict(self):
        """What the orchestrator reads: the look, whether to boot again and
        what, each endpoint's verdict so far, and the progress line."""
        last = self.looks[-1]
        return {"look": len(self.looks), "repeats": last.repeats, "spent": last.spent,
                "another_round": self.another_round, "needs": self.needs,
                "open": [o.name for o in self.open],
                "verdicts": {o.name: o.verdict for o in self.outcomes},
                "progress": self.progress()}

    def progress(self):
        """One line for the orchestrator: the look, the budget used, how many
        endpoints are decided, and the open ones by name."""
        last = self.looks[-1]
        head = "look %d (%d repeats, %d %% of the budget): %d of %d primary endpoints decided" % (
            len(self.looks), last.repeats, round(100 * last.spent),
            len(self.outcomes) - len(self.open), len(self.outcomes))
        if not self.open:
            return head
        return "%s; open: %s" % (head, ", ".join(o.name for o in self.open))


def _log_sd(values):
    return float(np.std(np.log(values), ddof=1)) if len(values) >= 2 else None


def decide(series, looks, alpha=stats.ALPHA, spending=DEFAULT_SPENDING):
    """The verdicts of a family of primary endpoints (series: [Series])
    after looks ([Look], in order; a fixed REPEAT is one look at spent 1),
    replayed from the start, so the report and the orchestrator agree.
    Returns a Round; at a look with spent 1, every endpoint still open is
    final: inconclusive, or n/a with no test."""
    if not looks:
        raise ValueError("decide: no look")
    reps = [lk.repeats for lk in looks]
    if any(b <= a for a, b in zip(reps, reps[1:])):
        raise ValueError("decide: looks must add repeats: %s" % reps)
    m = len(series)
    rnd = Round(looks=list(looks))
    if m == 0:
        return rnd
    log_margin = np.array([math.log1p(s.margin) for s in series])
    parts = np.full((3, len(looks), m), np.nan)
    for k, lk in enumerate(looks):
        for i, s in enumerate(series):
            base, patched = s.upto(lk.repeats)
            if base and patched:
                parts[:, k, i] = stats.welch_log_parts(base, patched)
    claim, claim_p = claims(*stats.margin_tests(parts[0], parts[1], parts[2], log_margin))
    levels = level_table(reps, [lk.spent for lk in looks], alpha, m, spending)
    decided_at, level = holm_looks(claim_p, levels)
    last = len(looks) - 1
    # an open endpoint's share of alpha at a fixed look, for boots_to_settle
    settle_level = alpha / max(1, int((decided_at < 0).sum()))
    for i, s in enumerate(series):
        k = decided_at[i] if decided_at[i] >= 0 else last
        d, se, df = parts[:, k, i]
        o = Outcome(s.workload, s.endpoint, s.boot, s.margin, INCONCLUSIVE)
        # no interval without a test, nor at a look that tested nothing
        if not np.isnan(d) and level[i] > 0:
            q = float(stats.t_quantile(level[i], df))
            o.level = float(level[i])
            o.lo, o.hi = math.expm1(d - q * se), math.expm1(d + q * se)
        if decided_at[i] >= 0:
            o.look, o.verdict = int(k) + 1, verdict_of(claim[k, i], s.higher_is_worse)
        elif np.isnan(d):
            o.verdict = NO_TEST
        else:
            base, patched = s.upto(looks[-1].repeats)
            o.settle_boots = boots_to_settle(d, _log_sd(base), _log_sd(patched),
                                             log_margin[i], settle_level)
        rnd.outcomes.append(o)
    return rnd
