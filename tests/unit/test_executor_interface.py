"""The executor interface (bench/orchestrator/executor.py) as the scheduler
drives it, with an executor of the test's own: jobs submitted, polled and
collected into the boots' folders, their ids recorded so that a resumed run
waits on a job it submitted before instead of submitting it twice, a job
the executor lost or could not run submitted again (a bounded number of
times), and a fault of the host that stops the round."""
import json
import os

import pytest
from orchestrator import executor
from orchestrator.machine import Machine
from orchestrator.paths import Run
from orchestrator.scheduler import MAX_ATTEMPTS, Scheduler
from plan import knobs
from plan.model import BootResult, JobRecord, Plan, Round, Variant, write


class FakeExecutor(executor.Executor):
    """Each job is queued for one poll, running for the next, then ends as
    script says, by the boot's path, one end a submission (the last one
    for the rest): DONE (ok or failed), FAILED (retry or not) or LOST; an
    unknown job id is LOST."""
    name = "fake"

    def __init__(self, script=None, known=()):
        self.script = script or {}
        self.jobs = {job_id: ["running"] for job_id in known}
        self.boots = {}
        self.submitted, self.canceled, self.collected = [], [], []

    def submit(self, job):
        job_id = "fake-%d" % len(self.submitted)
        self.submitted.append(job.boot.path)
        self.boots[job_id] = job.boot.path
        ends = self.script.get(job.boot.path, ["ok"])
        end = ends[min(self.submitted.count(job.boot.path) - 1, len(ends) - 1)]
        self.jobs[job_id] = ["queued", "running", end]
        return job_id

    def poll(self, job_id):
        if job_id not in self.jobs:
            return executor.JobStatus(executor.LOST, "unknown")
        states = self.jobs[job_id]
        state = states.pop(0) if len(states) > 1 else states[0]
        if state in ("queued", "running"):
            return executor.JobStatus(state)
        if state in ("ok", "failed"):
            return executor.JobStatus(executor.DONE)
        if state == "lost":
            return executor.JobStatus(executor.LOST, "the lab forgot it")
        return executor.JobStatus(executor.FAILED, "the lab broke", retry=state == "retry")

    def collect(self, job_id, dest):
        self.collected.append(job_id)
        status = self.jobs.pop(job_id)[0]
        with open(os.path.join(dest, "console.log"), "w") as f:
            f.write("booted\n")
        return BootResult(status=status, cause="" if status == "ok" else "guest panicked",
                          wall_seconds=1.0, guest_seconds_to_runner=1.0, accel="tcg-icount",
                          qemu_binary="qemu", qemu="QEMU", qemu_cmdline="qemu ...")

    def cancel(self, job_id):
        self.canceled.append(job_id)
        self.jobs.pop(job_id, None)

    def wait(self, job_ids, timeout):
        pass


class Images:
    def kernel(self, variant):
        return "/images/kernel-%s/bzImage" % variant

    def initrd(self, variant):
        return "/images/initrd-%s.cpio" % variant


def make_plan(repeat=2):
    return Plan(run_id="t", variants=[Variant("v", "v", "tree:6.1", "6.1", "", (), 0)], steps=[],
                workloads=["munmap"], sweeps=[], boots=["clean"], trace="none",
                calibration=None, duration_s=1, repeat=repeat,
                rounds=[Round(1, 1, repeat, "REPEAT=%d" % repeat)], flavor="bench",
                cross=False, executor="fake")


@pytest.fixture
def schedule(tmp_path):
    """schedule(executor, free_mib=..., **values) -> the Scheduler, the run."""
    def make(exe, **values):
        run = Run(str(tmp_path / "t"))
        os.makedirs(run.cells, exist_ok=True)
        values = dict(knobs.read({}), **dict({"BOOT_FREE_MIB": "1"}, **values))
        machine = Machine(accel="tcg-icount", smp=1, qemu_binary="qemu", qemu="QEMU", jobs=2)
        return Scheduler(run, make_plan(), exe, machine, Images(), values,
                         {"v": ("c0ffee", "e3b0")}), run
    return make


def cell(run, repeat):
    with open(os.path.join(run.cells, "v/munmap/clean/r%d/cell.json" % repeat)) as f:
        return json.load(f)


def boots(sched):
    return sched.plan.boots_of(sched.plan.rounds[0])


def test_every_boot_is_submitted_collected_and_recorded_with_its_job(schedule):
    exe = FakeExecutor({"v/munmap/clean/r2": ["failed"]})
    sched, run = schedule(exe)
    assert sched.run_boots(boots(sched)) == 2
    assert exe.submitted == ["v/munmap/clean/r1", "v/munmap/clean/r2"]
    first, second = cell(run, 1), cell(run, 2)
    assert (first["executor"], first["job_id"], first["status"]) == ("fake", "fake-0", "ok")
    assert (second["status"], second["cause"]) == ("failed", "guest panicked")
    assert os.path.exists(os.path.join(run.cells, "v/munmap/clean/r1/console.log"))
    # the job record goes once the boot is recorded; no staging folder stays
    assert not os.path.exists(os.path.join(run.cells, "v/munmap/clean/r1/job.json"))
    assert not [d for d in os.listdir(os.path.join(run.cells, "v/munmap/clean"))
                if d.startswith(".")]
    assert sched.failed == 1 and sched.host_fault is None


def test_a_resumed_run_waits_on_the_job_it_submitted_before(schedule):
    exe = FakeExecutor(known=["fake-old"])
    sched, run = schedule(exe)
    staging = run.staging(boots(sched)[0])
    os.makedirs(staging)
    write(os.path.join(staging, "job.json"),
          JobRecord(executor="fake", job_id="fake-old", boot=boots(sched)[0]))
    exe.jobs["fake-old"] = ["running", "ok"]
    assert sched.run_boots(boots(sched)) == 2
    # r1's job was collected, not submitted again
    assert exe.submitted == ["v/munmap/clean/r2"]
    assert "fake-old" in exe.collected and cell(run, 1)["job_id"] == "fake-old"


def test_a_job_another_executor_or_none_knows_is_submitted_again(schedule):
    exe = FakeExecutor()
    sched, run = schedule(exe)
    for boot, record in zip(boots(sched), (
            JobRecord(executor="fake", job_id="fake-gone", boot=boots(sched)[0]),
            JobRecord(executor="lava", job_id="42", boot=boots(sched)[1]))):
        os.makedirs(run.staging(boot))
        write(os.path.join(run.staging(boot), "job.json"), record)
    assert sched.run_boots(boots(sched)) == 2
    assert exe.submitted == ["v/munmap/clean/r1", "v/munmap/clean/r2"]


def test_a_job_the_executor_lost_or_could_not_run_goes_again_a_bounded_number_of_times(
        schedule):
    # r1: lost once, then ok; r2: the lab breaks it every time
    exe = FakeExecutor({"v/munmap/clean/r1": ["lost", "ok"], "v/munmap/clean/r2": ["retry"]})
    sched, run = schedule(exe)
    sched.run_boots(boots(sched))
    assert exe.submitted.count("v/munmap/clean/r1") == 2 and cell(run, 1)["status"] == "ok"
    assert exe.submitted.count("v/munmap/clean/r2") == MAX_ATTEMPTS
    r2 = cell(run, 2)
    assert r2["status"] == "failed" and "the lab broke (attempt 3 of 3" in r2["cause"]
    assert sched.host_fault is None


def test_a_job_that_cannot_be_run_for_the_host_stops_the_round(schedule):
    exe = FakeExecutor({"v/munmap/clean/r1": ["broken"]})
    sched, run = schedule(exe)
    sched.machine = sched.machine.__class__(**dict(sched.machine.__dict__, jobs=1))
    sched.run_boots(boots(sched))
    assert sched.host_fault.startswith("boot v/munmap/clean/r1: the lab broke (")
    assert " MiB free under %s)" % sched.results_dir in sched.host_fault
    # the next boot was not started, nothing of r1 stays
    assert exe.submitted == ["v/munmap/clean/r1"]
    assert os.listdir(os.path.join(run.cells, "v/munmap/clean")) == []


def test_no_boot_starts_without_the_room_to_keep_it(schedule):
    exe = FakeExecutor()
    sched, run = schedule(exe, BOOT_FREE_MIB=str(1 << 40))
    sched.run_boots(boots(sched))
    assert exe.submitted == [] and sched.host_fault.startswith("only ")


def test_cancel_stops_every_job_and_drops_its_staging_folder(schedule):
    exe = FakeExecutor()
    sched, run = schedule(exe)
    for b in boots(sched):
        sched.submit(b)
    assert sched.cancel_all() == 2
    assert sorted(exe.canceled) == ["fake-0", "fake-1"]
    assert os.listdir(os.path.join(run.cells, "v/munmap/clean")) == []
