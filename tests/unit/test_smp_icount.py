"""SMP under icount (issue 15): the QEMU a 2-vCPU tcg-icount boot uses, the
refusal of one that lacks the round-robin fairness fix, and what the run
records. Fake QEMU binaries print a version line; nothing boots."""
import json
import subprocess
import time

from helpers import ROOT, clean_environ


def fake_qemu(path, version):
    path.write_text("#!/bin/sh\necho 'QEMU emulator version %s (fake)'\n"
                    "echo 'Copyright (c) 2003-2025 Fabrice Bellard'\n" % version)
    path.chmod(0o755)
    return path


def test_matrix_refuses_smp_icount_on_a_qemu_without_the_fix(matrix, tmp_path):
    run_matrix, run = matrix
    old = fake_qemu(tmp_path / "qemu-7.2", "7.2.22")
    t0 = time.monotonic()
    proc, boots = run_matrix(SMP="2", ICOUNT_SMP_QEMU=str(old))
    assert proc.returncode != 0 and boots == []
    assert time.monotonic() - t0 < 2
    assert ("SMP=2 with ACCEL=tcg-icount: %s is QEMU 7.2.22: before 8.1 its round-robin TCG "
            "gives a second vCPU no instructions under icount" % old) in proc.stderr, proc.stderr
    assert "stage 1/4" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_matrix_refuses_an_smp_icount_qemu_that_does_not_run(matrix, tmp_path):
    run_matrix, run = matrix
    proc, boots = run_matrix(SMP="2", ICOUNT_SMP_QEMU="/bin/false")
    assert proc.returncode != 0 and boots == []
    assert "ICOUNT_SMP_QEMU='/bin/false' does not run" in proc.stderr, proc.stderr


def test_matrix_boots_smp_icount_with_a_fixed_qemu_and_records_it(matrix, tmp_path):
    run_matrix, run = matrix
    new = fake_qemu(tmp_path / "qemu-10", "10.0.2")
    proc, boots = run_matrix(SMP="2", ICOUNT_SMP_QEMU=str(new), CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    assert boots
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["accel"], meta["smp"]) == ("tcg-icount", 2)
    assert meta["qemu"] == "QEMU emulator version 10.0.2 (fake)"
    assert meta["qemu_binary"] == str(new)
    # a resume with another SMP is refused rather than mixed in
    proc, boots = run_matrix(SMP="1", CALIB="", REPEAT="1")
    assert proc.returncode != 0 and "another SMP or QEMU" in proc.stderr, proc.stderr


def test_one_vcpu_keeps_the_system_qemu(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["smp"] == 1 and meta["qemu_binary"] == "qemu-system-x86_64"
    system = subprocess.run(["qemu-system-x86_64", "--version"], text=True,
                            capture_output=True).stdout.splitlines()[0]
    assert meta["qemu"] == system


def smp_env(tmp_path, **extra):
    return dict(clean_environ(), BUILD_DIR=str(tmp_path / "build"), PYTHON="/usr/bin/python3",
                **extra)


def test_qemu_sh_refuses_smp_icount_before_starting_qemu(tmp_path):
    kdir = tmp_path / "kernel"
    kdir.mkdir()
    (kdir / "bzImage").write_text("")
    old = fake_qemu(tmp_path / "qemu-7.2", "7.2.22")
    proc = subprocess.run(
        ["bash", "bench/qemu.sh", str(tmp_path / "out"), str(kdir), str(tmp_path / "initrd"),
         "mmlat.workload=probe"], cwd=ROOT, text=True, capture_output=True, timeout=30,
        env=smp_env(tmp_path, ACCEL="tcg-icount", SMP="2", ICOUNT_SMP_QEMU=str(old),
                    ICOUNT_SHIFT="3", GUEST_MEM_MIB="1024", CELL_TIMEOUT="60"))
    assert proc.returncode == 1
    assert "SMP=2 with ACCEL=tcg-icount: %s is QEMU 7.2.22: before 8.1" % old in proc.stderr
    assert not (tmp_path / "out").exists()


def choose(tmp_path, path_dirs, **extra):
    """What bench/qemu-smp.sh check picks, with PATH limited to path_dirs."""
    env = smp_env(tmp_path, **extra)
    env["PATH"] = ":".join([str(d) for d in path_dirs] + ["/usr/bin", "/bin"])
    return subprocess.run(["bash", "bench/qemu-smp.sh", "check"], cwd=ROOT, text=True,
                          capture_output=True, env=env, timeout=30)


def test_a_system_qemu_with_the_fix_is_used_as_it_is(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_qemu(bindir / "qemu-system-x86_64", "8.1.0")
    proc = choose(tmp_path, [bindir])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "%s (QEMU 8.1.0)" % (bindir / "qemu-system-x86_64")


def test_an_old_system_qemu_wants_the_provisioned_one(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake_qemu(bindir / "qemu-system-x86_64", "7.2.22")
    proc = choose(tmp_path, [bindir])
    assert proc.returncode == 1
    assert "the system's QEMU (7.2.22) is older than 8.1" in proc.stderr
    assert "run bash bench/qemu-smp.sh provision" in proc.stderr
    # provisioned: its binary with its own firmware folders
    bpo = tmp_path / "build/qemu-bpo"
    (bpo / "usr/bin").mkdir(parents=True)
    fake_qemu(bpo / "usr/bin/qemu-system-x86_64", "10.0.2")
    proc = choose(tmp_path, [bindir])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "%s/usr/bin/qemu-system-x86_64 -L %s/usr/share/qemu -L " \
        "%s/usr/share/seabios (QEMU 10.0.2)" % (bpo, bpo, bpo)


def test_provision_names_an_unreachable_archive_and_leaves_nothing(tmp_path):
    proc = subprocess.run(["bash", "bench/qemu-smp.sh", "provision"], cwd=ROOT, text=True,
                          capture_output=True, timeout=60,
                          env=smp_env(tmp_path, QEMU_BPO_MIRROR="file://%s/none" % tmp_path))
    assert proc.returncode == 1
    assert "apt-get update of bookworm-backports (file://%s/none) failed" % tmp_path in proc.stderr
    assert not (tmp_path / "build").exists() or not any((tmp_path / "build").iterdir())
