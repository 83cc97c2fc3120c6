"""The boots of a round, through an executor: JOBS at once, in the plan's
order. A boot is assembled in its staging folder and renamed into place
once recorded (cell.json), so that only complete boots stay; a resumed
run skips them, and waits on or collects the jobs it had submitted (their
job.json) instead of submitting them again. A boot that ends frees its
host core: the next one starts before the ended one is recorded. A boot
the host cannot keep (a full disk under RESULTS_DIR) stops the round
before the next boot."""
import os
import shutil
import time

from plan.model import BootResult, CellRecord, JobRecord, read, write

from . import records
from .executor import DONE, FAILED, LOST, BootJob
from .say import log

# A boot keeps a few MiB under RESULTS_DIR (console, the guest's files; a
# traced boot's window dump is the largest part) plus, while it runs, the
# file behind the memory the guest ships them into (bench/qemu.sh): none
# starts with less free than BOOT_FREE_MIB. Seconds between polls of the
# running jobs at most; and how often a boot the executor cannot run for a
# while (retry) is submitted.
POLL_S = 1.0
MAX_ATTEMPTS = 3


def free_mib(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize // (1 << 20)


class Scheduler:
    def __init__(self, run, plan, executor, machine, images, values, variants):
        self.run, self.plan, self.executor = run, plan, executor
        self.machine, self.images, self.values = machine, images, values
        self.variants = variants            # name -> (config sha256, series sha256)
        self.results_dir = os.path.dirname(run.dir)
        self.free_needed = int(values["BOOT_FREE_MIB"])
        self.timeout = int(values["CELL_TIMEOUT"] or self.plan.duration_s * 20 + 240)
        self.running = {}                   # job id -> JobRecord
        self.host_fault = None
        self.started = self.finished = self.failed = 0
        self.t0 = time.monotonic()
        self.total = 0

    def free(self):
        return free_mib(self.run.dir)

    # -- submitting

    def job_of(self, boot):
        return BootJob(run_id=self.plan.run_id, boot=boot, job=self.plan.job(boot, self.values),
                       kernel=self.images.kernel(boot.cell.variant),
                       initrd=self.images.initrd(boot.cell.variant),
                       staging=self.run.staging(boot), accel=self.machine.accel,
                       smp=self.machine.smp, memory_mib=int(self.values["GUEST_MEM_MIB"]),
                       icount_shift=int(self.values["ICOUNT_SHIFT"]), timeout_s=self.timeout,
                       plugin=self.images.plugin_argument(boot.cell.variant,
                                                          self.values["ICOUNT_SHIFT"],
                                                          self.plan.plugin_log_us(boot))
                       if self.plan.plugin(boot) else "")

    def submit(self, boot, attempt=1, reasons=()):
        staging = self.run.staging(boot)
        shutil.rmtree(staging, ignore_errors=True)
        os.makedirs(staging)
        self.started += 1
        left = "?"
        if self.finished:
            left = "%ds" % ((self.total - self.finished) * (time.monotonic() - self.t0)
                            // self.finished)
        log("boot %d/%d %s (done %d, running %d, failed %d; elapsed %ds, left ~%s)"
            % (self.started, self.total, boot.path, self.finished, len(self.running) + 1,
               self.failed, time.monotonic() - self.t0, left))
        job_id = self.executor.submit(self.job_of(boot))
        record = JobRecord(executor=self.executor.name, job_id=job_id, boot=boot,
                           attempt=attempt, reasons=list(reasons))
        write(os.path.join(staging, "job.json"), record)
        self.running[job_id] = record

    def resumed(self, todo):
        """The boots of todo whose jobs an earlier run submitted and this
        executor still has, now running; the rest, their staging folders
        cleared, to submit."""
        out = []
        for boot in todo:
            staging = self.run.staging(boot)
            path = os.path.join(staging, "job.json")
            record = None
            if os.path.exists(path):
                record = read(path, JobRecord)
                if record.executor != self.executor.name or \
                        self.executor.poll(record.job_id).state == LOST:
                    record = None
            if record is None:
                shutil.rmtree(staging, ignore_errors=True)
                out.append(boot)
            else:
                log("%s: waiting on job %s, submitted before" % (boot.path, record.job_id))
                self.running[record.job_id] = record
        return out

    def start_more(self, queue):
        while not self.host_fault and queue and len(self.running) < self.machine.jobs:
            free = self.free()
            if free < self.free_needed:
                self.host_fault = "only %d MiB free under %s, a boot needs %d" % (
                    free, self.results_dir, self.free_needed)
                return
            self.submit(queue.pop(0))

    # -- collecting

    def finish(self, job_id, status):
        """A finished job: its boot recorded, submitted again, or a fault of
        the host."""
        record = self.running.pop(job_id)
        boot, staging = record.boot, self.run.staging(record.boot)
        self.finished += 1
        again = status.state == LOST or (status.state == FAILED and status.retry)
        if again and record.attempt < MAX_ATTEMPTS:
            log("%s: job %s %s (%s): submitting it again" % (
                boot.path, job_id, status.state, status.cause))
            self.total += 1
            self.submit(boot, record.attempt + 1, record.reasons + [status.cause])
            return None
        if status.state == DONE:
            result = self.executor.collect(job_id, staging)
        elif again:
            # the executor could not run it, attempt after attempt: a failed
            # boot, with the causes
            result = BootResult(status="failed", cause="%s (attempt %d of %d; before: %s)" % (
                status.cause, record.attempt, MAX_ATTEMPTS, "; ".join(record.reasons)),
                wall_seconds=0.0, guest_seconds_to_runner=None, accel=self.machine.accel,
                qemu_binary="", qemu="", qemu_cmdline="")
        else:
            result = None
        if result is None:
            # FAILED, not to retry: the executor's host is at fault (a full
            # disk under the boot's files is the common one: say the room)
            shutil.rmtree(staging, ignore_errors=True)
            self.host_fault = self.host_fault or "boot %s: %s (%d MiB free under %s)" % (
                boot.path, status.cause, self.free(), self.results_dir)
            return None
        if result.status != "ok" and self.free() < self.free_needed:
            shutil.rmtree(staging, ignore_errors=True)
            self.host_fault = self.host_fault or "boot %s could not be kept (%d MiB free under " \
                "%s)" % (boot.path, self.free(), self.results_dir)
            return None
        self.failed += result.status != "ok"
        config_sha, series_sha = self.variants[boot.cell.variant]
        return CellRecord(boot=boot, calibrated=self.plan.calibrated(boot.cell, boot.kind),
                          smp=self.machine.smp, config_sha256=config_sha,
                          series_sha256=series_sha, executor=self.executor.name,
                          job_id=job_id, result=result, instrument=self.plan.instrument_of(boot))

    def record(self, cell):
        if not records.record_boot(self.run, cell, self.run.staging(cell.boot)):
            self.host_fault = self.host_fault or "boot %s could not be recorded (%d MiB free " \
                "under %s)" % (cell.boot.path, self.free(), self.results_dir)

    def run_boots(self, boots):
        """Every boot of boots not yet complete; returns how many it ran."""
        todo = [b for b in boots if not os.path.isdir(self.run.boot(b))]
        if len(todo) != len(boots):
            log("%d of %d boots already complete, skipped" % (len(boots) - len(todo), len(boots)))
        self.total = len(todo)
        queue = self.resumed(todo)
        self.start_more(queue)
        while self.running:
            self.executor.wait(list(self.running), POLL_S)
            for job_id in list(self.running):
                status = self.executor.poll(job_id)
                if status.state not in (DONE, FAILED, LOST):
                    continue
                cell = self.finish(job_id, status)
                self.start_more(queue)
                if cell:
                    self.record(cell)
        return len(todo)

    def cancel_all(self):
        """Stop every job (a signal stopped the run); their staging folders
        go. Returns how many were running."""
        n = len(self.running)
        for job_id, record in list(self.running.items()):
            self.executor.cancel(job_id)
            shutil.rmtree(self.run.staging(record.boot), ignore_errors=True)
        self.running.clear()
        return n
