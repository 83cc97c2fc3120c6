"""The instrument registry: one row per TRACE value, saying which boots a
cell gets, which of them carries the preempt-off and irq-off windows and
the lock holds, and what records them.

The knob registry takes TRACE's values from these rows; the plan, the
executor's boot jobs and every boot's cell.json ("instrument") follow
them, and the analysis reads each figure from the boot kind figure_boot
names. Adding an instrument is one row plus the code that runs it.

TRACE=auto (its default) is no row: resolve() makes it one, once the
accelerator and the vCPUs are known (orchestrator/machine.py)."""
from dataclasses import dataclass

CLEAN, TRACED = "clean", "traced"
# The figures of a report, each read from one boot kind.
FIGURES = ("latency", "throughput", "windows", "locks", "counters", "calib")


@dataclass(frozen=True)
class Instrument:
    name: str                   # TRACE's value
    boots: tuple                # a cell's boot kinds, in order
    windows_boot: str           # the boot kind whose windows and holds are read; "" none
    guest: bool                 # it runs inside the kernel under test (guest/runner.sh)
    qemu_plugin: bool           # QEMU loads plugin/ into windows_boot's boots
    dumps: str                  # its windows.txt and locks.txt, under a boot's folder
    describes: str              # what records the windows, for the report

    @property
    def figure_boot(self):
        """{figure: the boot kind it comes from}: latency and work from the
        clean boots; what only an instrument sees from the boot it ran in.
        Where the instrument perturbs nothing, one boot gives both."""
        windows = self.windows_boot or TRACED
        return {f: CLEAN if f in ("latency", "throughput") else windows for f in FIGURES}

    def carries_windows(self, kind):
        """Whether boots of kind hold this instrument's windows."""
        return bool(self.windows_boot) and kind == self.windows_boot


INSTRUMENTS = (
    Instrument("windows", (CLEAN, TRACED), TRACED, True, False, "guest/windows",
               "the window module (guest/modules/mmlat_windows) in traced boots"),
    Instrument("max", (CLEAN, TRACED), TRACED, True, False, "guest/windows",
               "ftrace's preemptoff and irqsoff max tracers in traced boots"),
    Instrument("full", (CLEAN, TRACED), TRACED, True, False, "guest/windows",
               "ftrace's hist triggers and max tracers in traced boots"),
    Instrument("plugin", (CLEAN,), CLEAN, False, True, "plugin",
               "the QEMU plugin (plugin/), outside the guest"),
    Instrument("none", (CLEAN,), "", False, False, "", "nothing: clean boots only"),
)

BY_NAME = {i.name: i for i in INSTRUMENTS}
NAMES = tuple(BY_NAME)
AUTO = "auto"
AUTO_HELP = ("auto: plugin where it can run (ACCEL resolves to tcg-icount, one vCPU, the local "
             "executor and the pinned QEMU: ICOUNT_QEMU empty), else windows")


def resolve(trace, accel, smp, executor, icount_qemu):
    """TRACE's row name: trace itself unless it is auto; auto is the
    plugin where it can run, since there one boot a repeat gives latency,
    work, windows and holds of the same unperturbed kernel, else the
    window module. The plugin needs icount's clock and one vCPU
    (plugin/README.md), QEMU's -plugin on this machine (a LAVA job's QEMU
    loads none) and the QEMU its header was taken from (the pinned one)."""
    if trace != AUTO:
        return trace
    if accel == "tcg-icount" and smp == 1 and executor == "local" and not icount_qemu:
        return "plugin"
    return "windows"


def of(trace):
    """TRACE's row."""
    return BY_NAME[trace]
