"""mmlat's LAVA executors: a boot in, a job id out, the boot's folder back.

  LavaRunExecutor   EXECUTOR=lava-local: lava-run on this machine, one
                    process a job, against a device dictionary rendered
                    here (a QEMU device)
  LavaServerExecutor  EXECUTOR=lava: a LAVA server through lavacli's
                    client, with lavacli's own identity configuration

Both: submit(boot) -> JobRecord, poll(record) -> JobStatus,
cancel(record), collect(record, out_dir) -> BootResult. A JobRecord is
what a run keeps to resume (to/from JSON): a resumed run polls and
collects the jobs it already submitted.
"""
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
import xmlrpc.client
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

import yaml

from . import collect, device, job


class ExecutorError(RuntimeError):
    """The executor cannot reach LAVA, or LAVA refused the job; the message
    says why."""


@dataclass
class JobStatus:
    state: str              # queued | running | finished | lost (its executor no longer knows it)
    health: str = ""        # a finished job's: complete | incomplete | canceled
    device: str = ""
    device_type: str = ""


def sha256_of(path, _cache={}):
    """The sha256 of the file PATH (cached by path, size and mtime: every
    boot of a variant ships the same kernel and initramfs)."""
    st = os.stat(path)
    key = (os.path.abspath(path), st.st_size, st.st_mtime_ns)
    if key not in _cache:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        _cache[key] = digest.hexdigest()
    return _cache[key]


def with_checksums(boot):
    """BOOT with the sha256 of its kernel and initramfs, where they are
    files here, for LAVA to check after its download."""
    sums = {}
    for name in ("kernel", "initrd"):
        location = getattr(boot, name)
        if getattr(boot, name + "_sha256") is None and os.path.isfile(location):
            sums[name + "_sha256"] = sha256_of(location)
    return replace(boot, **sums)


def check_job(definition):
    """Check DEFINITION (a job as a dict) against LAVA's job schema
    (lava_common, Debian's lava-common); raises ValueError naming what
    is wrong."""
    from lava_common.schemas import validate
    from voluptuous import Invalid
    try:
        validate(definition, strict=True)
    except Invalid as exc:
        raise ValueError("job '%s' does not pass LAVA's schema: %s"
                         % (definition.get("job_name"), exc)) from None


class LavaRunExecutor:
    """Jobs run by lava-run, as root, on this machine, each in a folder of
    WORK_DIR: job.yaml, device.yaml (DEVICE rendered for the job),
    lava.log (lava-run's log) and out/ (its output folder)."""
    name = "lava-local"
    GRACE_S = 30    # lava-run's own cancellation (it stops QEMU) before it is killed

    def __init__(self, work_dir, target=job.Target(), device_name="mmlat-qemu", lava_run="lava-run"):
        self.work_dir = Path(work_dir)
        self.target = target
        self.device_name = device_name
        self.lava_run = lava_run
        self.procs = {}

    def _dir(self, job_id):
        return self.work_dir / job_id

    def submit(self, boot):
        boot = with_checksums(boot)
        definition = job.qemu_job(boot, self.target)
        check_job(definition)
        job_id = "mmlat-" + uuid.uuid4().hex[:12]
        folder = self._dir(job_id)
        folder.mkdir(parents=True)
        (folder / "job.yaml").write_text(job.to_yaml(definition))
        device.write(self.device_name, definition["context"], folder / "device.yaml")
        with open(folder / "lava.log", "wb") as log:
            # its own session: a terminal's ^C reaches the run, which
            # cancels; the parent-death signal stops it if the run dies
            self.procs[job_id] = subprocess.Popen(
                ["setpriv", "--pdeathsig", "TERM", self.lava_run, "--job-id", job_id,
                 "--output-dir", str(folder / "out"), "--device", str(folder / "device.yaml"),
                 str(folder / "job.yaml")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return job.JobRecord(self.name, job_id, boot)

    def poll(self, record):
        proc = self.procs.get(record.job_id)
        finished = (self._dir(record.job_id) / "out/result.yaml").exists()
        if proc is not None and proc.poll() is None:
            return JobStatus("running", device=self.device_name, device_type=self.target.device_type)
        if not finished:
            # lava-run ended without a result, or ran under an earlier
            # run of the orchestrator and died with it
            return JobStatus("lost")
        result = yaml.safe_load((self._dir(record.job_id) / "out/result.yaml").read_text()) or {}
        health = "complete" if result.get("result") == "pass" else (
            "canceled" if result.get("error_type") == "Canceled" else "incomplete")
        return JobStatus("finished", health, self.device_name, self.target.device_type)

    def cancel(self, record):
        """Stop the job: lava-run cancels it (and stops its QEMU) on
        SIGTERM; after GRACE_S its session is killed."""
        proc = self.procs.get(record.job_id)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(self.GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def collect(self, record, out_dir):
        text = (self._dir(record.job_id) / "lava.log").read_text(errors="replace")
        result = collect.collect(text, out_dir, record.boot.timeout, self.name, record.job_id,
                                 device="%s@%s" % (self.device_name, socket.gethostname()),
                                 device_type=self.target.device_type, accel=record.boot.accel)
        (Path(out_dir) / "job.yaml").write_text((self._dir(record.job_id) / "job.yaml").read_text())
        return result

    def discard(self, record):
        """Remove the job's folder (after collect)."""
        shutil.rmtree(self._dir(record.job_id), ignore_errors=True)


class LavaServerExecutor:
    """Jobs submitted to a LAVA server through lavacli's client (its
    XML-RPC transport) as the lavacli identity IDENTITY of lavacli's
    configuration (~/.config/lavacli.yaml: uri, username, token), one
    request per call rather than a lavacli process. The jobs' kernel and
    initramfs must be URLs the server's workers can fetch (or paths on a
    worker that shares this machine's files)."""
    name = "lava"
    STATES = {"Submitted": "queued", "Scheduling": "queued", "Scheduled": "queued",
              "Running": "running", "Canceling": "running", "Finished": "finished"}

    def __init__(self, work_dir, target=job.Target(), identity="default"):
        import lavacli
        self.work_dir = Path(work_dir)
        self.target = target
        config = lavacli.load_config(identity)
        if not config.get("uri"):
            raise ExecutorError("no lavacli identity '%s' (lavacli identities add --uri URI --username USER "
                                "--token TOKEN %s)" % (identity, identity))
        uri = urlparse(config["uri"])
        if config.get("username") and config.get("token"):
            uri = uri._replace(netloc="%s:%s@%s" % (config["username"], config["token"], uri.netloc))
        self.uri = uri.geturl()
        self.where = "%s (lavacli identity %s)" % (config["uri"], identity)
        transport = lavacli.RequestsTransport(uri.scheme, config.get("proxy"), config.get("timeout", 20.0),
                                              config.get("verify_ssl_cert", True))
        self.proxy = xmlrpc.client.ServerProxy(self.uri, allow_none=True, transport=transport)

    def _call(self, what, method, *args):
        try:
            return method(*args)
        except xmlrpc.client.Fault as exc:
            raise ExecutorError("%s: %s refused: %s" % (self.where, what, exc.faultString)) from None
        except (xmlrpc.client.Error, OSError) as exc:
            raise ExecutorError("%s: %s failed: %s" % (self.where, what, exc)) from None

    def submit(self, boot):
        boot = with_checksums(boot)
        definition = job.qemu_job(boot, self.target)
        check_job(definition)
        text = job.to_yaml(definition)
        job_id = self._call("job '%s'" % definition["job_name"], self.proxy.scheduler.jobs.submit, text)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / ("%s.yaml" % job_id)).write_text(text)
        return job.JobRecord(self.name, str(job_id), boot)

    def show(self, job_id):
        return self._call("job %s" % job_id, self.proxy.scheduler.jobs.show, str(job_id))

    def poll(self, record):
        details = self.show(record.job_id)
        state = self.STATES.get(details.get("state"), "queued")
        health = str(details.get("health", "")).lower() if state == "finished" else ""
        return JobStatus(state, health, details.get("device") or "", details.get("device_type") or "")

    def cancel(self, record):
        self._call("canceling job %s" % record.job_id, self.proxy.scheduler.jobs.cancel, str(record.job_id))

    def collect(self, record, out_dir):
        details = self.show(record.job_id)
        _, data = self._call("the log of job %s" % record.job_id, self.proxy.scheduler.jobs.logs,
                             str(record.job_id), 0, None)
        result = collect.collect(str(data), out_dir, record.boot.timeout, self.name, record.job_id,
                                 device=details.get("device") or "",
                                 device_type=details.get("device_type") or "", accel=record.boot.accel)
        definition = self.work_dir / ("%s.yaml" % record.job_id)
        if definition.exists():
            (Path(out_dir) / "job.yaml").write_text(definition.read_text())
        return result


def resubmission(executor, record, result, max_attempts):
    """The resubmitted JobRecord of a boot whose job the lab failed
    (result.retry), while attempts remain; None otherwise."""
    if not result.retry or record.attempt >= max_attempts:
        return None
    new = executor.submit(record.boot)
    new.attempt = record.attempt + 1
    new.reasons = record.reasons + [result.cause]
    return new


def wait(executor, record, poll_s=1.0, timeout_s=None):
    """Poll RECORD's job until it is finished or lost; returns its last
    JobStatus."""
    end = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        status = executor.poll(record)
        if status.state in ("finished", "lost"):
            return status
        if end is not None and time.monotonic() > end:
            return status
        time.sleep(poll_s)
