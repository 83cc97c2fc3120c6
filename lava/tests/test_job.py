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

from mmlat_lava import device, executor, job

JOB_ARGS = "mmlat.workload=imap mmlat.params=n=16,s=1 mmlat.duration=5 mmlat.trace=windows mmlat.seed=3"


def boot(**kw):
    fields = dict(run_id="20260101-120000", variant="patched", workload="imap:n=16,s=1", boot="traced",
                  repeat=3, kernel="/srv/kernel-patched/bzImage", initrd="/srv/initrd-patched.cpio",
                  job_args=JOB_ARGS, duration_s=5)
    fields.update(kw)
    return job.BootSpec(**fields)


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


def test_timeouts_match_the_cell_timeout():
    definition = job.qemu_job(boot(duration_s=30), job.Target())
    cell = 30 * 20 + 240
    boot_action, test_action = definition["actions"][1]["boot"], definition["actions"][2]["test"]
    assert boot_action["timeout"] == {"seconds": cell}
    assert test_action["timeout"] == {"seconds": cell}
    assert definition["timeouts"]["connection"] == {"seconds": cell}
    assert definition["timeouts"]["job"]["seconds"] == job.DEPLOY_S + cell + job.JOB_SLACK_S
    explicit = job.qemu_job(boot(timeout_s=100), job.Target())
    assert explicit["actions"][2]["test"]["timeout"] == {"seconds": 100}


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
                   "-no-reboot", "-serial stdio", "-kernel /tmp/kernel", "-initrd /tmp/initrd"):
        assert option in joined
    assert "-enable-kvm" not in cmd
    append = cmd[cmd.index("-append") + 1]
    assert append == "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 %s mmlat.ship=console" % JOB_ARGS


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
    definition = job.qemu_job(boot(kernel="https://lab.example/k/bzImage", kernel_sha256="ab" * 32),
                              job.Target())
    images = definition["actions"][0]["deploy"]["images"]
    assert images["kernel"]["url"] == "https://lab.example/k/bzImage"
    assert images["kernel"]["sha256sum"] == "ab" * 32
    assert images["initrd"]["url"] == "file:///srv/initrd-patched.cpio"


def test_checksums_of_local_files(tmp_path):
    (tmp_path / "bzImage").write_bytes(b"kernel")
    spec = executor.with_checksums(boot(kernel=str(tmp_path / "bzImage")))
    assert spec.kernel_sha256 == hashlib.sha256(b"kernel").hexdigest()
    assert spec.initrd_sha256 is None     # not a file here


@pytest.mark.parametrize("fields, message", [
    (dict(boot="warm"), "boot 'warm': one of clean, traced"),
    (dict(accel="kvm"), "LAVA jobs run tcg-icount, or hw on bare metal"),
    (dict(job_args='mmlat.workload="x"'), "no quotes"),
    (dict(job_args="mmlat.workload=x mmlat.ship=disk"), "mmlat.ship is the executor's"),
    (dict(run_id="a b"), "run_id 'a b'"),
    (dict(repeat=0), "repeat 0: a positive integer"),
    (dict(kernel=""), "kernel: a path or URL"),
])
def test_bad_boots_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        boot(**fields)


def test_long_names_are_refused():
    with pytest.raises(ValueError, match="longer than LAVA's 200 characters"):
        job.job_name(boot(run_id="r" * 190))


def test_boot_spec_and_job_record_round_trip():
    spec = boot(smp=2, timeout_s=99)
    assert job.BootSpec.from_json(spec.to_json()) == spec
    record = job.JobRecord("lava", "42", spec, attempt=2, reasons=["lava: Infrastructure: x"])
    again = job.JobRecord.from_json(yaml.safe_load(record.dumps()))
    assert again == record
    target = job.Target("x86", ("rack-3",))
    assert job.Target.from_json(target.to_json()) == target


@pytest.mark.parametrize("make, accel", [(job.qemu_job, "tcg-icount"), (job.x86_job, "hw")])
def test_jobs_pass_lavas_schema(make, accel):
    executor.check_job(make(boot(accel=accel), job.Target(tags=("t",))))


def test_each_job_its_accelerator():
    with pytest.raises(ValueError, match="a QEMU job runs tcg-icount, not hw"):
        job.qemu_job(boot(accel="hw"), job.Target())
    with pytest.raises(ValueError, match="a bare-metal job's accel is hw, not tcg-icount"):
        job.x86_job(boot(), job.Target())


def test_the_schema_check_catches_a_bad_job():
    definition = job.qemu_job(boot(), job.Target())
    definition["actions"][2]["test"]["monitors"][0]["name"] = "two words"
    with pytest.raises(ValueError, match="does not pass LAVA's schema: .*monitors"):
        executor.check_job(definition)
    definition = job.qemu_job(boot(), job.Target())
    definition["actions"][1]["boot"]["timeout"] = {"seconds": 10 ** 6}
    with pytest.raises(ValueError, match="timeout is larger than job timeout"):
        executor.check_job(definition)


def test_x86_job():
    definition = job.x86_job(boot(smp=4, accel="hw"), job.Target(device_type="x86", tags=("hw-1",)))
    deploy, boot_action = definition["actions"][0]["deploy"], definition["actions"][1]["boot"]
    assert deploy["to"] == "tftp"
    assert deploy["ramdisk"]["install_overlay"] is False
    assert boot_action == {"method": "ipxe", "commands": "ramdisk",
                           "timeout": {"seconds": job.BARE_METAL_BOOT_S}}
    assert definition["context"]["extra_kernel_args"] == (
        "nr_cpus=4 panic=-1 oops=panic quiet loglevel=4 tsc=reliable %s mmlat.ship=console" % JOB_ARGS)
    commands = yaml.safe_load(device.render("mmlat-x86-example", definition["context"]))
    ramdisk = commands["actions"]["boot"]["methods"]["ipxe"]["ramdisk"]["commands"]
    assert any("mmlat.ship=console" in c and c.startswith("set extraargs") for c in ramdisk)


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
@pytest.mark.parametrize("make, accel, device_name", [(job.qemu_job, "tcg-icount", "mmlat-qemu"),
                                                      (job.x86_job, "hw", "mmlat-x86-example")])
def test_lava_run_validates(tmp_path, make, accel, device_name):
    """lava-run --validate builds the job's whole pipeline for the device
    and checks every action (the images exist, QEMU and in.tftpd are
    installed, the device has the boot method)."""
    for name in ("bzImage", "initrd.cpio"):
        (tmp_path / name).write_bytes(b"\0" * 512)
    definition = make(boot(kernel=str(tmp_path / "bzImage"), initrd=str(tmp_path / "initrd.cpio"), accel=accel),
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
