"""What the LAVA executors' tests share (orchestrator/lava/): a results
block printed by guest/console-results.sh under the guest's busybox
(conftest's guest_path), and job logs made by LAVA's own loggers."""
import io
import logging
import os
import subprocess
from helpers import ROOT


def print_block(guest_path, results_dir, console):
    """Run guest/console-results.sh on RESULTS_DIR into the file CONSOLE,
    under the guest's busybox shell, its console_level recording; returns
    the completed process."""
    bindir, calls = guest_path
    env = dict(os.environ, PATH=str(bindir), MMLAT_CONSOLE_RESULTS_LIB="1")
    script = ('. "$1"; shift; console_level() { echo "$*" >> "%s"; }; '
              'MMLAT_CONSOLE_RESULTS_LIB=0; main "$@"' % calls)
    return subprocess.run([str(bindir / "sh"), "-c", script, "sh",
                           str(ROOT / "guest/console-results.sh"), str(results_dir), str(console)],
                          env=env, capture_output=True, text=True)


def lava_log(console_bytes, chunk=97, result=None, before_boot=False):
    """The job log lava-run prints for a device whose console output is
    CONSOLE_BYTES, made by LAVA's own loggers: its ShellLogger (which
    pexpect feeds with whatever the serial read returns, here in CHUNK
    sized pieces) and its YAMLLogger. RESULT: the lava/job result's
    fields (default: pass); BEFORE_BOOT: the job ended before QEMU
    started (no boot command, no console)."""
    from lava_common.log import YAMLLogger
    from lava_dispatcher.shell import ShellLogger
    logger = YAMLLogger("mmlat-test")
    stream = io.StringIO()
    logger.addHandler(logging.StreamHandler(stream))
    logger.setLevel(logging.DEBUG)
    logger.info("lava-dispatcher, installed at version: 2023.01")
    if not before_boot:
        logger.info("qemu-system-x86, installed at version: 1:7.2+dfsg-7+deb12u18+b3, host architecture: amd64")
        logger.info("Boot command: /usr/bin/qemu-system-x86_64 -nographic")
        shell = ShellLogger(logger)
        text = console_bytes.decode()
        for at in range(0, len(text), chunk):
            shell.write(text[at:at + chunk])
    logger.results(dict({"definition": "lava", "case": "job", "result": "pass"}, **(result or {})))
    return stream.getvalue()
