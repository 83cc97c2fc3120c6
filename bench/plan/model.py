"""The run as data: what a run boots (Variant, Step, Sweep, Calibration,
Cell, Boot, Round, Plan, GuestJob) and what it records (Meta, meta.json;
CellRecord, a boot's cell.json; BuildRecord, a kernel's build.json;
JobRecord, a boot handed to an executor), each a dataclass with to/from
JSON. The orchestrator writes these records and the analysis reads them
back through the same classes: nothing is rebuilt from strings.

Every record carries FORMAT; a reader refuses another, and the analysis
upgrades the format before it (analysis/mmlat/records.py)."""
import dataclasses
import json
import os
from dataclasses import dataclass, field

from . import calib, codec, instruments, knobs
from .codec import RecordError

FORMAT = 4
BOOT_KINDS = ("clean", "traced")
# The cell of a variant's calibration boot (CALIB_WORKLOADS=calib): the idle
# job with CALIB's windows, no workload of the report.
CALIB_CELL = "calib"


class Record:
    """to_json and from_json of a dataclass, by its fields' annotations
    (codec.py)."""

    def to_json(self):
        return codec.to_json(self)

    @classmethod
    def from_json(cls, doc):
        return codec.from_json(cls, doc)


@dataclass(frozen=True)
class Variant(Record):
    """A kernel: its source (tree:VERSION, Debian's linux-source; or
    git:COMMIT of KSRC) and the series directories applied to it, the
    instrumentation of its version first."""
    name: str
    spec: str                   # as VARIANTS gave it
    source: str
    version: str                # VERSION.PATCHLEVEL
    ref: str                    # the git ref as given; "" for a packaged tree
    series: tuple[str, ...]     # absolute paths, in order
    instrumentation: int        # how many of series are the instrumentation


@dataclass(frozen=True)
class Step(Record):
    """STEPS=each: one patch (or commit) of the patched side, the variant
    that adds it and the one it is compared with."""
    variant: str
    previous: str
    patch: str                  # as its series file names it, or "<hash> <subject>"
    series: str                 # its series directory as variants.conf names it
    index: int                  # 1 first


@dataclass(frozen=True)
class Sweep(Record):
    """SWEEP: one workload over the values of one parameter."""
    spec: str
    name: str
    key: str
    values: list[int]
    fixed: dict[str, int]
    workloads: list[str]        # its WORKLOADS entries, one a value


@dataclass(frozen=True)
class Calibration(Record):
    """CALIB: the windows injected, and into which cells' traced boots."""
    request: str
    windows: list[tuple[str, int]]      # (kind, us), in injection order
    workloads: list[str]                # CALIB_WORKLOADS: calib and workload entries


@dataclass(frozen=True)
class Cell(Record):
    variant: str
    workload: str               # a WORKLOADS entry, or CALIB_CELL


@dataclass(frozen=True)
class Boot(Record):
    """One boot of a cell: its kind (clean or traced) and repeat N, which
    is also the seed the guest gets; round: the round that planned it."""
    cell: Cell
    kind: str
    repeat: int
    round: int

    @property
    def path(self):
        """Its folder under the run's cells/."""
        return "%s/%s/%s/r%d" % (self.cell.variant, self.cell.workload, self.kind, self.repeat)


@dataclass(frozen=True)
class Round(Record):
    """A round of boots: repeats first..last of every cell (of the cells and
    boot kinds needs names, when it names any), why it was added, and the
    share of the budget used once it is done (1: the last round the budget
    allows). REPEAT=N is one round of N; REPEAT=auto adds rounds while its
    rule (analysis/mmlat/sequential.py) leaves a primary endpoint open,
    and the analysis looks at the data after each (the looks its verdicts
    replay: repeats last, budget spent)."""
    index: int
    first: int
    last: int
    reason: str
    spent: float = 1.0
    needs: dict[str, list[str]] = field(default_factory=dict)   # workload -> boot kinds

    def boots(self, workload, kinds):
        """The boot kinds of workload this round boots."""
        return [k for k in kinds if not self.needs or k in self.needs.get(workload, ())]


@dataclass(frozen=True)
class AutoRepeat:
    """REPEAT=auto's rounds, as analysis/mmlat/simulate.py simulated them: a
    first look at first repeats, then a look every step more, up to budget
    repeats (the last look spends the budget). The budget is the boots a
    side a primary endpoint's margin must settle in to be affordable
    (analysis/mmlat/endpoints.py)."""
    first: int = 6
    step: int = 2
    budget: int = 30

    def last(self, index):
        """The repeats done after round index (1 first)."""
        return min(self.first + (index - 1) * self.step, self.budget)

    def round(self, index, needs=None, reason="REPEAT=auto"):
        """Round index."""
        first = 1 if index == 1 else self.last(index - 1) + 1
        return Round(index=index, first=first, last=self.last(index), reason=reason,
                     spent=self.last(index) / self.budget, needs=needs or {})


AUTO = AutoRepeat()


@dataclass
class Plan(Record):
    """What a run boots. Round 1 starts with the calibration boots (one per
    variant with CALIB_WORKLOADS=calib, of the kind that carries the
    instrument's windows), then every round runs its repeats in order,
    each repeat every workload, each workload every variant, each variant
    its clean boot, then its traced one (where the instrument has one).
    trace and boots are TRACE's as resolved (resolve_trace)."""
    run_id: str
    variants: list[Variant]
    steps: list[Step]
    workloads: list[str]        # every WORKLOADS entry, SWEEP's included
    sweeps: list[Sweep]
    boots: list[str]            # the boot kinds of a cell, in order
    trace: str                  # TRACE resolved: a row of plan/instruments.py
    calibration: Calibration | None
    duration_s: int
    repeat: int | str           # REPEAT: N, or "auto"
    rounds: list[Round]
    flavor: str
    cross: bool
    executor: str

    @property
    def variant_names(self):
        return [v.name for v in self.variants]

    def calibrated(self, cell, kind):
        """Whether a boot of cell and kind gets CALIB's windows: the boots
        that carry the instrument's windows, which read them back."""
        return (self.calibration is not None and kind == self.instrument.windows_boot
                and cell.workload in self.calibration.workloads)

    @property
    def instrument(self):
        """TRACE's row of plan/instruments.py."""
        return instruments.of(self.trace)

    def resolve_trace(self, trace):
        """TRACE as the machine resolved it (TRACE=auto's row, or the value
        given): the plan's trace and its row's boot kinds, which meta.json
        records and every reader of the run takes from there."""
        self.trace, self.boots = trace, list(instruments.of(trace).boots)

    def instrument_of(self, boot):
        """The instrument whose windows and holds boot records (TRACE's
        value), "" for a boot that records none."""
        return self.trace if self.instrument.carries_windows(boot.kind) else ""

    def plugin(self, boot):
        """Whether QEMU loads the plugin into boot."""
        return self.instrument.qemu_plugin and self.instrument.carries_windows(boot.kind)

    def plugin_log_us(self, boot):
        """The plugin's log_us for boot: 0 (no event log) but in a
        calibrated boot, whose read-back is the log
        (analysis/mmlat/plugin_events.py): every window at least as long
        as the shortest injected one, which each injected window is."""
        if not self.calibrated(boot.cell, boot.kind):
            return 0
        return min(us for _, us in self.calibration.windows)

    def job(self, boot, values):
        """The guest job of one of its boots, with the guest knobs' values
        (values: every knob's, plan/knobs.py): the calibration boot runs
        the idle job; a boot runs the instrument in the guest only when the
        instrument lives there and the boot carries its windows."""
        name, _, params = boot.cell.workload.partition(":")
        if boot.cell.workload == CALIB_CELL:
            name, params = "idle", ""
        guest = {k.job_key: values[k.name] for k in knobs.KNOBS if k.job_key}
        guest["trace"] = self.trace if self.instrument.guest and self.instrument_of(boot) \
            else "none"
        return GuestJob(workload=name, params=params, knobs=guest, seed=boot.repeat,
                        calib=calib.guest_form(self.calibration.windows)
                        if self.calibrated(boot.cell, boot.kind) else "")

    def boots_of(self, rnd):
        """Every boot of round rnd, in the order they start."""
        out = []
        if rnd.index == 1 and self.calibration and CALIB_CELL in self.calibration.workloads:
            out += [Boot(Cell(v, CALIB_CELL), self.instrument.windows_boot, 1, 1)
                    for v in self.variant_names]
        for r in range(rnd.first, rnd.last + 1):
            out += [Boot(Cell(v, w), kind, r, rnd.index) for w in self.workloads
                    for v in self.variant_names for kind in rnd.boots(w, self.boots)]
        return out

    def all_boots(self):
        return [b for rnd in self.rounds for b in self.boots_of(rnd)]


@dataclass(frozen=True)
class GuestJob(Record):
    """The guest runner's job, one mmlat.KEY=VALUE a key on the kernel
    command line (an empty value is left out): the workload and its
    parameters, the guest knobs' job keys (plan/knobs.py), the seed, the
    calibration windows, and where the runner ships its results (empty:
    the host's own channel; console: a checked block on the serial
    console, for executors that keep only the console, orchestrator/lava/). KEYS
    are the job keys the runner allows (guest/runner.sh)."""
    workload: str               # a workload's name, or probe (bench/accel.sh)
    params: str                 # its parameters, KEY=VALUE,...
    knobs: dict[str, str]       # job key -> value, the registry's order
    seed: int                   # the repeat N
    calib: str                  # the windows, calib.guest_form
    results: str = ""           # "" or console

    def cmdline(self):
        pairs = [("workload", self.workload), ("params", self.params), *self.knobs.items(),
                 ("seed", self.seed), ("calib", self.calib), ("results", self.results)]
        return " ".join("mmlat.%s=%s" % kv for kv in pairs if kv[1] != "")


KEYS = ("workload", "params", *(k.job_key for k in knobs.KNOBS if k.job_key), "seed", "calib",
        "results")


@dataclass(frozen=True)
class Image(Record):
    """What a variant's boots booted: its kernel and its initramfs (the
    base image, and its guest modules when the run loads them)."""
    bzimage_sha256: str
    initrd_sha256: str


@dataclass(frozen=True)
class Versions(Record):
    """The versions of what, beside this repository and the QEMU meta.json
    names, decides a boot's numbers: the Debian packages of the compiler,
    linker and C library that build the kernels, drivers and guest
    modules, of every host file the guest image copies, of cpio, libelf
    and the system's QEMU (orchestrator/packages.py). Debian's archive
    keeps a suite's latest upload only, so another machine may get other
    versions: make reproduce names those that differ."""
    packages: dict[str, str] = field(default_factory=dict)     # package -> version


@dataclass
class Meta(Record):
    """meta.json: the plan, the knobs as given and what ran. Its keys are
    the plan's and these, flat."""
    plan: Plan
    knobs: dict[str, str]       # every run knob as given (plan/knobs.py)
    started: str
    accel: str                  # what ran: ACCEL=auto resolved
    smp: int
    jobs: int
    configs: dict[str, str]     # variant -> its config's sha256
    untested: dict[str, str]    # variant -> its version, of the versions mmlat is not tested on
    kernel_version: str         # the variants' kernel versions, space-separated
    initramfs_sha256: str
    qemu: str                   # the QEMU's --version line
    qemu_binary: str
    tools: str                  # cyclictest's and stress-ng's versions
    host_cpu: str
    host_cpus: int
    host_load_at_start: str
    # empty in the runs made before mmlat recorded them
    images: dict[str, Image] = field(default_factory=dict)     # variant -> what it booted
    versions: Versions = field(default_factory=Versions)
    mmlat_commit: str = ""      # mmlat's own commit, "-dirty" with uncommitted changes

    def to_json(self):
        doc = super().to_json()
        return dict(format=FORMAT, **doc.pop("plan"), **doc)

    @classmethod
    def from_json(cls, doc):
        check_format("meta.json", doc)
        plan_keys = {f.name for f in dataclasses.fields(Plan)}
        rest = {k: v for k, v in doc.items() if k not in plan_keys and k != "format"}
        return super().from_json(dict(rest, plan={k: doc[k] for k in plan_keys if k in doc}))


@dataclass(frozen=True)
class BootResult(Record):
    """How a boot ended, as its executor reports it (bench/qemu.sh's
    boot.json for the local one)."""
    status: str                 # ok | failed
    cause: str                  # why it failed; "" when ok
    wall_seconds: float
    guest_seconds_to_runner: float | None
    accel: str
    qemu_binary: str
    qemu: str
    qemu_cmdline: str
    device: str = ""            # what it ran on: the host, or the LAVA device


@dataclass
class CellRecord(Record):
    """cell.json: one boot, what booted it and how it ended."""
    boot: Boot
    calibrated: bool            # CALIB's windows were injected
    smp: int
    config_sha256: str
    series_sha256: str
    executor: str
    job_id: str
    result: BootResult
    # what recorded the boot's windows and holds: a TRACE value of
    # plan/instruments.py, "" none (a clean boot beside a traced one)
    instrument: str = ""

    def to_json(self):
        doc = super().to_json()
        boot, result = doc.pop("boot"), doc.pop("result")
        return dict(format=FORMAT, variant=boot["cell"]["variant"],
                    workload=boot["cell"]["workload"], boot=boot["kind"], repeat=boot["repeat"],
                    round=boot["round"], **doc, **result)

    @classmethod
    def from_json(cls, doc):
        check_format("cell.json", doc)
        doc = {k: v for k, v in doc.items() if k != "format"}
        result = {f.name: doc.pop(f.name) for f in dataclasses.fields(BootResult) if f.name in doc}
        boot = {"cell": {k: doc.pop(k) for k in ("variant", "workload") if k in doc}}
        boot.update((name, doc.pop(key)) for name, key in (
            ("kind", "boot"), ("repeat", "repeat"), ("round", "round")) if key in doc)
        return super().from_json(dict(doc, boot=boot, result=result))


@dataclass
class BuildRecord(Record):
    """build.json: a kernel, what it was built from and how."""
    variant: str
    series: list[str]           # as variants.conf names them
    series_sha256: str
    source: str
    kernel_version: str
    kernel_release: str
    config_sha256: str
    build_seconds: int
    ccache_hits: int
    ccache_misses: int
    obj_dir: str
    source_package: dict | None = None     # a packaged tree's package.json
    ksrc: str = ""              # a git source's tree, ref, commit and describe
    ref: str = ""
    commit: str = ""
    describe: str = ""

    def to_json(self):
        return dict(format=FORMAT, **super().to_json())

    @classmethod
    def from_json(cls, doc):
        check_format("build.json", doc)
        return super().from_json({k: v for k, v in doc.items() if k != "format"})


@dataclass
class JobRecord(Record):
    """A boot handed to an executor, kept in the boot's staging folder
    until the boot is recorded, so that a resumed run waits on or collects
    the job instead of submitting the boot again."""
    executor: str
    job_id: str
    boot: Boot
    attempt: int = 1            # submissions of this boot so far, this one included
    reasons: list[str] = field(default_factory=list)   # why earlier ones were submitted again


def check_format(what, doc):
    if doc.get("format") != FORMAT:
        raise RecordError("%s is of format %s; this version reads format %d"
                          % (what, doc.get("format", "3 or older (no \"format\")"), FORMAT))


def write(path, record):
    """record's JSON into path, whole or not at all (written beside it,
    then renamed)."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        json.dump(record.to_json(), f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def read(path, cls):
    with open(path) as f:
        return cls.from_json(json.load(f))
