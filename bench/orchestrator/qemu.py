"""The QEMU a run's boots use: under tcg-icount the one bench/icount-qemu.sh
picks (ICOUNT_QEMU, else the pinned bookworm-backports build, which it
provisions), under kvm and tcg-mt the system's."""
import subprocess

from plan import knobs

from .children import guarded

ICOUNT_SCRIPT = knobs.ROOT + "/bench/icount-qemu.sh"
SYSTEM = "qemu-system-x86_64"


def icount_command(smp):
    """(command, None) of the QEMU of icount boots with smp vCPUs, its
    binary and then its own options (the pinned build's -L folders), or
    (None, why)."""
    proc = subprocess.run(["bash", ICOUNT_SCRIPT, "check", str(smp)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no QEMU"
        return None, why.removeprefix("mmlat: error: ")
    return proc.stdout.rsplit(" (QEMU ", 1)[0].split(), None


def icount_qemu(smp):
    """(binary, None) of the QEMU of icount boots with smp vCPUs, or (None,
    why)."""
    command, why = icount_command(smp)
    return (command[0] if command else None), why


def provision():
    guarded(["bash", ICOUNT_SCRIPT, "provision"], stdout=subprocess.DEVNULL)


def version_line(binary):
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return proc.stdout.splitlines()[0] if proc.stdout else ""
