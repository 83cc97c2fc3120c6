"""LAVA job definitions of mmlat's boots, one job a boot (an executor's
BootJob, orchestrator/executor.py).

One job a boot, not a cell's clean and traced pair: a boot is what the
scheduler submits, fails, times out and resumes, so a traced boot that
hangs or a fault of the lab costs that boot rather than its pair, the two
boots of a cell may run on two workers at once, and each job's timeout is
the boot's. What a pair would save, one download of the kernel and
initramfs, is a file copy on a worker's disk.

A QEMU job boots the bzImage and initramfs under TCG with icount, as
bench/qemu.sh does; its runner prints its results on the serial console
(mmlat.results=console, guest/console-results.sh), since LAVA deletes a job's
disks. A bare-metal x86 job boots the same pair over iPXE and TFTP."""
import dataclasses
import os
import re
from dataclasses import dataclass
from urllib.parse import urlparse

import yaml

# Under icount a guest's numbers depend on neither the worker nor its load,
# only on the QEMU build; kvm and tcg-mt guests keep the worker's time,
# which a lab shares between jobs: hardware figures come from a bare-metal
# job instead.
QEMU_ACCELS = ("tcg-icount",)
# Seconds a job may take beyond its boot: fetching the kernel and initramfs
# onto the worker, and LAVA's own start and finish.
DEPLOY_S = 300
JOB_SLACK_S = 120
# iPXE, DHCP and TFTP on a real machine, after its firmware's power-on.
BARE_METAL_BOOT_S = 600
# The runner's markers (guest/runner.sh, guest/console-results.sh).
RUNNER_LINE = "mmlat-runner: "
RESULTS_BEGIN = (r"mmlat-(?P<test_case_id>results): begin v1 tar\.bz2\.base64 "
                 r"bytes=(?P<measurement>\d+)")
# The whole end line, its line break included: LAVA logs the console a line
# at a time, a line once its break is read, and stops reading when the
# monitor's end matches. (QEMU's stdio ends a line with CR LF, which the pty
# LAVA reads it through makes CR CR LF.)
RESULTS_END = r"mmlat-results: end bytes=\d+ sha256=[0-9a-f]{64}\r*\n"
# What the guest's command line has after its console (bench/qemu.sh),
# before the runner's job keys: a panic or oops ends the VM at once, and
# only warnings reach the console.
GUEST_ARGS = "panic=-1 oops=panic quiet loglevel=4"
# Characters a job's kernel command line cannot carry: LAVA joins QEMU's
# arguments into one string that it splits again like a shell, and iPXE
# takes its script a line at a time.
_UNSAFE = re.compile(r"[\"'\\\n\r$`]")
# LAVA's limit on a job's name.
NAME_MAX = 200


class JobError(ValueError):
    """A boot that no LAVA job can carry; the message says why."""


@dataclass(frozen=True)
class Target:
    """Where a run's jobs go (LAVA_DEVICE_TYPE, LAVA_TAGS): every job of a
    run carries the same device type and tags, so that baseline and
    patched run on one kind of device, or on one device when a tag names
    it (a lab's admin gives each device its tags; a tag unique to one
    device pins the run to it)."""
    device_type: str = "qemu"
    tags: tuple = ()
    priority: str = "medium"
    visibility: str = "public"


def guest_job(job):
    """The guest job of a LAVA boot: the runner prints its results on the
    console, the one channel LAVA keeps."""
    return dataclasses.replace(job.job, results="console")


def guest_cmdline(job):
    """The guest kernel's command line after its console: bench/qemu.sh's,
    with the runner's job."""
    args = guest_job(job).cmdline()
    if _UNSAFE.search(args):
        raise JobError("boot %s: its job '%s' has quotes, backslashes, $ or line breaks, which "
                       "a LAVA job's command line cannot carry" % (job.boot.path, args))
    return "%s%s %s" % (GUEST_ARGS, " tsc=reliable" if job.smp > 1 else "", args)


def job_name(job):
    name = "mmlat %s %s" % (job.run_id, job.boot.path)
    if len(name) > NAME_MAX:
        raise JobError("job name '%s' is longer than LAVA's %d characters" % (name, NAME_MAX))
    return name


def metadata(job):
    return {
        "mmlat.run": job.run_id,
        "mmlat.variant": job.boot.cell.variant,
        "mmlat.workload": job.boot.cell.workload,
        "mmlat.boot": job.boot.kind,
        "mmlat.seed": str(job.job.seed),
    }


def artifact(location, sha256, extra):
    """A deploy image: a path on the worker becomes a file:// URL."""
    url = location if urlparse(location).scheme else "file://" + os.path.abspath(location)
    image = {"url": url}
    if sha256:
        image["sha256sum"] = sha256
    image.update(extra)
    return image


def monitor(job):
    """Watch the console from the runner's first line to the end of its
    results block; the block's size is the job's one test case."""
    return {"test": {
        "timeout": {"seconds": job.timeout_s},
        "monitors": [{"name": "mmlat", "start": RUNNER_LINE, "end": RESULTS_END,
                      "pattern": RESULTS_BEGIN}],
    }}


def _common(job, target, boot_s):
    """What every job has; boot_s: the seconds a device takes, beyond the
    boot's own timeout, to reach the kernel."""
    definition = {
        "job_name": job_name(job),
        "device_type": target.device_type,
        "priority": target.priority,
        "visibility": target.visibility,
        "metadata": metadata(job),
        # the wait for the runner's first line is a connection timeout
        "timeouts": {
            "job": {"seconds": DEPLOY_S + boot_s + job.timeout_s + JOB_SLACK_S},
            "connection": {"seconds": job.timeout_s},
        },
    }
    if target.tags:
        definition["tags"] = list(target.tags)
    return definition


# bench/qemu.sh's RTC: a fixed date on the virtual clock. On the host's
# clock its date seeds the guest's RNG, and its update cycle, which the
# kernel waits out at boot, falls at a host-timed point.
RTC = "-rtc base=2000-01-01T00:00:00,clock=vm"


def qemu_options(job):
    """What the job adds to the device type's QEMU command: bench/qemu.sh's
    accelerator, vCPUs, RTC, no default devices, no reboot, and the serial
    port on QEMU's stdio, which LAVA reads."""
    return ["-accel tcg", "-icount shift=%d,sleep=off" % job.icount_shift, "-smp %d" % job.smp,
            RTC, "-nodefaults", "-no-reboot", "-serial stdio"]


def qemu_job(job, target, sums=None):
    """A job booting job (a BootJob) in QEMU on a device of LAVA's qemu
    device type; sums: the images' sha256 by name (kernel, initrd), for
    LAVA to check after its download."""
    if job.accel not in QEMU_ACCELS:
        raise JobError("boot %s: a LAVA QEMU job runs %s, not %s (a kvm or tcg-mt guest keeps "
                       "the worker's time, which a lab shares)"
                       % (job.boot.path, " ".join(QEMU_ACCELS), job.accel))
    sums = sums or {}
    definition = _common(job, target, 0)
    definition["context"] = {"arch": "x86_64", "no_kvm": True, "memory": job.memory_mib,
                             "extra_options": qemu_options(job)}
    append = "console=ttyS0 " + guest_cmdline(job)
    definition["actions"] = [
        {"deploy": {
            "to": "tmpfs",
            "timeout": {"seconds": DEPLOY_S},
            "images": {
                "kernel": artifact(job.kernel, sums.get("kernel"),
                                   {"image_arg": '-kernel {kernel} -append "%s"' % append}),
                "initrd": artifact(job.initrd, sums.get("initrd"),
                                   {"image_arg": "-initrd {initrd}"}),
            },
        }},
        # QEMU's start; the test action reads its console, with the boot's
        # timeout (LAVA also waits up to this long for each console line)
        {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"seconds": job.timeout_s}}},
        monitor(job),
    ]
    return definition


def x86_job(job, target, sums=None):
    """A job booting job on a bare-metal x86-64 machine of an x86 device
    type (lava-server's x86.jinja2): the kernel and initramfs over TFTP,
    booted by iPXE, with as many CPUs as the run's vCPUs."""
    sums = sums or {}
    definition = _common(job, target, BARE_METAL_BOOT_S)
    definition["context"] = {"extra_kernel_args": "nr_cpus=%d %s" % (job.smp, guest_cmdline(job))}
    definition["actions"] = [
        {"deploy": {
            "to": "tftp",
            "timeout": {"seconds": DEPLOY_S},
            "kernel": artifact(job.kernel, sums.get("kernel"), {}),
            # the initramfs as mmlat built it: no LAVA overlay or modules
            "ramdisk": artifact(job.initrd, sums.get("initrd"),
                                {"install_overlay": False, "install_modules": False}),
        }},
        {"boot": {"method": "ipxe", "commands": "ramdisk",
                  "timeout": {"seconds": BARE_METAL_BOOT_S}}},
        monitor(job),
    ]
    return definition


def check(definition):
    """definition against LAVA's job schema (Debian's lava-common); raises
    JobError naming what is wrong."""
    from lava_common.schemas import validate
    from voluptuous import Invalid
    try:
        validate(definition, strict=True)
    except Invalid as e:
        raise JobError("job '%s' does not pass LAVA's schema: %s"
                       % (definition.get("job_name"), e)) from None


def to_yaml(definition):
    return yaml.safe_dump(definition, sort_keys=False, default_flow_style=False, width=10**4)
