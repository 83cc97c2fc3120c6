"""mmlat_lava's command line (PYTHONPATH=lava /usr/bin/python3 -m mmlat_lava):

  job BOOT.json [--x86] [--device-type T] [--tag T]...
        the LAVA job of one boot (a BootSpec as JSON), checked against
        LAVA's schema, on stdout
  device NAME [--job JOB.yaml]
        the device dictionary lava/devices/NAME.jinja2 rendered for a job's
        context, on stdout
  run --executor lava-local|lava --out DIR BOOTS.json [--jobs N] ...
        run a list of boots (BootSpecs as a JSON list) into DIR/cells/<variant>/
        <workload>/<boot>/r<N>/; a boot already there is skipped, a job
        already submitted (DIR/jobs/) is waited on and collected
  collect LOG OUT --timeout S
        a job's log (lava-run's output or a server's) into the boot folder OUT

`run` is a small driver for tests and measurements: submit while fewer
than --jobs run, poll, collect, resubmit a job the lab failed; the
orchestrator (bench/) drives the same executor calls.
"""
import argparse
import json
import shutil
import signal
import sys
import time
from pathlib import Path

import yaml

from . import collect, device, executor, job


def _target(args):
    return job.Target(device_type=args.device_type, tags=tuple(args.tag or ()))


def cmd_job(args):
    with open(args.boot) as f:
        boot = job.BootSpec.from_json(json.load(f))
    definition = (job.x86_job if args.x86 else job.qemu_job)(boot, _target(args))
    executor.check_job(definition)
    sys.stdout.write(job.to_yaml(definition))


def cmd_device(args):
    context = {}
    if args.job:
        with open(args.job) as f:
            context = yaml.safe_load(f).get("context", {})
    sys.stdout.write(device.render(args.name, context))


def cmd_collect(args):
    result = collect.collect(Path(args.log).read_text(errors="replace"), args.out, args.timeout,
                             args.executor, args.job_id)
    print(json.dumps(result.to_json(), indent=2))
    return 0 if result.status == "ok" else 1


def _executor(args, out):
    if args.executor == "lava-local":
        return executor.LavaRunExecutor(out / "lava-run", _target(args), lava_run=args.lava_run)
    return executor.LavaServerExecutor(out / "lava-jobs", _target(args), identity=args.identity)


def _record_path(out, boot):
    return out / "jobs" / (boot.cell_path + ".json")


def _finish(exe, record, out):
    """Collect RECORD's finished job into its boot folder; returns the
    BootResult."""
    final = out / "cells" / record.boot.cell_path
    staging = final.parent / (".%s.tmp" % final.name)
    shutil.rmtree(staging, ignore_errors=True)
    result = exe.collect(record, staging)
    if not result.retry:
        staging.rename(final)
    return result


def cmd_run(args):
    out = Path(args.out)
    with open(args.boots) as f:
        boots = [job.BootSpec.from_json(doc) for doc in json.load(f)]
    exe = _executor(args, out)
    todo = [b for b in boots if not (out / "cells" / b.cell_path).is_dir()]
    running = {}        # job id -> (JobRecord, time submitted)
    for boot in list(todo):
        path = _record_path(out, boot)
        if path.exists():
            record = job.JobRecord.from_json(json.loads(path.read_text()))
            if record.executor == exe.name:
                running[record.job_id] = (record, time.monotonic())
                todo.remove(boot)
    failed = 0
    stop = []
    signal.signal(signal.SIGINT, lambda *_: stop.append("SIGINT"))
    signal.signal(signal.SIGTERM, lambda *_: stop.append("SIGTERM"))
    t0 = time.monotonic()
    while (todo or running) and not stop:
        while todo and len(running) < args.jobs:
            boot = todo.pop(0)
            record = exe.submit(boot)
            path = _record_path(out, boot)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(record.dumps())
            running[record.job_id] = (record, time.monotonic())
            print("submitted %s: job %s" % (boot.cell_path, record.job_id), flush=True)
        for job_id, (record, since) in list(running.items()):
            status = exe.poll(record)
            if status.state == "lost":
                print("%s: job %s lost (its lava-run ended with the run that started it): submitted again"
                      % (record.boot.cell_path, job_id), flush=True)
                del running[job_id]
                todo.append(record.boot)
                continue
            if status.state != "finished":
                continue
            del running[job_id]
            result = _finish(exe, record, out)
            again = executor.resubmission(exe, record, result, args.max_attempts)
            if again is not None:
                print("%s: job %s failed for the lab (%s): attempt %d is job %s"
                      % (record.boot.cell_path, job_id, result.cause, again.attempt, again.job_id), flush=True)
                _record_path(out, record.boot).write_text(again.dumps())
                running[again.job_id] = (again, time.monotonic())
                continue
            _record_path(out, record.boot).unlink()
            failed += result.status != "ok"
            print("%s: %s%s (job %s, %.1fs from submission, LAVA job %.1fs, QEMU %.1fs)"
                  % (record.boot.cell_path, result.status, ": " + result.cause if result.cause else "",
                     job_id, time.monotonic() - since, result.lava_job_seconds or 0, result.wall_seconds or 0),
                  flush=True)
        time.sleep(args.poll)
    if stop:
        for record, _ in running.values():
            exe.cancel(record)
        print("stopped by %s: %d jobs canceled (%s); %d boots not started; rerun to do the rest"
              % (stop[0], len(running), ", ".join(running) or "none", len(todo)), file=sys.stderr)
        return 130
    print("%d boots in %.1fs, %d failed" % (len(boots), time.monotonic() - t0, failed))
    return 1 if failed else 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mmlat_lava", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def targets(p):
        p.add_argument("--device-type", default="qemu")
        p.add_argument("--tag", action="append", help="a tag every job carries (repeatable)")

    p = sub.add_parser("job")
    p.add_argument("boot")
    p.add_argument("--x86", action="store_true", help="a bare-metal x86 job (tftp, ipxe)")
    targets(p)
    p.set_defaults(func=cmd_job)

    p = sub.add_parser("device")
    p.add_argument("name")
    p.add_argument("--job")
    p.set_defaults(func=cmd_device)

    p = sub.add_parser("run")
    p.add_argument("boots")
    p.add_argument("--out", required=True)
    p.add_argument("--executor", choices=("lava-local", "lava"), required=True)
    p.add_argument("--jobs", type=int, default=1, help="jobs submitted at once")
    p.add_argument("--identity", default="default", help="lavacli identity (--executor lava)")
    p.add_argument("--lava-run", default="lava-run", help="the lava-run command (--executor lava-local)")
    p.add_argument("--max-attempts", type=int, default=3, help="submissions of a boot the lab fails")
    p.add_argument("--poll", type=float, default=0.2, help="seconds between polls")
    targets(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("collect")
    p.add_argument("log")
    p.add_argument("out")
    p.add_argument("--timeout", type=int, required=True, help="the boot's timeout (s), for a hang's cause")
    p.add_argument("--executor", default="lava-local")
    p.add_argument("--job-id", default="")
    p.set_defaults(func=cmd_collect)

    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except (ValueError, executor.ExecutorError, device.DeviceError, OSError) as exc:
        print("mmlat: error: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
