"""The knob registry: every variable mmlat reads from its environment (or
make's command line), one row each, with its default, what it allows,
where it is read (scope: host, guest or both) and one line of help.

The Makefile's defaults and `make help` (build/knobs.mk, plan/render.py),
the orchestrator's entry checks, meta.json's "knobs" and the guest
runner's job keys, defaults and allowed values (/etc/mmlat/knobs.conf in
the guest image) all come from these rows; a unit test scans the code for
reads of the environment and finds each one here. Adding a knob is one
row (plus its code where it is used).

A default may name other knobs ({BUILD_DIR}) and the project's root
({ROOT}); {NOW} is the time the value is read (a new RUN_ID)."""
import os
import re
import time
from dataclasses import dataclass

from . import instruments

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST, GUEST, BOTH = "host", "guest", "both"


class KnobError(ValueError):
    """A knob's value is not allowed; the message names the knob, the value
    and what it takes."""

    def __init__(self, name, value, takes):
        super().__init__("%s='%s' is not allowed: %s takes %s" % (name, value, name, takes))


@dataclass(frozen=True)
class Choice:
    """One of a fixed list of words; values_of: a function of the other
    knobs' values giving the list instead (TREE: the versions a file
    lists)."""
    values: tuple = ()
    values_of: object = None

    def words(self, values):
        return tuple(self.values_of(values)) if self.values_of else self.values

    def takes(self, values):
        return "one of: " + " ".join(self.words(values))

    def ok(self, value, values):
        return value in self.words(values)


@dataclass(frozen=True)
class Integer:
    """A canonical decimal integer in lo..hi, or one of words; empty when
    empty is allowed."""
    lo: int
    hi: int
    words: tuple = ()
    empty: bool = False

    def takes(self, values):
        return "".join(w + " or " for w in self.words) + "an integer in %d..%d" % (self.lo, self.hi)

    def ok(self, value, values):
        if value in self.words or (self.empty and value == ""):
            return True
        return bool(re.fullmatch(r"0|[1-9][0-9]{0,8}", value)) and self.lo <= int(value) <= self.hi


@dataclass(frozen=True)
class Pattern:
    """A string matching a regular expression, described in words."""
    regex: str
    description: str

    def takes(self, values):
        return self.description

    def ok(self, value, values):
        return bool(re.fullmatch(self.regex, value))


@dataclass(frozen=True)
class Text:
    """Any string here; what it must be (a variant spec, a workload entry, a
    path) is checked where it is read, with a message of its own."""
    description: str

    def takes(self, values):
        return self.description

    def ok(self, value, values):
        return True


def kernel_source_versions(values):
    """TREE's allowed values: the versions KERNEL_SOURCES_CONF lists."""
    with open(values["KERNEL_SOURCES_CONF"]) as f:
        return [m.group(1) for m in (re.match(r"([0-9]+\.[0-9]+):", line) for line in f) if m]


@dataclass(frozen=True)
class Knob:
    name: str
    default: str
    allowed: object
    scope: str
    help: str
    run: bool = False       # a run's knob: checked at the entry, recorded in meta.json
    make: bool = True       # the Makefile sets its default (build/knobs.mk)
    job_key: str = ""       # its guest job key (mmlat.KEY=VALUE), scope guest or both
    # (default, allowed) of its job key where the host resolves the value
    # before a job carries it (TRACE=auto): the guest never sees the word
    guest: tuple = ()

    @property
    def guest_takes(self):
        """(default, allowed) of its job key in the guest runner."""
        return self.guest or (self.default, self.allowed)

    def takes(self, values):
        return self.allowed.takes(values)

    def check(self, value, values):
        """Raises KnobError unless value is allowed."""
        if not self.allowed.ok(value, values):
            raise KnobError(self.name, value, self.takes(values))


ANY = Text("any string")
PATH = Text("a path")

KNOBS = (
    # What a run compares.
    Knob("BASELINE", "baseline", ANY, HOST,
         "the baseline variant: a name of VARIANTS_CONF, name=part+part, or a ref of KSRC",
         run=True),
    Knob("PATCHED", "patched", ANY, HOST, "the patched variant, as BASELINE", run=True),
    Knob("VARIANTS", "{BASELINE} {PATCHED}",
         Text("variant specs: names of VARIANTS_CONF, name=[tree:VER|git:REF+]series-dir..., "
              "or refs of KSRC"), HOST,
         "the variants built and booted, in order", run=True),
    Knob("TREE", "6.1", Choice(values_of=kernel_source_versions), HOST,
         "Debian's linux-source-TREE, the source of every variant that names none", run=True),
    Knob("KSRC", "", Text("the path of a git tree (a clone of Linux)"), HOST,
         "a git tree whose refs are variants, read only; empty: none", run=True),
    Knob("CROSS", "no", Choice(("no", "yes")), HOST,
         "yes: the variants may be other kernel versions with other configs", run=True),
    Knob("STEPS", "all", Choice(("all", "each")), HOST,
         "each: also every patch of PATCHED beyond BASELINE (or commit of BASELINE..PATCHED) "
         "as a variant", run=True),
    # What each variant runs.
    Knob("WORKLOADS", "munmap exit truncate fork",
         Text("workload entries NAME or NAME:KEY=VALUE,... (bench/plan/workloads.py)"), HOST,
         "the workloads, one cell each", run=True),
    Knob("SWEEP", "", Text("sweeps NAME:KEY=V1,V2,...[,KEY=VALUE...]"), HOST,
         "one workload over the values of one parameter, appended to WORKLOADS", run=True),
    Knob("DURATION", "5", Integer(1, 3600), BOTH, "guest seconds each boot measures",
         run=True, job_key="duration"),
    Knob("SIZE_MIB", "16", Integer(1, 1024), BOTH,
         "the workload's region in MiB, where its own parameter s does not set it",
         run=True, job_key="size_mib"),
    Knob("REPEAT", "10", Integer(1, 1000, words=("auto",)), HOST,
         "boots a side of each cell (their seeds 1..REPEAT); auto: rounds of boots until the "
         "rule of analysis/mmlat/sequential.py decides every primary endpoint", run=True),
    Knob("TRACE", instruments.AUTO, Choice((instruments.AUTO,) + instruments.NAMES), BOTH,
         "what records windows and lock holds (bench/plan/instruments.py): windows, the window "
         "module in a traced boot; plugin, the QEMU plugin in the clean boot (tcg-icount, one "
         "vCPU); none: clean boots only; " + instruments.AUTO_HELP, run=True, job_key="trace",
         guest=("windows", Choice(instruments.NAMES))),
    Knob("CALIB", "", Text("windows KIND[/KIND...]:US[/US...][xROUNDS],..."), HOST,
         "windows of known length injected into the traced boots of CALIB_WORKLOADS",
         run=True, make=False),
    Knob("CALIB_WORKLOADS", "idle", Text("calib or workloads of WORKLOADS"), HOST,
         "where CALIB goes; calib: one calibration boot per variant, first", run=True, make=False),
    Knob("CALIB_BENCH", "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000",
         Text("a CALIB"), HOST, "make bench's CALIB, in one idle boot per variant"),
    Knob("CALIB_CALIBRATE", "preempt/irq/spin/ptl/ptl_nested:10/20/50/100/200/500/1000/2000/5000x3",
         Text("a CALIB"), HOST, "make calibrate's CALIB"),
    Knob("CALIB_CALIBRATE_WORKLOADS", "idle munmap", Text("workloads"), HOST,
         "make calibrate's CALIB_WORKLOADS"),
    # How the boots run.
    Knob("ACCEL", "auto", Choice(("auto", "kvm", "tcg-icount", "tcg-mt")), HOST,
         "the accelerator; auto: kvm if a probe boot reaches the runner, else tcg-icount",
         run=True),
    Knob("SMP", "", Integer(1, 64, empty=True), HOST,
         "vCPUs; empty: 1 under tcg-icount, else 2", run=True),
    Knob("JOBS", "auto", Integer(1, 64, words=("auto",)), HOST,
         "guests booted at once; auto: one per core under tcg-icount as memory allows, else 1",
         run=True),
    Knob("EXECUTOR", "local", Choice(("local", "lava-local", "lava")), HOST,
         "what boots the guests: local, bench/qemu.sh on this machine; lava-local, a LAVA job "
         "a boot through lava-run on this machine; lava, a LAVA job a boot on a server "
         "(lavacli identity LAVA_IDENTITY)", run=True),
    Knob("LAVA_DEVICE_TYPE", "qemu", Pattern(r"[A-Za-z0-9][A-Za-z0-9_.-]*", "a device type's name"),
         HOST, "EXECUTOR=lava-local and lava: the device type of every job (qemu: a QEMU job; "
         "another: a bare-metal x86 job, tftp and ipxe)", run=True),
    Knob("LAVA_TAGS", "", Pattern(r"([A-Za-z0-9][A-Za-z0-9_.:+-]*( |$))*",
                                  "device tags, separated by spaces"), HOST,
         "EXECUTOR=lava-local and lava: the tags every job carries, so that both variants run on one device "
         "(a tag only it has) or one kind of device", run=True),
    Knob("LAVA_IDENTITY", "mmlat-local", ANY, HOST,
         "EXECUTOR=lava: the lavacli identity (~/.config/lavacli.yaml) jobs are submitted as "
         "(lava/server.sh's user: mmlat-local)", run=True),
    Knob("ICOUNT_SHIFT", "3", Integer(0, 10), HOST,
         "tcg-icount: 2^ICOUNT_SHIFT ns of guest time per instruction", run=True),
    Knob("GUEST_MEM_MIB", "1024", Integer(256, 65536), HOST, "each guest's memory", run=True),
    Knob("CELL_TIMEOUT", "", Integer(1, 86400, empty=True), HOST,
         "wall seconds a boot may take; empty: DURATION * 20 + 240", run=True),
    Knob("ICOUNT_QEMU", "", PATH, HOST,
         "the QEMU of every tcg-icount boot (SMP>1: 8.1 or later); empty: the pinned "
         "bookworm-backports build bench/icount-qemu.sh provisions", run=True),
    Knob("KVM_PROBE_TIMEOUT", "60", Integer(1, 3600), HOST,
         "seconds ACCEL=auto's KVM probe boot may take", make=False),
    Knob("BOOT_FREE_MIB", "64", Integer(1, 1 << 20), HOST,
         "MiB free under RESULTS_DIR below which no boot starts", run=True),
    Knob("FLAVOR", "bench", Choice(("bench", "check", "hw")), HOST,
         "check: kernels with lockdep, DEBUG_ATOMIC_SLEEP and DEBUG_VM (make check-kernels); "
         "hw: for real x86-64 machines (x86_64_defconfig + lava/x86-hw.config)",
         run=True, make=False),
    Knob("STRICT", "0", Choice(("0", "1")), HOST, "1: a failed boot fails the run",
         run=True, make=False),
    # Where things go.
    Knob("RUN_ID", "{NOW}", Pattern(r"[A-Za-z0-9_][A-Za-z0-9._:+-]*",
                                    "letters, digits and . _ : + - (not first: . : + -)"),
         HOST, "the run's folder under RESULTS_DIR; a stopped run resumes under its RUN_ID",
         run=True),
    Knob("RESULTS_DIR", "{ROOT}/results", PATH, HOST, "where runs go", run=True),
    Knob("RUN", "", PATH, HOST,
         "the run make report and make compare read; empty: the latest", make=False),
    Knob("BUILD_DIR", "{ROOT}/build", PATH, HOST,
         "sources, trees, kernels and images (shared by runs: builds take turns)"),
    Knob("CCACHE_DIR", "{BUILD_DIR}/ccache", PATH, HOST, "ccache's folder", make=False),
    Knob("CCACHE_MAXSIZE", "5G", ANY, HOST, "ccache's size limit", make=False),
    Knob("PYTHON", "/usr/bin/python3", PATH, HOST,
         "Debian's interpreter (the analysis uses Debian's numpy and matplotlib)"),
    # Safety boots, make check-kernels.
    Knob("CHECK_VARIANTS", "baseline patched", ANY, HOST, "make check-kernels' variants"),
    Knob("CHECK_WORKLOADS",
         "munmap exit truncate fork mixed imap:n=64,s=1 reclaim:k=8 anonchain:D=8", ANY, HOST,
         "make check-kernels' workloads"),
    Knob("CHECK_DURATION", "3", Integer(1, 3600), HOST, "make check-kernels' DURATION"),
    # The forward-progress boot after those: imap's two direct-I/O writers
    # of one zram device, mapped 128 times by each, unmap it at once, so
    # that the i_mmap lockbreak's restarts run against each other
    # (pre-series 0003, unmap_mutex); a walk that stops making progress
    # hangs the boot, which CELL_TIMEOUT then fails. One vCPU only
    # interleaves the writers: their unmaps overlap from two on.
    Knob("CHECK_SMP", "2", Integer(2, 64), HOST,
         "vCPUs of make check-kernels' forward-progress boot"),
    Knob("CHECK_SMP_WORKLOADS", "imap:n=128,s=1,w=2", ANY, HOST,
         "make check-kernels' workloads at CHECK_SMP vCPUs"),
    # Debian's archive.
    Knob("DEBIAN_MIRROR", "http://deb.debian.org/debian", ANY, HOST,
         "Debian's archive, for kernel sources and the icount QEMU", make=False),
    Knob("DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security", ANY, HOST,
         "Debian's security archive", make=False),
    Knob("DEBIAN_KEYRING", "/usr/share/keyrings/debian-archive-keyring.gpg", PATH, HOST,
         "the key Debian's archive is checked against", make=False),
    # The LAVA server of EXECUTOR=lava's end-to-end test (lava/server.sh).
    Knob("LAVA_SERVER_DIR", "", PATH, HOST,
         "its state (database, logs, job outputs); empty: BUILD_DIR/lava-server", make=False),
    Knob("LAVA_SERVER_PORT", "8711", Integer(1024, 65533), HOST,
         "its HTTP port; the publisher takes the next, its event socket the one after",
         make=False),
    Knob("LAVA_PG_PORT", "5433", Integer(1024, 65535), HOST, "its PostgreSQL port", make=False),

    Knob("LAVA_QEMU_DEVICES", "", Text("empty or a count"), HOST,
         "QEMU devices on its worker; empty: one per core", make=False),
    # Test hooks: the project's own files, replaced by a test's.
    Knob("VARIANTS_CONF", "{ROOT}/bench/variants.conf", PATH, HOST,
         "the variants' names", make=False),
    Knob("PATCHES_DIR", "{ROOT}/patches", PATH, HOST, "where series directories are",
         make=False),
    Knob("CONFIG_FRAGMENT", "{ROOT}/bench/config/mmlat.config", PATH, HOST,
         "the bench kernels' config fragment", make=False),
    Knob("KERNEL_SOURCES_CONF", "{ROOT}/bench/kernel-sources.conf", PATH, HOST,
         "the kernel sources TREE may name and their suites", make=False),
    Knob("INSTRUMENTATION_SERIES", "", Text("series directories"), HOST,
         "the series every variant carries first; unset: its version's (preemptirq-trace "
         "on 6.1)", make=False),
    Knob("MMLAT_CMDLINE", "/proc/cmdline", PATH, GUEST,
         "where the guest runner reads its job (a test's file on the host)", make=False),
    Knob("MMLAT_KNOBS", "/etc/mmlat/knobs.conf", PATH, GUEST,
         "the guest runner's knobs (a test's file on the host)", make=False),
    Knob("MMLAT_WORKLOADS", "/etc/mmlat/workloads.conf", PATH, GUEST,
         "the guest runner's workloads (a test's file on the host)", make=False),
    Knob("MMLAT_RUNNER_LIB", "0", Choice(("0", "1")), GUEST,
         "1: the guest runner defines its functions only (the host's tests)", make=False),
    Knob("MMLAT_CONSOLE_RESULTS_LIB", "0", Choice(("0", "1")), GUEST,
         "1: guest/console-results.sh defines its functions only (the host's tests)",
         make=False),
)

BY_NAME = {k.name: k for k in KNOBS}


def knob(name):
    return BY_NAME[name]


def _expand(template, values):
    return template.format(ROOT=ROOT, NOW=time.strftime("%Y%m%d-%H%M%S"), **values)


def read(environ):
    """Every knob's value: the environment's, else its default. A default
    names only knobs of earlier rows. INSTRUMENTATION_SERIES is absent
    unless set (unset and empty differ: empty is no series)."""
    values = {}
    for k in KNOBS:
        if k.name in environ:
            values[k.name] = environ[k.name]
        elif k.name != "INSTRUMENTATION_SERIES":
            values[k.name] = _expand(k.default, values)
    return values


def run_knobs(values):
    """The run's knobs as given, for meta.json."""
    return {k.name: values[k.name] for k in KNOBS if k.run}


def check(values, names=None):
    """Raises KnobError for the first knob (of names, default every run
    knob) whose value is not allowed."""
    for k in KNOBS:
        if (k.name in names) if names else k.run:
            k.check(values[k.name], values)
