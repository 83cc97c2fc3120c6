"""Job definitions: what they carry, LAVA's schema, and lava-run
--validate against device dictionaries rendered from lava-server's
device types (QEMU and bare-metal x86)."""
import hashlib
import os
import re
import shlex
import shutil
import subprocess

import pytest
import yaml
from orchestrator.executor import BootJob
from orchestrator.lava import device, executor, job
from plan.model import Boot, Cell, GuestJob

JOB_ARGS = ("mmlat.workload=imap mmlat.params=n=16,s=1 mmlat.duration=5 mmlat.size_mib=16 "
            "mmlat.trace=windows mmlat.seed=3 mmlat.results=console")


def boot(variant="patched", run_id="20260101-120000", workload="imap:n=16,s=1", **kw):
    """A BootJob as the scheduler makes it; kw: its fields."""
    name, _, params = workload.partition(":")
    fields = dict(run_id=run_id, boot=Boot(Cell(variant, workload), "traced", 3, 1),
                  job=GuestJob(workload=name, params=params,
                               knobs={"duration": "5", "size_mib": "16", "trace": "windows"},
                               seed=3, calib=""),
                  kernel="/srv/kernel-patched/bzImage", initrd="/srv/initrd-patched.cpio",
                  staging="/srv/run/staging", accel="tcg-icount", smp=1, memory_mib=1024,
                  icount_shift=3, timeout_s=340)
    fields.update(kw)
    return BootJob(**fields)


def qemu_command(definition, device_yaml):
    """The QEMU command lava-run would start for DEFINITION on the device
    DEVICE_YAML, split as pexpect splits it (CallQemuAction joins the
    device's command, options and extra options, then each image's
    image_arg with the image's path substituted)."""
    params = yaml.safe_load(device_yaml)["actions"]["boot"]["methods"]["qemu"]["parameters"]
    parts = [params["command"]] + params["options"] + params.get("extra", [])
    for label, image in definition["actions"][0]["deploy"]["images"].items():
        parts.append(image["image_arg"].replace("{%s}" % label, "/tmp/%s" % label))
    return shlex.split(" ".join(parts))


def test_names_and_metadata():
    definition = job.qemu_job(boot(), job.Target())
    assert definition["job_name"] == "mmlat 20260101-120000 patched/imap:n=16,s=1/traced/r3"
    assert definition["metadata"] == {
        "mmlat.run": "20260101-120000", "mmlat.variant": "patched", "mmlat.workload": "imap:n=16,s=1",
        "mmlat.boot": "traced", "mmlat.seed": "3"}


def test_timeouts_are_the_boots():
    definition = job.qemu_job(boot(timeout_s=840), job.Target())
    boot_action, test_action = definition["actions"][1]["boot"], definition["actions"][2]["test"]
    assert boot_action["timeout"] == {"seconds": 840}
    assert test_action["timeout"] == {"seconds": 840}
    assert definition["timeouts"]["connection"] == {"seconds": 840}
    assert definition["timeouts"]["job"]["seconds"] == job.DEPLOY_S + 840 + job.JOB_SLACK_S


def test_tags_pin_every_job_of_a_run():
    target = job.Target(device_type="qemu-7.2", tags=("mmlat-host-a",))
    base, patched = (job.qemu_job(boot(variant=v), target) for v in ("baseline", "patched"))
    for definition in (base, patched):
        assert definition["device_type"] == "qemu-7.2"
        assert definition["tags"] == ["mmlat-host-a"]
    assert "tags" not in job.qemu_job(boot(), job.Target())


def test_qemu_command_line(tmp_path):
    definition = job.qemu_job(boot(), job.Target())
    text = device.render("mmlat-qemu", definition["context"])
    cmd = qemu_command(definition, text)
    assert cmd[0] == "qemu-system-x86_64"
    joined = " ".join(cmd)
    for option in ("-accel tcg", "-icount shift=3,sleep=off", "-smp 1", "-m 1024", "-nodefaults",
                   "-no-reboot", "-serial stdio", "-kernel /tmp/kernel", "-initrd /tmp/initrd",
                   "-rtc base=2000-01-01T00:00:00,clock=vm"):
        assert option in joined
    assert "-enable-kvm" not in cmd
    append = cmd[cmd.index("-append") + 1]
    assert append == "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 %s" % JOB_ARGS


def test_monitor_ends_after_the_whole_end_line():
    """LAVA stops reading the console when the end pattern matches, and
    logs a line only once its line break is read."""
    monitor = job.qemu_job(boot(), job.Target())["actions"][2]["test"]["monitors"][0]
    end = "mmlat-results: end bytes=54414 sha256=" + "2c" * 32
    assert re.search(monitor["end"], end + "\r\n")
    assert re.search(monitor["end"], end + "\r\r\n")
    assert not re.search(monitor["end"], end)
    assert not re.search(monitor["end"], end[:-1] + "\r\n")
    assert re.search(monitor["start"], "mmlat-runner: start uptime=3.48")
    assert re.search(monitor["start"], "mmlat-runner: FAIL: unknown job key 'x'")
    m = re.search(monitor["pattern"], "mmlat-results: begin v1 tar.bz2.base64 bytes=54414 sha256=" + "2c" * 32)
    assert m.group("test_case_id", "measurement") == ("results", "54414")


def test_two_vcpus():
    definition = job.qemu_job(boot(smp=2), job.Target())
    assert "-smp 2" in definition["context"]["extra_options"]
    assert " tsc=reliable " in definition["actions"][0]["deploy"]["images"]["kernel"]["image_arg"]


def test_paths_become_file_urls_and_urls_stay():
    definition = job.qemu_job(boot(kernel="https://lab.example/k/bzImage"), job.Target(),
                              {"kernel": "ab" * 32})
    images = definition["actions"][0]["deploy"]["images"]
    assert images["kernel"]["url"] == "https://lab.example/k/bzImage"
    assert images["kernel"]["sha256sum"] == "ab" * 32
    assert images["initrd"]["url"] == "file:///srv/initrd-patched.cpio"
    assert "sha256sum" not in images["initrd"]


def test_checksums_of_local_files(tmp_path):
    (tmp_path / "bzImage").write_bytes(b"kernel")
    definition = executor.definition_of(boot(kernel=str(tmp_path / "bzImage")), job.Target())
    images = definition["actions"][0]["deploy"]["images"]
    assert images["kernel"]["sha256sum"] == hashlib.sha256(b"kernel").hexdigest()
    assert "sha256sum" not in images["initrd"]     # not a file here


@pytest.mark.parametrize("fields, message", [
    (dict(accel="kvm"), "a LAVA QEMU job runs tcg-icount, not kvm"),
    (dict(job=GuestJob(workload="x", params="", knobs={}, seed=1, calib='"q"')), "has quotes"),
    (dict(run_id="r" * 190), "longer than LAVA's 200 characters"),
])
def test_bad_boots_are_refused(fields, message):
    with pytest.raises(job.JobError, match=message):
        job.qemu_job(boot(**fields), job.Target())


@pytest.mark.parametrize("make", [job.qemu_job, job.x86_job])
def test_jobs_pass_lavas_schema(make):
    job.check(make(boot(), job.Target(tags=("t",))))


def test_a_device_type_other_than_qemu_gets_the_bare_metal_job():
    definition = executor.definition_of(boot(), job.Target(device_type="x86"))
    assert definition["actions"][0]["deploy"]["to"] == "tftp"


def test_the_schema_check_catches_a_bad_job():
    definition = job.qemu_job(boot(), job.Target())
    definition["actions"][2]["test"]["monitors"][0]["name"] = "two words"
    with pytest.raises(ValueError, match="does not pass LAVA's schema: .*monitors"):
        job.check(definition)
    definition = job.qemu_job(boot(), job.Target())
    definition["actions"][1]["boot"]["timeout"] = {"seconds": 10 ** 6}
    with pytest.raises(ValueError, match="timeout is larger than job timeout"):
        job.check(definition)


def test_x86_job():
    definition = job.x86_job(boot(smp=4), job.Target(device_type="x86", tags=("hw-1",)))
    deploy, boot_action = definition["actions"][0]["deploy"], definition["actions"][1]["boot"]
    assert deploy["to"] == "tftp"
    assert deploy["ramdisk"]["install_overlay"] is False
    assert boot_action == {"method": "ipxe", "commands": "ramdisk",
                           "timeout": {"seconds": job.BARE_METAL_BOOT_S}}
    assert definition["context"]["extra_kernel_args"] == (
        "nr_cpus=4 panic=-1 oops=panic quiet loglevel=4 tsc=reliable %s" % JOB_ARGS)
    commands = yaml.safe_load(device.render("mmlat-x86-example", definition["context"]))
    ramdisk = commands["actions"]["boot"]["methods"]["ipxe"]["ramdisk"]["commands"]
    assert any("mmlat.results=console" in c and c.startswith("set extraargs") for c in ramdisk)


def test_device_errors_name_the_device(tmp_path):
    with pytest.raises(device.DeviceError, match="device nonesuch does not render"):
        device.render("nonesuch")
    (tmp_path / "broken.jinja2").write_text("{% extends 'qemu.jinja2' %}{% set x = %}")
    with pytest.raises(device.DeviceError, match="device broken does not render"):
        device.render("broken", devices_dir=tmp_path)
    with pytest.raises(device.DeviceError, match="install Debian's lava-server"):
        device.render("mmlat-qemu", device_type_dirs=(str(tmp_path / "none"),))


needs_lava_run = pytest.mark.skipif(
    shutil.which("lava-run") is None or os.geteuid() != 0,
    reason="lava-run (Debian's lava-dispatcher) runs as root only")


@needs_lava_run
@pytest.mark.parametrize("make, device_name", [(job.qemu_job, "mmlat-qemu"),
                                               (job.x86_job, "mmlat-x86-example")])
def test_lava_run_validates(tmp_path, make, device_name):
    """lava-run --validate builds the job's whole pipeline for the device
    and checks every action (the images exist, QEMU and in.tftpd are
    installed, the device has the boot method)."""
    for name in ("bzImage", "initrd.cpio"):
        (tmp_path / name).write_bytes(b"\0" * 512)
    definition = make(boot(kernel=str(tmp_path / "bzImage"), initrd=str(tmp_path / "initrd.cpio")),
                      job.Target())
    (tmp_path / "job.yaml").write_text(job.to_yaml(definition))
    device.write(device_name, definition["context"], tmp_path / "device.yaml")
    proc = subprocess.run(["lava-run", "--validate", "--job-id", "validate-%s" % device_name,
                           "--output-dir", str(tmp_path / "out"), "--device", str(tmp_path / "device.yaml"),
                           str(tmp_path / "job.yaml")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = yaml.safe_load((tmp_path / "out/result.yaml").read_text())
    assert result["result"] == "pass"
    # and a job for an image that is not there does not pass
    (tmp_path / "bzImage").unlink()
    proc = subprocess.run(["lava-run", "--validate", "--job-id", "validate-missing-%s" % device_name,
                           "--output-dir", str(tmp_path / "out2"), "--device", str(tmp_path / "device.yaml"),
                           str(tmp_path / "job.yaml")], capture_output=True, text=True)
    assert proc.returncode == 1
