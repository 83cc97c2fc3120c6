"""The report names the vCPUs and the QEMU of an SMP run (issue 15): two
vCPUs under icount share the virtual time, so their figures are not one
vCPU's; a one-vCPU report reads as before."""
import os

from mmlat.__main__ import main

from fakerun import make_run


def report_txt(root, **meta):
    make_run(root, repeats=2, failed=False, **meta)
    assert main(["report", root, "--resamples", "200"]) == 0
    with open(os.path.join(root, "report", "report.txt")) as f:
        return f.read()


def test_smp_report_names_vcpus_and_qemu(tmp_path, capsys):
    txt = report_txt(str(tmp_path / "smp"), smp=2, qemu="QEMU emulator version 10.0.2 "
                     "(Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)")
    flat = " ".join(txt.split())
    assert "Method: 6.1.0-test, config c0ffee, tcg, 2 vCPUs (QEMU 10.0.2), 2 x 30 s" in flat
    assert "accel: tcg, 2 vCPUs (QEMU 10.0.2) duration: 30 s" in flat
    assert all(len(line) <= 80 for line in txt.splitlines())


def test_one_vcpu_report_is_unchanged(tmp_path, capsys):
    txt = report_txt(str(tmp_path / "up"), smp=1,
                     qemu="QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)")
    flat = " ".join(txt.split())
    assert "Method: 6.1.0-test, config c0ffee, tcg, 2 x 30 s boots a side" in flat
    assert "accel: tcg   duration: 30 s" in txt and "vCPU" not in txt
