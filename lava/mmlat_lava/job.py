"""LAVA job definitions for mmlat's boots.

One job per boot (not per cell's clean and traced pair): a boot is what
the runner measures, fails, times out and is resumed as (cells/<variant>/
<workload>/<boot>/r<N>), so a traced boot that hangs or an infrastructure
fault costs one boot rather than its pair, the two boots of a cell may run
on two workers at once, and each job's timeout is today's cell timeout.
What a pair would save, one download of the kernel and initrd, is a file
copy on a worker's disk.

A QEMU job boots the bzImage and initramfs under TCG with icount, as
bench/qemu.sh does, and its runner prints its results on the serial console
(mmlat.ship=console, guest/console-results.sh), since LAVA deletes a job's
disks. A bare-metal x86 job boots the same pair over iPXE and TFTP.
"""
import dataclasses
import json
import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

import yaml

BOOT_KINDS = ("clean", "traced")
# Under icount a guest's numbers do not depend on the worker or its load,
# only on the QEMU build; kvm and tcg-mt guests keep the worker's time,
# which a lab shares between jobs: a hardware figure comes from a bare-metal
# job instead.
QEMU_ACCELS = ("tcg-icount",)
# A bare-metal boot's "accelerator": the machine itself.
HARDWARE = "hw"
# Seconds a job may take beyond its boot: fetching the kernel and initrd
# onto the worker, and LAVA's own start and finish.
DEPLOY_S = 300
JOB_SLACK_S = 120
# iPXE, DHCP and TFTP on a real machine, after its firmware's power-on.
BARE_METAL_BOOT_S = 600
# The runner's markers (guest/runner.sh, guest/console-results.sh).
RUNNER_LINE = "mmlat-runner: "
RESULTS_BEGIN = r"mmlat-(?P<test_case_id>results): begin v1 tar\.bz2\.base64 bytes=(?P<measurement>\d+)"
# The whole end line, its line break included: LAVA logs the console a
# line at a time, a line once its break is read, and stops reading when
# the monitor's end matches. (QEMU's stdio ends a line with CR LF, which
# the pty LAVA reads it through makes CR CR LF.)
RESULTS_END = r"mmlat-results: end bytes=\d+ sha256=[0-9a-f]{64}\r*\n"
# What the guest's command line always has after its console
# (bench/qemu.sh), before the runner's job keys: a panic or oops ends the
# VM at once, and only warnings reach the console.
GUEST_ARGS = "panic=-1 oops=panic quiet loglevel=4"
# Characters a job's kernel command line cannot carry: LAVA joins QEMU's
# arguments into one string that it splits again like a shell, and iPXE
# takes its script a line at a time.
_UNSAFE = re.compile(r"[\"'\\\n\r$`]")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._:+=,@-]*$")


def cell_timeout_s(duration_s):
    """The orchestrator's wall-time limit of one boot (CELL_TIMEOUT unset:
    bench/orchestrator/scheduler.py)."""
    return duration_s * 20 + 240


@dataclass(frozen=True)
class BootSpec:
    """One boot of a run, as the orchestrator plans it."""
    run_id: str
    variant: str
    workload: str           # the cell: a WORKLOADS entry (imap:n=16,s=1) or calib
    boot: str               # clean | traced
    repeat: int             # r<N>: the seed the runner is given (mmlat.seed)
    kernel: str             # the bzImage: a path on the worker, or a URL
    initrd: str             # the initramfs: a path on the worker, or a URL
    job_args: str           # the runner's job keys, as the orchestrator passes them to bench/qemu.sh
    duration_s: int         # DURATION
    smp: int = 1
    memory_mib: int = 1024  # GUEST_MEM_MIB
    accel: str = "tcg-icount"
    icount_shift: int = 3   # ICOUNT_SHIFT
    timeout_s: int = None   # CELL_TIMEOUT; None: cell_timeout_s(duration_s)
    kernel_sha256: str = None   # checked by LAVA after download, when given
    initrd_sha256: str = None

    def __post_init__(self):
        for name in ("run_id", "variant", "workload"):
            if not _NAME.match(getattr(self, name)):
                raise ValueError("%s '%s': letters, digits and . _ : + = , @ - only"
                                 % (name, getattr(self, name)))
        if self.boot not in BOOT_KINDS:
            raise ValueError("boot '%s': one of %s" % (self.boot, ", ".join(BOOT_KINDS)))
        if self.accel not in QEMU_ACCELS + (HARDWARE,):
            raise ValueError("accel '%s': LAVA jobs run %s, or %s on bare metal (a kvm or tcg-mt guest keeps "
                             "the worker's time, which a lab shares; run a bare-metal job for hardware figures)"
                             % (self.accel, ", ".join(QEMU_ACCELS), HARDWARE))
        for name in ("repeat", "duration_s", "smp", "memory_mib"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError("%s %r: a positive integer" % (name, getattr(self, name)))
        if self.timeout_s is not None and self.timeout_s < 1:
            raise ValueError("timeout_s %r: a positive integer" % self.timeout_s)
        if _UNSAFE.search(self.job_args):
            raise ValueError("job_args '%s': no quotes, backslashes, $ or line breaks" % self.job_args)
        if "mmlat.ship=" in self.job_args:
            raise ValueError("job_args '%s': mmlat.ship is the executor's to set" % self.job_args)
        for name in ("kernel", "initrd"):
            if not getattr(self, name):
                raise ValueError("%s: a path or URL" % name)

    @property
    def timeout(self):
        return self.timeout_s if self.timeout_s is not None else cell_timeout_s(self.duration_s)

    @property
    def cell_path(self):
        """The boot's folder under the run's cells/."""
        return "%s/%s/%s/r%d" % (self.variant, self.workload, self.boot, self.repeat)

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, doc):
        return cls(**doc)


@dataclass(frozen=True)
class Target:
    """Where a run's jobs go: every job of a run carries the same device
    type and tags, so that baseline and patched run on the same kind of
    device, or on one device when a tag names it (a lab's admin gives each
    device the tags it has; a tag unique to one device pins a run to it)."""
    device_type: str = "qemu"
    tags: tuple = ()
    priority: str = "medium"
    visibility: str = "public"

    def to_json(self):
        return {"device_type": self.device_type, "tags": list(self.tags),
                "priority": self.priority, "visibility": self.visibility}

    @classmethod
    def from_json(cls, doc):
        return cls(doc["device_type"], tuple(doc.get("tags", ())),
                   doc.get("priority", "medium"), doc.get("visibility", "public"))


def guest_cmdline(boot):
    """The guest kernel's command line after its console: bench/qemu.sh's,
    and the runner told to print its results on the console."""
    smp_args = " tsc=reliable" if boot.smp > 1 else ""
    return "%s%s %s mmlat.ship=console" % (GUEST_ARGS, smp_args, boot.job_args)


def job_name(boot):
    name = "mmlat %s %s" % (boot.run_id, boot.cell_path)
    if len(name) > 200:
        raise ValueError("job name '%s' is longer than LAVA's 200 characters" % name)
    return name


def metadata(boot):
    return {
        "mmlat.run": boot.run_id,
        "mmlat.variant": boot.variant,
        "mmlat.workload": boot.workload,
        "mmlat.boot": boot.boot,
        "mmlat.seed": str(boot.repeat),
    }


def artifact(location, sha256, extra):
    """A deploy image: a path on the worker becomes a file:// URL."""
    if urlparse(location).scheme:
        url = location
    else:
        url = "file://" + os.path.abspath(location)
    image = {"url": url}
    if sha256:
        image["sha256sum"] = sha256
    image.update(extra)
    return image


def monitor(boot):
    """Watch the console from the runner's first line to the end of its
    results block; the block's size is the job's one test case."""
    return {
        "test": {
            "timeout": {"seconds": boot.timeout},
            "monitors": [{
                "name": "mmlat",
                "start": RUNNER_LINE,
                "end": RESULTS_END,
                "pattern": RESULTS_BEGIN,
            }],
        }
    }


def _common(boot, target, boot_s):
    """What every job has; BOOT_S: the seconds a device takes, beyond the
    boot's own timeout, to reach the kernel."""
    job = {
        "job_name": job_name(boot),
        "device_type": target.device_type,
        "priority": target.priority,
        "visibility": target.visibility,
        "metadata": metadata(boot),
        # the wait for the runner's first line is a connection timeout
        "timeouts": {
            "job": {"seconds": DEPLOY_S + boot_s + boot.timeout + JOB_SLACK_S},
            "connection": {"seconds": boot.timeout},
        },
    }
    if target.tags:
        job["tags"] = list(target.tags)
    return job


def qemu_options(boot):
    """What the job adds to the device type's QEMU command: bench/qemu.sh's
    accelerator, vCPUs, no default devices, no reboot, and the serial port
    on QEMU's stdio, which LAVA reads."""
    return [
        "-accel tcg",
        "-icount shift=%d,sleep=off" % boot.icount_shift,
        "-smp %d" % boot.smp,
        "-nodefaults",
        "-no-reboot",
        "-serial stdio",
    ]


def qemu_job(boot, target):
    """A job booting BOOT in QEMU on a device of LAVA's qemu device type."""
    if boot.accel not in QEMU_ACCELS:
        raise ValueError("boot %s: a QEMU job runs %s, not %s" % (boot.cell_path, ", ".join(QEMU_ACCELS), boot.accel))
    job = _common(boot, target, 0)
    job["context"] = {
        "arch": "x86_64",
        "no_kvm": True,
        "memory": boot.memory_mib,
        "extra_options": qemu_options(boot),
    }
    append = "console=ttyS0 " + guest_cmdline(boot)
    job["actions"] = [
        {"deploy": {
            "to": "tmpfs",
            "timeout": {"seconds": DEPLOY_S},
            "images": {
                "kernel": artifact(boot.kernel, boot.kernel_sha256,
                                   {"image_arg": '-kernel {kernel} -append "%s"' % append}),
                "initrd": artifact(boot.initrd, boot.initrd_sha256, {"image_arg": "-initrd {initrd}"}),
            },
        }},
        # QEMU's start; its console is read by the test action, whose
        # timeout is the boot's (LAVA also waits up to this long for each
        # console line)
        {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"seconds": boot.timeout}}},
        monitor(boot),
    ]
    return job


def x86_job(boot, target):
    """A job booting BOOT on a bare-metal x86-64 machine of an x86 device
    type (lava-server's x86.jinja2): the kernel and initramfs over TFTP,
    booted by iPXE, as many CPUs as the run's vCPUs."""
    if boot.accel != HARDWARE:
        raise ValueError("boot %s: a bare-metal job's accel is %s, not %s" % (boot.cell_path, HARDWARE, boot.accel))
    job = _common(boot, target, BARE_METAL_BOOT_S)
    job["context"] = {
        "extra_kernel_args": "nr_cpus=%d %s" % (boot.smp, guest_cmdline(boot)),
    }
    job["actions"] = [
        {"deploy": {
            "to": "tftp",
            "timeout": {"seconds": DEPLOY_S},
            "kernel": artifact(boot.kernel, boot.kernel_sha256, {}),
            # the initramfs as mmlat built it: no LAVA overlay or modules
            "ramdisk": artifact(boot.initrd, boot.initrd_sha256,
                                {"install_overlay": False, "install_modules": False}),
        }},
        {"boot": {"method": "ipxe", "commands": "ramdisk",
                  "timeout": {"seconds": BARE_METAL_BOOT_S}}},
        monitor(boot),
    ]
    return job


def to_yaml(job):
    return yaml.safe_dump(job, sort_keys=False, default_flow_style=False, width=10**4)


@dataclass
class JobRecord:
    """A submitted job, as the run keeps it (so that a resumed run waits
    on it, or collects it, instead of submitting the boot again)."""
    executor: str           # lava-local | lava
    job_id: str
    boot: BootSpec
    attempt: int = 1        # submissions of this boot so far, this one included
    reasons: list = field(default_factory=list)   # why earlier attempts were resubmitted

    def to_json(self):
        return {"executor": self.executor, "job_id": self.job_id, "boot": self.boot.to_json(),
                "attempt": self.attempt, "reasons": list(self.reasons)}

    @classmethod
    def from_json(cls, doc):
        return cls(doc["executor"], doc["job_id"], BootSpec.from_json(doc["boot"]),
                   doc.get("attempt", 1), list(doc.get("reasons", [])))

    def dumps(self):
        return json.dumps(self.to_json(), indent=2) + "\n"
