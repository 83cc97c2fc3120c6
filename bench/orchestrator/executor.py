"""The executor interface: what boots a guest for the orchestrator.

An executor is asynchronous. The scheduler submits a BootJob and gets a
job id, polls the id for its JobStatus, collects a finished job's files
into the boot's folder (today's layout: console.log, guest/, and plugin/
when the boot loads the QEMU plugin) with its
BootResult, and cancels what a stopped run leaves. It records each job
(plan.model.JobRecord, job.json in the boot's staging folder) as soon as
it is submitted, so that a resumed run (the same RUN_ID) polls and
collects the jobs it already submitted instead of submitting them twice;
an executor that no longer knows a job (a local guest died with the run
that started it) says LOST, and the boot is submitted again.

    submit(job: BootJob) -> str           the job id
    poll(job_id) -> JobStatus
    collect(job_id, dest) -> BootResult   DONE jobs only; dest: the staging folder
    cancel(job_id)                        stop it, or take it off a queue

Executors are EXECUTOR's values (plan/knobs.py): local (bench/qemu.sh,
orchestrator/local.py), lava-local and lava (a LAVA job a boot,
orchestrator/lava/)."""
from dataclasses import dataclass

from plan.model import Boot, GuestJob

QUEUED, RUNNING, DONE, FAILED, LOST = "queued", "running", "done", "failed", "lost"


@dataclass(frozen=True)
class BootJob:
    """One boot as an executor receives it."""
    run_id: str
    boot: Boot
    job: GuestJob               # the guest runner's job
    kernel: str                 # the bzImage
    initrd: str
    staging: str                # the boot's staging folder (collect's dest)
    accel: str                  # kvm | tcg-icount | tcg-mt
    smp: int
    memory_mib: int
    icount_shift: int
    timeout_s: int              # wall seconds the boot may take
    # QEMU's -plugin argument of the mmlat plugin (the plugin and its
    # options but out=, the executor's folder for its dumps: plugin/ beside
    # the guest's files); "" loads none
    plugin: str = ""


@dataclass(frozen=True)
class JobStatus:
    """DONE: the boot ran to an end, ok or not (collect says which).
    FAILED: the executor could not run it, the boot gives no result (retry:
    submitting it again may help; otherwise the host, its disk say, is at
    fault and the run stops). LOST: the executor does not know the job."""
    state: str
    cause: str = ""
    retry: bool = False


class Executor:
    """The interface; see the module's documentation."""
    name = None

    def submit(self, job):
        raise NotImplementedError

    def poll(self, job_id):
        raise NotImplementedError

    def collect(self, job_id, dest):
        raise NotImplementedError

    def cancel(self, job_id):
        raise NotImplementedError

    def wait(self, job_ids, timeout):
        """Block up to timeout seconds, or until one of job_ids may have
        changed state (an executor that can tell returns early)."""
        raise NotImplementedError


def make(name, run_dir, values):
    """The executor EXECUTOR names, for the run in run_dir; values: every
    knob's (a LAVA executor's device type, tags and identity)."""
    from .lava.executor import LavaLocalExecutor, LavaServerExecutor
    from .local import LocalExecutor
    executors = {e.name: e for e in (LocalExecutor, LavaLocalExecutor, LavaServerExecutor)}
    return executors[name](run_dir, values)
