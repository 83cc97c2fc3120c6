"""The QEMU of icount boots (bench/icount-qemu.sh): every tcg-icount boot,
one vCPU or more, runs the pinned build; ICOUNT_QEMU names another, which
SMP>1 refuses before 8.1 (issue 15: no round-robin fairness); kvm and
tcg-mt keep the system's; the run records what ran. Fake QEMU binaries
print a version line; nothing boots."""
import hashlib
import json
import subprocess
import time

from helpers import PINNED_QEMU, ROOT, clean_environ, fake_qemu, provisioned_icount_qemu


def test_matrix_refuses_smp_icount_on_a_qemu_without_the_fix(matrix, tmp_path):
    run_matrix, run = matrix
    old = fake_qemu(tmp_path / "qemu-7.2", "7.2.22")
    t0 = time.monotonic()
    proc, boots = run_matrix(SMP="2", ICOUNT_QEMU=str(old))
    assert proc.returncode != 0 and boots == []
    assert time.monotonic() - t0 < 2
    assert ("SMP=2 with ACCEL=tcg-icount: %s is QEMU 7.2.22: before 8.1 its round-robin TCG "
            "gives a second vCPU no instructions under icount" % old) in proc.stderr, proc.stderr
    assert "stage 1/4" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_matrix_refuses_an_icount_qemu_that_does_not_run(matrix, tmp_path):
    run_matrix, run = matrix
    proc, boots = run_matrix(ICOUNT_QEMU="/bin/false")
    assert proc.returncode != 0 and boots == []
    assert "ICOUNT_QEMU='/bin/false' does not run" in proc.stderr, proc.stderr


def test_matrix_boots_a_given_icount_qemu_and_records_it(matrix, tmp_path):
    run_matrix, run = matrix
    new = fake_qemu(tmp_path / "qemu-10", "10.1.0")
    proc, boots = run_matrix(SMP="2", ICOUNT_QEMU=str(new), CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    assert boots
    meta = json.loads((run / "meta.json").read_text())
    assert (meta["accel"], meta["smp"]) == ("tcg-icount", 2)
    assert meta["qemu"] == "QEMU emulator version 10.1.0 (fake)"
    assert meta["qemu_binary"] == str(new)
    # a resume with another SMP, or another QEMU, is refused rather than
    # mixed in
    proc, boots = run_matrix(SMP="1", ICOUNT_QEMU=str(new), CALIB="", REPEAT="1")
    assert proc.returncode != 0 and "another SMP or QEMU" in proc.stderr, proc.stderr
    proc, boots = run_matrix(SMP="2", CALIB="", REPEAT="1")
    assert proc.returncode != 0 and "another SMP or QEMU" in proc.stderr, proc.stderr


def test_one_vcpu_boots_the_pinned_qemu(matrix, tmp_path):
    run_matrix, run = matrix
    proc, _ = run_matrix(CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["smp"] == 1
    assert meta["qemu_binary"] == str(tmp_path / "build/qemu-bpo/usr/bin/qemu-system-x86_64")
    assert meta["qemu"] == "QEMU emulator version 10.0.2 (fake)"
    # what each variant booted (the stub kernels are empty files, the stub
    # images "base" and "module", appended), and the packages' versions
    empty = hashlib.sha256(b"").hexdigest()
    initrd = hashlib.sha256(b"base\nmodule\n").hexdigest()
    assert meta["images"] == {v: {"bzimage_sha256": empty, "initrd_sha256": initrd}
                              for v in ("base", "patch")}
    assert meta["versions"]["packages"]["libelf1"]


def test_tcg_mt_keeps_the_system_qemu(matrix):
    run_matrix, run = matrix
    proc, _ = run_matrix(ACCEL="tcg-mt", CALIB="", REPEAT="1")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((run / "meta.json").read_text())
    assert meta["smp"] == 2 and meta["qemu_binary"] == "qemu-system-x86_64"
    system = subprocess.run(["qemu-system-x86_64", "--version"], text=True,
                            capture_output=True).stdout.splitlines()[0]
    assert meta["qemu"] == system


def icount_env(tmp_path, **extra):
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
        env=icount_env(tmp_path, ACCEL="tcg-icount", SMP="2", ICOUNT_QEMU=str(old),
                       ICOUNT_SHIFT="3", GUEST_MEM_MIB="1024", CELL_TIMEOUT="60"))
    assert proc.returncode == 1
    assert "SMP=2 with ACCEL=tcg-icount: %s is QEMU 7.2.22: before 8.1" % old in proc.stderr
    assert not (tmp_path / "out").exists()


def choose(tmp_path, path_dirs, smp="1", **extra):
    """What bench/icount-qemu.sh check picks, with PATH limited to path_dirs."""
    env = icount_env(tmp_path, **extra)
    env["PATH"] = ":".join([str(d) for d in path_dirs] + ["/usr/bin", "/bin"])
    return subprocess.run(["bash", "bench/icount-qemu.sh", "check", smp], cwd=ROOT, text=True,
                          capture_output=True, env=env, timeout=30)


def test_the_system_qemu_is_never_the_icount_qemu(tmp_path):
    bindir = tmp_path / "bin"
    fake_qemu(bindir / "qemu-system-x86_64", "10.0.2")
    proc = choose(tmp_path, [bindir])
    assert proc.returncode == 1
    assert "the pinned QEMU (%s) is not provisioned" % PINNED_QEMU in proc.stderr
    assert "run bash bench/icount-qemu.sh provision" in proc.stderr
    # provisioned: its binary with its own firmware folders, at any SMP
    provisioned_icount_qemu(tmp_path / "build")
    bpo = tmp_path / "build/qemu-bpo"
    for smp in ("1", "2"):
        proc = choose(tmp_path, [bindir], smp)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "%s/usr/bin/qemu-system-x86_64 -L %s/usr/share/qemu -L " \
            "%s/usr/share/seabios (QEMU 10.0.2)" % (bpo, bpo, bpo)


def test_a_build_of_another_version_is_not_the_pinned_one(tmp_path):
    provisioned_icount_qemu(tmp_path / "build", version="1:9.9.9-1")
    proc = choose(tmp_path, [])
    assert proc.returncode == 1
    assert "holds QEMU 1:9.9.9-1, not the pinned %s" % PINNED_QEMU in proc.stderr


def test_a_given_qemu_before_8_1_runs_one_vcpu_only(tmp_path):
    old = fake_qemu(tmp_path / "qemu-7.2", "7.2.22")
    proc = choose(tmp_path, [], "1", ICOUNT_QEMU=str(old))
    assert proc.returncode == 0 and proc.stdout.strip() == "%s (QEMU 7.2.22)" % old
    proc = choose(tmp_path, [], "2", ICOUNT_QEMU=str(old))
    assert proc.returncode == 1 and "before 8.1" in proc.stderr


def test_provision_names_an_unreachable_archive_and_leaves_nothing(tmp_path):
    proc = subprocess.run(["bash", "bench/icount-qemu.sh", "provision"], cwd=ROOT, text=True,
                          capture_output=True, timeout=60,
                          env=icount_env(tmp_path, DEBIAN_MIRROR="file://%s/none" % tmp_path,
                                         DEBIAN_KEYRING="/usr/share/keyrings/"
                                                        "debian-archive-keyring.gpg"))
    assert proc.returncode == 1
    assert "apt-get update of bookworm-backports failed" in proc.stderr, proc.stderr
    assert not (tmp_path / "build/qemu-bpo").exists()
