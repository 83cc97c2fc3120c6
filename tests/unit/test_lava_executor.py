"""The LAVA executors (orchestrator/lava/executor.py) on the executor
interface, against stand-ins for lava-run and for a LAVA server's XML-RPC
API that give logs made by LAVA's own loggers: submission, polling,
cancellation, collection into the boot's staging folder, a job the lab
failed submitted again a bounded number of times with its reasons, and a
resumed run collecting the jobs it submitted before instead of submitting
them again. (A real lava-run boot: tests/integration/test_lava_boot.py.)"""
import base64
import json
import os
import sys
import textwrap
import threading
import time
import xmlrpc.client
import xmlrpc.server

import pytest
import yaml
from lava_helpers import lava_log, print_block
from orchestrator import executor as interface
from orchestrator.executor import BootJob
from orchestrator.lava import executor
from orchestrator.machine import Machine
from orchestrator.paths import Run
from orchestrator.say import Refused
from orchestrator.scheduler import MAX_ATTEMPTS, Scheduler
from plan import knobs
from plan.model import Boot, Cell, CellRecord, GuestJob, JobRecord, read, write
from test_executor_interface import make_plan

INFRA = {"result": "fail", "error_type": "Infrastructure", "error_msg": "Unable to download"}
# The icount QEMU of the run, as bench/icount-qemu.sh names it: binary, then
# its own options.
ICOUNT_QEMU = ["/opt/qemu/bin/qemu-system-x86_64", "-L", "/opt/qemu/share/qemu"]


@pytest.fixture(autouse=True)
def icount_qemu(monkeypatch):
    monkeypatch.setattr(executor.qemu, "icount_command", lambda smp: (ICOUNT_QEMU, None))


@pytest.fixture
def good_log(tmp_path, guest_path):
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "status").write_text("ok\n")
    assert print_block(guest_path, folder, tmp_path / "console").returncode == 0
    lines = ["mmlat-runner: start uptime=1.5"] + (tmp_path / "console").read_text().splitlines()
    return lava_log(("\r\n".join(lines) + "\r\n").encode())


class Images:
    """A variant's kernel and initramfs, small files of the test's."""

    def __init__(self, root):
        self.root = root
        for name in ("bzImage", "initrd"):
            (root / name).write_bytes(name.encode())

    def kernel(self, variant):
        return str(self.root / "bzImage")

    def initrd(self, variant):
        return str(self.root / "initrd")


def boot_job(tmp_path, repeat=1):
    images = Images(tmp_path)
    staging = tmp_path / ("staging-%d" % repeat)
    staging.mkdir()
    return BootJob(run_id="t", boot=Boot(Cell("v", "munmap"), "clean", repeat, 1),
                   job=GuestJob(workload="munmap", params="", knobs={"duration": "1"}, seed=repeat,
                                calib=""),
                   kernel=images.kernel("v"), initrd=images.initrd("v"), staging=str(staging),
                   accel="tcg-icount", smp=1, memory_mib=1024, icount_shift=3, timeout_s=260)


def local_executor(run_dir, lava_run):
    exe = executor.LavaLocalExecutor(str(run_dir), knobs.read({}))
    exe.LAVA_RUN = lava_run
    return exe


def until_ended(exe, job_id, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        status = exe.poll(job_id)
        if status.state not in (interface.QUEUED, interface.RUNNING):
            return status
        exe.wait([job_id], 0.05)
    raise AssertionError("job %s did not end" % job_id)


def fake_lava_run(tmp_path, logs):
    """A lava-run that prints the next of LOGS (one a run; the last one
    repeats), writes result.yaml as lava-run does, and on SIGTERM ends
    the job as canceled."""
    (tmp_path / "logs.json").write_text(json.dumps(logs))
    script = tmp_path / "lava-run"
    script.write_text(textwrap.dedent("""\
        #!%s
        import json, signal, sys, time, pathlib, yaml
        args = sys.argv[1:]
        out = pathlib.Path(args[args.index("--output-dir") + 1])
        out.mkdir(parents=True)
        counter = pathlib.Path("%s/count")
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        logs = json.loads(pathlib.Path("%s/logs.json").read_text())
        log = logs[min(n, len(logs) - 1)]
        def canceled(*_):
            print('{"dt": "2026-01-01T00:00:00", "lvl": "results", "msg": '
                  '{"definition": "lava", "case": "job", "result": "fail", "error_type": "Canceled"}}')
            (out / "result.yaml").write_text("result: fail\\nerror_type: Canceled\\n")
            sys.exit(1)
        signal.signal(signal.SIGTERM, canceled)
        if log == "sleep":
            time.sleep(60)
        sys.stdout.write(log)
        result = [yaml.safe_load(l)["msg"] for l in log.splitlines() if '"lvl": "results"' in l][-1]
        (out / "result.yaml").write_text(yaml.safe_dump(result))
        sys.exit(0 if result["result"] == "pass" else 1)
        """ % (sys.executable, tmp_path, tmp_path)))
    script.chmod(0o755)
    return str(script)


def test_lava_local_submit_poll_collect(tmp_path, good_log):
    exe = local_executor(tmp_path / "run", fake_lava_run(tmp_path, [good_log]))
    bj = boot_job(tmp_path)
    job_id = exe.submit(bj)
    folder = tmp_path / "run/lava" / job_id
    definition = yaml.safe_load((folder / "job.yaml").read_text())
    assert definition["job_name"] == "mmlat t v/munmap/clean/r1"
    assert definition["metadata"]["mmlat.seed"] == "1"
    assert "mmlat.results=console" in definition["actions"][0]["deploy"]["images"]["kernel"]["image_arg"]
    qemu = yaml.safe_load((folder / "device.yaml").read_text())["actions"]["boot"]["methods"][
        "qemu"]["parameters"]
    assert "-icount shift=3,sleep=off" in qemu["extra"]
    # the icount QEMU of local boots, with its own options, and no NIC
    assert qemu["command"] == ICOUNT_QEMU[0]
    assert qemu["options"][:2] == ICOUNT_QEMU[1:]
    assert not [o for o in qemu["options"] if o.startswith("-net")]
    assert until_ended(exe, job_id).state == interface.DONE
    result = exe.collect(job_id, bj.staging)
    assert (result.status, result.accel) == ("ok", "tcg-icount")
    assert result.device.startswith("mmlat-qemu@")
    assert result.qemu_cmdline == "/usr/bin/qemu-system-x86_64 -nographic"
    staging = tmp_path / "staging-1"
    assert (staging / "guest/status").read_text() == "ok\n"
    assert {"console.log", "lava.log", "job.yaml"} <= set(os.listdir(staging))
    assert not folder.exists()      # collected: the job's copy is in the boot's folder


def test_lava_local_cancel(tmp_path):
    exe = local_executor(tmp_path / "run", fake_lava_run(tmp_path, ["sleep"]))
    job_id = exe.submit(boot_job(tmp_path))
    time.sleep(1)
    assert exe.poll(job_id).state == interface.RUNNING
    exe.cancel(job_id)
    assert not (tmp_path / "run/lava" / job_id).exists()
    assert exe.poll(job_id).state == interface.LOST


def test_lava_local_after_a_restart(tmp_path, good_log):
    """A job of an earlier run: collected when lava-run finished it, LOST
    when its lava-run died with that run."""
    lava_run = fake_lava_run(tmp_path, [good_log, "sleep"])
    first = local_executor(tmp_path / "run", lava_run)
    done, dying = first.submit(boot_job(tmp_path, 1)), first.submit(boot_job(tmp_path, 2))
    until_ended(first, done)
    time.sleep(0.5)
    again = local_executor(tmp_path / "run", lava_run)
    assert again.poll(done).state == interface.DONE
    assert again.collect(done, str(tmp_path / "staging-1")).status == "ok"
    first.cancel(dying)
    assert again.poll(dying).state == interface.LOST


def test_a_lab_fault_is_failed_to_retry(tmp_path):
    infra = lava_log(b"", before_boot=True, result=INFRA)
    exe = local_executor(tmp_path / "run", fake_lava_run(tmp_path, [infra]))
    job_id = exe.submit(boot_job(tmp_path))
    status = until_ended(exe, job_id)
    assert (status.state, status.retry) == (interface.FAILED, True)
    assert status.cause == "lava: Infrastructure: Unable to download"
    # no boot comes of it: its log is kept aside, its folder goes
    assert exe.poll(job_id) == status
    assert not (tmp_path / "run/lava" / job_id).exists()
    assert "Unable to download" in (tmp_path / "run/lava/abandoned" / (job_id + ".log")).read_text()


def scheduler(tmp_path, exe):
    run = Run(str(tmp_path / "run"))
    os.makedirs(run.cells, exist_ok=True)
    values = dict(knobs.read({}), BOOT_FREE_MIB="1")
    machine = Machine(accel="tcg-icount", smp=1, qemu_binary="qemu", qemu="QEMU", jobs=2)
    return Scheduler(run, make_plan(), exe, machine, Images(tmp_path), values,
                     {"v": ("c0ffee", "e3b0")}), run


def test_the_scheduler_resubmits_a_lab_fault_with_its_reason_and_a_bound(tmp_path, good_log):
    infra = lava_log(b"", before_boot=True, result=INFRA)
    exe = local_executor(tmp_path / "run", fake_lava_run(tmp_path, [infra] * MAX_ATTEMPTS + [good_log]))
    sched, run = scheduler(tmp_path, exe)
    sched.plan.rounds[0] = sched.plan.rounds[0].__class__(1, 1, 1, "REPEAT=1")
    sched.run_boots(sched.plan.boots_of(sched.plan.rounds[0]))
    doc = json.loads((tmp_path / "run/cells/v/munmap/clean/r1/cell.json").read_text())
    assert doc["status"] == "failed"
    assert doc["cause"].startswith("lava: Infrastructure: Unable to download (attempt 3 of 3; before: ")
    assert int((tmp_path / "count").read_text()) == MAX_ATTEMPTS


def test_a_resumed_run_collects_its_lava_jobs_instead_of_submitting_them(tmp_path, good_log):
    lava_run = fake_lava_run(tmp_path, [good_log])
    first = local_executor(tmp_path / "run", lava_run)
    sched, run = scheduler(tmp_path, first)
    boots = sched.plan.boots_of(sched.plan.rounds[0])
    # the first run submitted r1, and stopped before it collected it
    os.makedirs(run.staging(boots[0]))
    bj = sched.job_of(boots[0])
    job_id = first.submit(bj)
    write(os.path.join(run.staging(boots[0]), "job.json"),
          JobRecord(executor="lava-local", job_id=job_id, boot=boots[0]))
    until_ended(first, job_id)
    sched, run = scheduler(tmp_path, local_executor(tmp_path / "run", lava_run))
    assert sched.run_boots(boots) == 2
    assert int((tmp_path / "count").read_text()) == 2      # r1 once, r2 once
    r1 = json.loads((tmp_path / "run/cells/v/munmap/clean/r1/cell.json").read_text())
    assert (r1["executor"], r1["job_id"], r1["status"]) == ("lava-local", job_id, "ok")
    assert r1["device"].startswith("mmlat-qemu@")
    assert (tmp_path / "run/cells/v/munmap/clean/r1/guest/status").read_text() == "ok\n"
    assert not os.path.exists(os.path.join(run.boot(boots[0]), "job.json"))
    assert read(os.path.join(run.boot(boots[1]), "cell.json"), CellRecord).result.status == "ok"


class FakeServer:
    """A LAVA server's XML-RPC API as lavacli calls it, on a local port:
    jobs are kept in memory, a job is finished once shown twice, its log is
    LOG in the server's form (a YAML list)."""

    def __init__(self, log, refuse=False):
        self.jobs, self.shown, self.canceled, self.auth = {}, {}, [], []
        server = self

        class Handler(xmlrpc.server.SimpleXMLRPCRequestHandler):
            rpc_paths = ("/RPC2",)

            def do_POST(self):
                server.auth.append(self.headers.get("Authorization"))
                super().do_POST()

            def log_message(self, *args):
                pass

        self.rpc = xmlrpc.server.SimpleXMLRPCServer(("127.0.0.1", 0), Handler, allow_none=True, logRequests=False)
        self.port = self.rpc.server_address[1]

        def submit(definition):
            if refuse:
                raise xmlrpc.client.Fault(400, "Job 'x' is invalid")
            self.jobs[len(self.jobs) + 1] = definition
            return len(self.jobs)

        def show(job_id):
            self.shown[job_id] = self.shown.get(job_id, 0) + 1
            done = self.shown[job_id] > 2
            if int(job_id) not in self.jobs:
                raise xmlrpc.client.Fault(404, "Job '%s' was not found." % job_id)
            return {"id": int(job_id), "state": "Finished" if done else "Running",
                    "health": "Complete" if done else "Unknown", "device": "qemu01", "device_type": "qemu"}

        text = "".join("- " + line + "\n" for line in log.splitlines())
        for name, fn in (("system.version", lambda: "2023.01"), ("scheduler.jobs.submit", submit),
                         ("scheduler.jobs.show", show),
                         ("scheduler.jobs.cancel", lambda job_id: self.canceled.append(job_id) or True),
                         ("scheduler.jobs.logs", lambda job_id, start, end: (True, xmlrpc.client.Binary(
                             text.encode())))):
            self.rpc.register_function(fn, name)
        threading.Thread(target=self.rpc.serve_forever, daemon=True).start()

    def identity(self, tmp_path, name="lab"):
        """lavacli's configuration with identity NAME for this server, in
        XDG_CONFIG_HOME as lavacli looks for it."""
        (tmp_path / "lavacli.yaml").write_text(yaml.safe_dump({name: {
            "uri": "http://127.0.0.1:%d/RPC2" % self.port, "username": "mmlat", "token": "s3cret"}}))
        return name


@pytest.fixture
def server(tmp_path, monkeypatch, good_log):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    fake = FakeServer(good_log)
    yield fake
    fake.rpc.shutdown()


def server_values(identity, tags=""):
    return dict(knobs.read({}), LAVA_IDENTITY=identity, LAVA_TAGS=tags)


def test_server_executor(tmp_path, server):
    exe = executor.LavaServerExecutor(str(tmp_path / "run"),
                                      server_values(server.identity(tmp_path), "t1 t2"))
    bj = boot_job(tmp_path)
    job_id = exe.submit(bj)
    assert job_id == "1"
    assert yaml.safe_load(server.jobs[1])["tags"] == ["t1", "t2"]
    assert exe.poll(job_id).state == interface.RUNNING
    assert until_ended(exe, job_id).state == interface.DONE
    result = exe.collect(job_id, bj.staging)
    assert (result.status, result.device) == ("ok", "qemu01")
    assert (tmp_path / "staging-1/job.yaml").read_text() == server.jobs[1]
    assert (tmp_path / "staging-1/guest/status").read_text() == "ok\n"
    exe.cancel(job_id)
    assert server.canceled == ["1"]
    assert exe.poll("99").state == interface.LOST
    token = "Basic " + base64.b64encode(b"mmlat:s3cret").decode()
    assert set(server.auth) == {token}


def test_server_refusal_stops_the_run_naming_it(tmp_path, monkeypatch, good_log):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    fake = FakeServer(good_log, refuse=True)
    exe = executor.LavaServerExecutor(str(tmp_path / "run"), server_values(fake.identity(tmp_path)))
    with pytest.raises(executor.ExecutorError,
                       match="the job of v/munmap/clean/r1 refused: Job 'x' is invalid"):
        exe.submit(boot_job(tmp_path))
    fake.rpc.shutdown()


def test_server_errors_name_the_server_not_the_token(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(executor.ExecutorError, match="no lavacli identity 'nowhere'"):
        executor.Server("nowhere")
    (tmp_path / "lavacli.yaml").write_text(yaml.safe_dump({"down": {
        "uri": "http://127.0.0.1:9/RPC2", "username": "u", "token": "s3cret"}}))
    exe = executor.LavaServerExecutor(str(tmp_path / "run"), server_values("down"))
    with pytest.raises(executor.ExecutorError,
                       match=r"http://127.0.0.1:9/RPC2 \(lavacli identity down\): job 1 failed") as e:
        exe.poll("1")
    assert "s3cret" not in str(e.value)
    exe.cancel("1")     # named, not raised: a stopped run cancels the rest
    assert "job 1 remains on the server: http://127.0.0.1:9/RPC2" in capsys.readouterr().err


@pytest.mark.parametrize("values, message", [
    ({"ACCEL": "kvm"}, "EXECUTOR=lava-local runs its QEMU jobs under tcg-icount, not ACCEL=kvm"),
    ({"TRACE": "plugin"}, "TRACE=plugin loads a QEMU plugin, which a LAVA job's QEMU does not"),
])
def test_the_entry_refuses_what_a_lava_job_cannot_run(values, message):
    from orchestrator import entry
    with pytest.raises(Refused, match=message):
        entry.check_lava(dict(knobs.read({}), EXECUTOR="lava-local", **values))
