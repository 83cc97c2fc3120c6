"""EXECUTOR=lava-local and EXECUTOR=lava: each boot one LAVA job
(job.py), its results read back from the job's log (collect.py).

  lava-local   lava-run on this machine, one process a job, against
               lava/devices/mmlat-qemu.jinja2 rendered for the job
  lava         a LAVA server, through lavacli's client as the lavacli
               identity LAVA_IDENTITY (~/.config/lavacli.yaml: uri,
               username, token), one request a call

Every job of a run goes to LAVA_DEVICE_TYPE with LAVA_TAGS (qemu: a QEMU
job; another device type: a bare-metal x86 job). A job the lab ended
without results (collect.lab_fault) is FAILED with retry, and the
scheduler submits it again up to its bound, logging the reason. A resumed
run asks about its recorded job ids: lava-local finds a job's folder
under the run (a job whose lava-run died with the run that started it,
and left no result, is LOST), lava asks the server."""
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
import xmlrpc.client
from urllib.parse import urlparse

import yaml

from .. import children, qemu
from ..executor import DONE, FAILED, LOST, QUEUED, RUNNING, Executor, JobStatus
from ..say import Refused, log
from . import collect, device, job, joblog


class ExecutorError(Refused):
    """LAVA cannot be reached, or refused a job: the run stops, naming
    why; a rerun with its RUN_ID collects what was submitted."""


def sha256_of(path, _cache={}):
    """The sha256 of the file path (cached by path, size and mtime: every
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


def target(values):
    return job.Target(device_type=values["LAVA_DEVICE_TYPE"],
                      tags=tuple(values["LAVA_TAGS"].split()))


def definition_of(boot_job, tgt):
    """The checked job definition of boot_job for tgt."""
    sums = {name: sha256_of(path) for name, path in (("kernel", boot_job.kernel),
                                                     ("initrd", boot_job.initrd))
            if os.path.isfile(path)}
    make = job.qemu_job if tgt.device_type == "qemu" else job.x86_job
    try:
        definition = make(boot_job, tgt, sums)
        job.check(definition)
    except job.JobError as e:
        raise ExecutorError(str(e)) from None
    return definition


def _timeout_of(definition):
    """The boot's timeout, as its job carries it (the test action's)."""
    return definition["actions"][-1]["test"]["timeout"]["seconds"]


def _accel_of(definition):
    return "tcg-icount" if definition["device_type"] == "qemu" else "bare metal"


class _Finished:
    """Finished jobs' logs, parsed once for poll and again used by collect."""

    def __init__(self):
        self.logs = {}

    def status(self, job_id, text):
        log = joblog.parse(text)
        fault = collect.lab_fault(log)
        if fault:
            return JobStatus(FAILED, fault, retry=True)
        self.logs[job_id] = (text, log)
        return JobStatus(DONE)

    def collect(self, job_id, dest, definition, device_name):
        text, log = self.logs.pop(job_id)
        with open(os.path.join(dest, "job.yaml"), "w") as f:
            f.write(job.to_yaml(definition))
        return collect.collect(text, log, dest, _timeout_of(definition), _accel_of(definition),
                               device_name)


class LavaLocalExecutor(Executor):
    """Jobs run by lava-run, as root, on this machine, each in the folder
    RUN/lava/JOB_ID: job.yaml, device.yaml (the device rendered for the
    job, with the icount QEMU of local boots, bench/icount-qemu.sh's),
    lava.log (lava-run's log) and out/ (its output folder)."""
    name = "lava-local"
    DEVICE = "mmlat-qemu"
    LAVA_RUN = "lava-run"
    GRACE_S = 30    # lava-run's own cancellation (it stops QEMU) before it is killed

    def __init__(self, run_dir, values):
        self.dir = os.path.join(run_dir, "lava")
        self.target = target(values)
        self.device = "%s@%s" % (self.DEVICE, socket.gethostname())
        self.sessions = children.Sessions()
        self.finished = _Finished()
        self.abandoned = {}     # job id -> its JobStatus, FAILED or LOST

    def _path(self, job_id, *names):
        return os.path.join(self.dir, job_id, *names)

    def submit(self, boot_job):
        definition = definition_of(boot_job, self.target)
        job_id = "mmlat-" + uuid.uuid4().hex[:12]
        os.makedirs(self._path(job_id))
        with open(self._path(job_id, "job.yaml"), "w") as f:
            f.write(job.to_yaml(definition))
        command, why = qemu.icount_command(boot_job.smp)
        if why:
            raise ExecutorError("EXECUTOR=lava-local: %s" % why)
        try:
            device.write(self.DEVICE, dict(definition["context"], qemu_command=command[0],
                                           qemu_command_options=command[1:]),
                         self._path(job_id, "device.yaml"))
        except device.DeviceError as e:
            raise ExecutorError(str(e)) from None
        with open(self._path(job_id, "lava.log"), "wb") as log:
            proc = children.session(
                [self.LAVA_RUN, "--job-id", job_id, "--output-dir", self._path(job_id, "out"),
                 "--device", self._path(job_id, "device.yaml"), self._path(job_id, "job.yaml")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        self.sessions.add(job_id, proc)
        return job_id

    def poll(self, job_id):
        if job_id in self.abandoned:
            return self.abandoned[job_id]
        proc = self.sessions.get(job_id)
        if proc is not None and proc.poll() is None:
            return JobStatus(RUNNING)
        if os.path.exists(self._path(job_id, "out", "result.yaml")):
            with open(self._path(job_id, "lava.log"), errors="replace") as f:
                status = self.finished.status(job_id, f.read())
        elif proc is None:
            status = JobStatus(LOST, "no lava-run of this run has it (it ended with the run "
                               "that started it)")
        else:
            status = JobStatus(FAILED, "lava-run ended (exit %d) without the job's result: see %s"
                               % (proc.returncode, self._abandoned_log(job_id)), retry=True)
        if status.state != DONE:
            self._abandon(job_id, status)
        return status

    def _abandoned_log(self, job_id):
        return os.path.join(self.dir, "abandoned", job_id + ".log")

    def _abandon(self, job_id, status):
        """A job no boot is collected from (the scheduler submits the boot
        again, or records it failed with status's cause): its log kept in
        RUN/lava/abandoned/, its folder gone."""
        self.abandoned[job_id] = status
        self.sessions.forget(job_id)
        if os.path.exists(self._path(job_id, "lava.log")):
            os.makedirs(os.path.dirname(self._abandoned_log(job_id)), exist_ok=True)
            os.replace(self._path(job_id, "lava.log"), self._abandoned_log(job_id))
        shutil.rmtree(self._path(job_id), ignore_errors=True)

    def collect(self, job_id, dest):
        self.sessions.forget(job_id)
        with open(self._path(job_id, "job.yaml")) as f:
            definition = yaml.safe_load(f)
        result = self.finished.collect(job_id, dest, definition, self.device)
        shutil.rmtree(self._path(job_id), ignore_errors=True)
        return result

    def cancel(self, job_id):
        """lava-run cancels its job (and stops QEMU) on SIGTERM; after
        GRACE_S its session is killed."""
        proc = self.sessions.get(job_id)
        if proc is not None and proc.poll() is None:
            children.stop_session(proc)
            try:
                proc.wait(self.GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        self.sessions.forget(job_id)
        shutil.rmtree(self._path(job_id), ignore_errors=True)

    def wait(self, job_ids, timeout):
        self.sessions.wait(job_ids, timeout)


class Server:
    """A LAVA server through lavacli's client (its XML-RPC transport), as
    the lavacli identity of lavacli's configuration (~/.config/lavacli.yaml:
    uri, username, token). Errors name the server, never the token."""

    def __init__(self, identity):
        import lavacli
        config = lavacli.load_config(identity)
        if not config.get("uri"):
            raise ExecutorError("no lavacli identity '%s' (lavacli identities add --uri URI "
                                "--username USER --token TOKEN %s)" % (identity, identity))
        uri = urlparse(config["uri"])
        self.token = config.get("token") or ""
        if config.get("username") and self.token:
            uri = uri._replace(netloc="%s:%s@%s" % (config["username"], self.token, uri.netloc))
        self.where = "%s (lavacli identity %s)" % (config["uri"], identity)
        transport = lavacli.RequestsTransport(uri.scheme, config.get("proxy"),
                                              config.get("timeout", 20.0),
                                              config.get("verify_ssl_cert", True))
        self.proxy = xmlrpc.client.ServerProxy(uri.geturl(), allow_none=True, transport=transport)

    def call(self, what, method, *args, missing=None):
        """self.proxy's method (a dotted name) with args; missing: what a
        404 returns instead of failing."""
        try:
            return getattr(self.proxy, method)(*args)
        except xmlrpc.client.Fault as e:
            if e.faultCode == 404 and missing is not None:
                return missing
            raise ExecutorError(self._hidden("%s: %s refused: %s" % (self.where, what,
                                                                     e.faultString))) from None
        except (xmlrpc.client.Error, OSError) as e:
            raise ExecutorError(self._hidden("%s: %s failed: %s" % (self.where, what, e))) \
                from None

    def _hidden(self, message):
        return message.replace(self.token, "<token>") if self.token else message


class LavaServerExecutor(Executor):
    """Jobs submitted to a LAVA server (Server, as LAVA_IDENTITY). The
    jobs' kernel and initramfs are paths, as file:// URLs: a worker must
    share this machine's files (the local server's does; a lab's needs the
    images published: lava/README.md). Each job's definition is kept in
    RUN/lava/JOB_ID.yaml."""
    name = "lava"
    STATES = {"Submitted": QUEUED, "Scheduling": QUEUED, "Scheduled": QUEUED,
              "Running": RUNNING, "Canceling": RUNNING, "Finished": DONE}

    def __init__(self, run_dir, values):
        self.dir = os.path.join(run_dir, "lava")
        self.target = target(values)
        self.server = Server(values["LAVA_IDENTITY"])
        self.finished = _Finished()
        self.devices = {}

    def _definition_path(self, job_id):
        return os.path.join(self.dir, "%s.yaml" % job_id)

    def submit(self, boot_job):
        text = job.to_yaml(definition_of(boot_job, self.target))
        job_id = str(self.server.call("the job of %s" % boot_job.boot.path,
                                      "scheduler.jobs.submit", text))
        os.makedirs(self.dir, exist_ok=True)
        with open(self._definition_path(job_id), "w") as f:
            f.write(text)
        return job_id

    def poll(self, job_id):
        details = self.server.call("job %s" % job_id, "scheduler.jobs.show", job_id, missing={})
        if not details:
            return JobStatus(LOST, "the server has no job %s" % job_id)
        self.devices[job_id] = details.get("device") or ""
        state = self.STATES.get(details.get("state"), QUEUED)
        if state != DONE:
            return JobStatus(state)
        _, data = self.server.call("the log of job %s" % job_id, "scheduler.jobs.logs",
                                   job_id, 0, None)
        text = data.data.decode(errors="replace") if isinstance(data, xmlrpc.client.Binary) \
            else str(data)
        return self.finished.status(job_id, text)

    def collect(self, job_id, dest):
        with open(self._definition_path(job_id)) as f:
            definition = yaml.safe_load(f)
        return self.finished.collect(job_id, dest, definition, self.devices.get(job_id, ""))

    def cancel(self, job_id):
        """The server cancels the job; one it cannot is named, left to
        run (a stopped run cancels every job it has, whatever fails)."""
        try:
            self.server.call("canceling job %s" % job_id, "scheduler.jobs.cancel", job_id)
        except ExecutorError as e:
            log("job %s remains on the server: %s" % (job_id, e))

    def wait(self, job_ids, timeout):
        time.sleep(timeout)
