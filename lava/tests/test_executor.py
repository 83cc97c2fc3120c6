"""The executors' plumbing, against stand-ins for lava-run and lavacli
that print logs made by LAVA's own loggers: submission, polling,
cancellation, collection, resubmission of a job the lab failed, and the
run driver's resume. (A real lava-run boot and a real server's job:
test_boot.py.)"""
import json
import sys
import textwrap
import time

import pytest
import yaml

from conftest import LAVA_DIR, lava_log, print_block
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


def fake_lavacli(tmp_path, log, refuse=False):
    """A lavacli that keeps its jobs in a folder: submit prints an id (or a
    refusal, exit 0, as lavacli does), show reports a finished job once
    shown twice, logs --raw prints the server's form of LOG."""
    state = tmp_path / "server"
    state.mkdir()
    (state / "log").write_text("".join("- " + line + "\n" for line in log.splitlines()))
    script = tmp_path / "lavacli"
    script.write_text(textwrap.dedent("""\
        #!%s
        import pathlib, sys, yaml
        state = pathlib.Path("%s")
        args = sys.argv[1:]
        (state / "calls").open("a").write(" ".join(args) + "\\n")
        if args[:2] == ["-i", "lab"]:
            args = args[2:]
        if args[:2] == ["jobs", "submit"]:
            if %r:
                print("Unable to submit %%s: <Fault 400: 'Job 'x' is invalid'>" %% args[2])
                sys.exit(0)
            n = len(list(state.glob("job-*"))) + 1
            (state / ("job-%%d" %% n)).write_text(open(args[2]).read())
            print(n)
        elif args[:2] == ["jobs", "show"]:
            shown = state / ("shown-" + args[2])
            count = int(shown.read_text()) + 1 if shown.exists() else 1
            shown.write_text(str(count))
            print(yaml.safe_dump({"id": int(args[2]), "state": "Finished" if count > 2 else "Running",
                                  "health": "Complete" if count > 2 else "Unknown",
                                  "device": "qemu01", "device_type": "qemu"}))
        elif args[:2] == ["jobs", "logs"]:
            sys.stdout.write((state / "log").read_text())
        elif args[:2] == ["jobs", "cancel"]:
            (state / ("canceled-" + args[2])).write_text("")
        else:
            sys.exit("unexpected: %%s" %% args)
        """ % (sys.executable, state, refuse)))
    script.chmod(0o755)
    return str(script), state


def test_server_executor(tmp_path, good_log):
    lavacli, state = fake_lavacli(tmp_path, good_log)
    exe = executor.LavaServerExecutor(tmp_path / "jobs", job.Target(tags=("t1",)), identity="lab", lavacli=lavacli)
    record = exe.submit(boot(tmp_path))
    assert record.job_id == "1"
    submitted = yaml.safe_load((state / "job-1").read_text())
    assert submitted["tags"] == ["t1"]
    assert exe.poll(record).state == "running"
    status = executor.wait(exe, record, poll_s=0.01, timeout_s=10)
    assert (status.state, status.health, status.device) == ("finished", "complete", "qemu01")
    result = exe.collect(record, tmp_path / "boot")
    assert (result.status, result.lava_device, result.lava_job_id) == ("ok", "qemu01", "1")
    assert (tmp_path / "boot/job.yaml").read_text() == (state / "job-1").read_text()
    exe.cancel(record)
    assert (state / "canceled-1").exists()
    assert all(call.startswith("-i lab ") for call in (state / "calls").read_text().splitlines())


def test_server_refusal_is_an_error(tmp_path, good_log):
    lavacli, _ = fake_lavacli(tmp_path, good_log, refuse=True)
    exe = executor.LavaServerExecutor(tmp_path / "jobs", lavacli=lavacli)
    with pytest.raises(executor.ExecutorError, match="the server refused job 'mmlat t mainline/munmap/clean/r1'"):
        exe.submit(boot(tmp_path))


def test_lavacli_failure_is_an_error(tmp_path):
    exe = executor.LavaServerExecutor(tmp_path / "jobs", lavacli=str(LAVA_DIR / "no-such-lavacli"))
    with pytest.raises(executor.ExecutorError, match="no-such-lavacli not found"):
        exe.poll(job.JobRecord("lava", "1", boot(tmp_path)))
    false = tmp_path / "false-lavacli"
    false.write_text("#!/bin/sh\necho 'Unknown identity' >&2; exit 1\n")
    false.chmod(0o755)
    exe = executor.LavaServerExecutor(tmp_path / "jobs", lavacli=str(false))
    with pytest.raises(executor.ExecutorError, match="Unknown identity"):
        exe.poll(job.JobRecord("lava", "1", boot(tmp_path)))
