"""EXECUTOR=local: each boot is bench/qemu.sh on this machine, in a session
of its own (a terminal's signals do not reach the guest; cancel stops the
whole session), with the parent-death signal that stops it should the
orchestrator die. qemu.sh writes the boot's files into its staging folder
directly; its exit status says how it ended: 0 ok, 1 the boot failed (the
cause in boot.json), 2 the host could not keep its results (a full disk),
143 stopped by a signal."""
import json
import os
import socket

from plan import knobs
from plan.model import BootResult

from . import children
from .executor import DONE, FAILED, LOST, RUNNING, Executor, JobStatus

QEMU_SH = os.path.join(knobs.ROOT, "bench/qemu.sh")


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, run_dir, values):
        self.sessions = children.Sessions()
        self.staging = {}       # job id -> the boot's staging folder

    def submit(self, job):
        env = dict(os.environ, ACCEL=job.accel, SMP=str(job.smp),
                   GUEST_MEM_MIB=str(job.memory_mib), ICOUNT_SHIFT=str(job.icount_shift),
                   CELL_TIMEOUT=str(job.timeout_s))
        args = [job.staging, os.path.dirname(job.kernel), job.initrd, job.job.cmdline()]
        proc = children.session(["bash", QEMU_SH, *args, *([job.plugin] if job.plugin else [])],
                                env=env)
        job_id = "local-%d" % proc.pid
        self.sessions.add(job_id, proc)
        self.staging[job_id] = job.staging
        return job_id

    def poll(self, job_id):
        proc = self.sessions.get(job_id)
        if proc is None:
            return JobStatus(LOST, "no local guest of this run has it (it ended with the run "
                             "that started it)")
        rc = proc.poll()
        if rc is None:
            return JobStatus(RUNNING)
        if rc in (0, 1) and os.path.exists(os.path.join(self.staging[job_id], "boot.json")):
            return JobStatus(DONE)
        return JobStatus(FAILED, "bench/qemu.sh could not keep the boot (exit %d)" % rc)

    def collect(self, job_id, dest):
        self._forget(job_id)
        with open(os.path.join(dest, "boot.json")) as f:
            doc = json.load(f)
        with open(os.path.join(dest, "qemu.cmdline")) as f:
            doc["qemu_cmdline"] = f.read().rstrip("\n")
        doc["device"] = socket.gethostname()
        os.remove(os.path.join(dest, "boot.json"))
        os.remove(os.path.join(dest, "qemu.cmdline"))
        return BootResult.from_json(doc)

    def cancel(self, job_id):
        proc = self.sessions.get(job_id)
        if proc is not None:
            children.stop_session(proc)
            proc.wait()
            self._forget(job_id)

    def wait(self, job_ids, timeout):
        self.sessions.wait(job_ids, timeout)

    def _forget(self, job_id):
        self.sessions.forget(job_id)
        self.staging.pop(job_id, None)
