"""The QEMU a run's boots use: the system's, or for SMP>1 under tcg-icount
the one bench/qemu-smp.sh picks (ICOUNT_SMP_QEMU, else the system's if new
enough, else bookworm-backports', which it provisions)."""
import subprocess

from plan import knobs

from .children import guarded, output

SMP_SCRIPT = knobs.ROOT + "/bench/qemu-smp.sh"
SYSTEM = "qemu-system-x86_64"


def smp_icount(smp, accel):
    """Whether SMP vCPUs under ACCEL need bench/qemu-smp.sh's QEMU."""
    return smp not in ("", "1") and accel == "tcg-icount"


def smp_qemu():
    """(binary, None) of the QEMU for SMP under icount, or (None, why)."""
    proc = subprocess.run(["bash", SMP_SCRIPT, "check"], capture_output=True, text=True)
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no QEMU"
        return None, why.removeprefix("mmlat: error: ")
    return proc.stdout.split()[0], None


def plugin_qemu():
    """The QEMU that loads the plugin, provisioned: bench/qemu-smp.sh's
    bookworm-backports QEMU, whose qemu-plugin.h plugin/build.sh builds
    the plugin with."""
    return output(["bash", SMP_SCRIPT, "provision"]).strip().splitlines()[-1]


def provision():
    guarded(["bash", SMP_SCRIPT, "provision"], stdout=subprocess.DEVNULL)


def version_line(binary):
    proc = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return proc.stdout.splitlines()[0] if proc.stdout else ""
