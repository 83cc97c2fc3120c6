"""What a run's boots run on: the accelerator (ACCEL=auto: bench/accel.sh's
probe boot), the vCPUs, the QEMU, how many guests at once, and the
instrument that records windows and holds (TRACE=auto, which depends on
the first two)."""
import os
from dataclasses import dataclass

from plan import instruments, knobs

from . import qemu
from .children import output
from .say import Refused, log

ACCEL_SH = os.path.join(knobs.ROOT, "bench/accel.sh")
# What QEMU itself takes beside a guest's memory, per guest (JOBS=auto).
QEMU_OWN_MIB = 256


@dataclass(frozen=True)
class Machine:
    accel: str
    smp: int
    qemu_binary: str
    qemu: str                   # its --version line
    jobs: int
    trace: str = ""             # TRACE resolved (plan/instruments.py resolve)


def accelerator(values, kernel, initrd):
    if values["ACCEL"] != "auto":
        return values["ACCEL"]
    if values["EXECUTOR"] != "local":
        # a LAVA executor's QEMU jobs (entry.check_lava)
        return "tcg-icount"
    return output(["bash", ACCEL_SH, os.path.dirname(kernel), initrd]).strip()


def _mem_available_mib():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def jobs(values, accel):
    """Guests at once. Under icount a guest's clock is its own instruction
    count, so guests on different host cores do not disturb each other's
    numbers; each is one host thread with GUEST_MEM_MIB and QEMU's own.
    Under kvm and tcg-mt guest time is host time: auto runs one at a
    time."""
    if values["JOBS"] != "auto":
        n = int(values["JOBS"])
        if n > 1 and accel != "tcg-icount":
            log("warning: JOBS=%d under %s: guests keep the host's time, and %d of them share "
                "its cores" % (n, accel, n))
        return n
    if accel != "tcg-icount":
        return 1
    by_memory = _mem_available_mib() // (int(values["GUEST_MEM_MIB"]) + QEMU_OWN_MIB)
    return max(1, min(os.cpu_count(), by_memory))


def resolve(values, kernel, initrd):
    """The Machine, once the base image is made (the probe boots it);
    TRACE resolved here, once, right after ACCEL and SMP, which it
    depends on. An explicit TRACE=plugin the machine cannot run is
    refused (ACCEL=auto's probe may have chosen kvm)."""
    accel = accelerator(values, kernel, initrd)
    # icount runs every vCPU on one host thread, each a share of the
    # virtual time: it defaults to one vCPU, the other modes to 2.
    smp = int(values["SMP"] or (1 if accel == "tcg-icount" else 2))
    trace = instruments.resolve(values["TRACE"], accel, smp, values["EXECUTOR"],
                                values["ICOUNT_QEMU"])
    binary = qemu.SYSTEM
    if instruments.of(trace).qemu_plugin and (accel != "tcg-icount" or smp != 1):
        raise Refused("TRACE=%s: the plugin runs under tcg-icount with one vCPU, not %s "
                      "with %d" % (trace, accel, smp))
    # a LAVA server's jobs run its devices' QEMU, named in each boot's record
    if accel == "tcg-icount" and values["EXECUTOR"] != "lava":
        binary, why = qemu.icount_qemu(smp)
        if why:
            raise Refused("SMP=%d with ACCEL=tcg-icount: %s" % (smp, why))
    if values["TRACE"] == instruments.AUTO:
        log("instrument: TRACE=auto is %s (%s, %d vCPU)" % (trace, accel, smp))
    return Machine(accel=accel, smp=smp, qemu_binary=binary, qemu=qemu.version_line(binary),
                   jobs=jobs(values, accel), trace=trace)
