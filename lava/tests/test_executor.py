"""The executors' plumbing, against stand-ins for lava-run and a LAVA
server's XML-RPC API that give logs made by LAVA's own loggers: submission, polling,
cancellation, collection, resubmission of a job the lab failed, and the
run driver's resume. (A real lava-run boot and a real server's job:
test_boot.py.)"""
import base64
import json
import sys
import textwrap
import threading
import time
import xmlrpc.client
import xmlrpc.server

import pytest
import yaml

from conftest import lava_log, print_block
from mmlat_lava import __main__ as cli
from mmlat_lava import executor, job


@pytest.fixture
def good_log(tmp_path, guest_path):
    folder = tmp_path / "shipped"
    folder.mkdir()
    (folder / "status").write_text("ok\n")
    assert print_block(guest_path, folder, tmp_path / "console").returncode == 0
    lines = ["mmlat-runner: start uptime=1.5"] + (tmp_path / "console").read_text().splitlines()
    return lava_log(("\r\n".join(lines) + "\r\n").encode())


INFRA = {"result": "fail", "error_type": "Infrastructure", "error_msg": "Unable to download"}


def boot(tmp_path, **kw):
    (tmp_path / "bzImage").write_bytes(b"k")
    (tmp_path / "initrd").write_bytes(b"i")
    fields = dict(run_id="t", variant="mainline", workload="munmap", boot="clean", repeat=1,
                  kernel=str(tmp_path / "bzImage"), initrd=str(tmp_path / "initrd"),
                  job_args="mmlat.workload=munmap mmlat.duration=1 mmlat.trace=none mmlat.seed=1",
                  duration_s=1)
    fields.update(kw)
    return job.BootSpec(**fields)


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


def test_lava_run_submit_poll_collect(tmp_path, good_log):
    exe = executor.LavaRunExecutor(tmp_path / "work", lava_run=fake_lava_run(tmp_path, [good_log]))
    record = exe.submit(boot(tmp_path))
    assert record.boot.kernel_sha256 is not None
    folder = tmp_path / "work" / record.job_id
    definition = yaml.safe_load((folder / "job.yaml").read_text())
    assert definition["job_name"] == "mmlat t mainline/munmap/clean/r1"
    assert "-icount shift=3,sleep=off" in yaml.safe_load((folder / "device.yaml").read_text())[
        "actions"]["boot"]["methods"]["qemu"]["parameters"]["extra"]
    status = executor.wait(exe, record, poll_s=0.05, timeout_s=30)
    assert (status.state, status.health) == ("finished", "complete")
    result = exe.collect(record, tmp_path / "boot")
    assert (result.status, result.executor) == ("ok", "lava-local")
    assert (tmp_path / "boot/guest/status").read_text() == "ok\n"
    assert (tmp_path / "boot/job.yaml").exists()


def test_lava_run_cancel(tmp_path):
    exe = executor.LavaRunExecutor(tmp_path / "work", lava_run=fake_lava_run(tmp_path, ["sleep"]))
    record = exe.submit(boot(tmp_path))
    time.sleep(1)
    assert exe.poll(record).state == "running"
    exe.cancel(record)
    assert exe.poll(record).health == "canceled"
    assert exe.collect(record, tmp_path / "boot").cause == "lava: job canceled"


def test_lava_run_job_of_an_earlier_run_is_lost(tmp_path, good_log):
    exe = executor.LavaRunExecutor(tmp_path / "work", lava_run=fake_lava_run(tmp_path, ["sleep"]))
    record = exe.submit(boot(tmp_path))
    again = executor.LavaRunExecutor(tmp_path / "work")
    assert again.poll(record).state == "lost"
    exe.cancel(record)


def test_resubmission_is_bounded(tmp_path):
    infra = lava_log(b"", before_boot=True, result=INFRA)
    exe = executor.LavaRunExecutor(tmp_path / "work", lava_run=fake_lava_run(tmp_path, [infra]))
    record = exe.submit(boot(tmp_path))
    reasons = []
    for attempt in (1, 2, 3):
        assert record.attempt == attempt
        executor.wait(exe, record, poll_s=0.05, timeout_s=30)
        result = exe.collect(record, tmp_path / ("boot%d" % attempt))
        assert result.retry
        reasons.append(result.cause)
        again = executor.resubmission(exe, record, result, max_attempts=3)
        if attempt == 3:
            assert again is None
        else:
            assert again.reasons == reasons
            record = again


def test_run_driver_resubmits_and_resumes(tmp_path, good_log):
    infra = lava_log(b"", before_boot=True, result=INFRA)
    lava_run = fake_lava_run(tmp_path, [infra, good_log])
    boots = [boot(tmp_path, repeat=r, job_args="mmlat.workload=munmap mmlat.duration=1 mmlat.seed=%d" % r)
             for r in (1, 2)]
    (tmp_path / "boots.json").write_text(json.dumps([b.to_json() for b in boots]))
    out = tmp_path / "run"
    args = ["run", str(tmp_path / "boots.json"), "--out", str(out), "--executor", "lava-local",
            "--lava-run", lava_run, "--poll", "0.05"]
    assert cli.main(args + ["--jobs", "2"]) == 0
    for r in (1, 2):
        assert (out / ("cells/mainline/munmap/clean/r%d/guest/status" % r)).read_text() == "ok\n"
    assert not list((out / "jobs").rglob("*.json"))
    # two first submissions, one resubmission; a rerun finds every boot
    # done and submits nothing
    assert int((tmp_path / "count").read_text()) == 3
    assert cli.main(args) == 0
    assert int((tmp_path / "count").read_text()) == 3


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


def test_server_executor(tmp_path, server):
    exe = executor.LavaServerExecutor(tmp_path / "jobs", job.Target(tags=("t1",)), identity=server.identity(tmp_path))
    record = exe.submit(boot(tmp_path))
    assert record.job_id == "1"
    submitted = yaml.safe_load(server.jobs[1])
    assert submitted["tags"] == ["t1"]
    assert exe.poll(record).state == "running"
    status = executor.wait(exe, record, poll_s=0.01, timeout_s=10)
    assert (status.state, status.health, status.device) == ("finished", "complete", "qemu01")
    result = exe.collect(record, tmp_path / "boot")
    assert (result.status, result.lava_device, result.lava_job_id) == ("ok", "qemu01", "1")
    assert (tmp_path / "boot/job.yaml").read_text() == server.jobs[1]
    assert (tmp_path / "boot/guest/status").read_text() == "ok\n"
    exe.cancel(record)
    assert server.canceled == ["1"]
    token = "Basic " + base64.b64encode(b"mmlat:s3cret").decode()
    assert set(server.auth) == {token}


def test_server_refusal_is_an_error(tmp_path, monkeypatch, good_log):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    fake = FakeServer(good_log, refuse=True)
    exe = executor.LavaServerExecutor(tmp_path / "jobs", identity=fake.identity(tmp_path))
    with pytest.raises(executor.ExecutorError,
                       match="job 'mmlat t mainline/munmap/clean/r1' refused: Job 'x' is invalid"):
        exe.submit(boot(tmp_path))
    fake.rpc.shutdown()


def test_server_errors_name_the_server(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    with pytest.raises(executor.ExecutorError, match="no lavacli identity 'nowhere'"):
        executor.LavaServerExecutor(tmp_path / "jobs", identity="nowhere")
    (tmp_path / "lavacli.yaml").write_text(yaml.safe_dump({"down": {"uri": "http://127.0.0.1:9/RPC2"}}))
    exe = executor.LavaServerExecutor(tmp_path / "jobs", identity="down")
    message = r"http://127.0.0.1:9/RPC2 \(lavacli identity down\): job 1 failed"
    with pytest.raises(executor.ExecutorError, match=message):
        exe.poll(job.JobRecord("lava", "1", boot(tmp_path)))
