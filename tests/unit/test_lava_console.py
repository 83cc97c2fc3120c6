"""The results block: printed by guest/console-results.sh under the guest's
busybox, read back by orchestrator/lava/console.py, also through LAVA's own log."""
import io
import random
import tarfile

import pytest

from lava_helpers import lava_log, print_block
from orchestrator.lava import console, joblog


def make_results(root):
    """A runner's output folder: text, a larger incompressible file and a
    subfolder, as a traced boot leaves them."""
    root.mkdir()
    (root / "status").write_text("ok\n")
    (root / "job.env").write_text("workload=munmap\nseed=1\n")
    rng = random.Random(1)
    (root / "cyclictest.hist").write_text("".join("%06d %06d\n" % (i, rng.randrange(1000)) for i in range(20000)))
    (root / "windows").mkdir()
    (root / "windows" / "windows.txt").write_bytes(bytes(rng.randrange(256) for _ in range(30000)))
    return root


def tree(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def block(tmp_path, guest_path):
    """The console lines of one printed block, and the folder printed."""
    results = make_results(tmp_path / "out")
    con = tmp_path / "console"
    proc = print_block(guest_path, results, con)
    assert proc.returncode == 0, proc.stderr
    return con.read_text().splitlines(), results


def test_round_trip(block, tmp_path):
    lines, results = block
    assert lines[0].startswith("mmlat-results: begin v1 tar.bz2.base64 bytes=")
    assert lines[-1].startswith("mmlat-results: end bytes=")
    found = console.find_block(["[    1.234] boot noise", "mmlat-runner: start"] + lines + ["mmlat-runner: done"])
    assert found.foreign_lines == 0
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def test_console_loglevel_held_and_restored(block, guest_path):
    _, calls = guest_path
    with open("/proc/sys/kernel/printk") as f:
        level = f.read().split()[0]
    assert calls.read_text().splitlines() == ["1", level]


def test_missing_folder_fails(tmp_path, guest_path):
    proc = print_block(guest_path, tmp_path / "nowhere", tmp_path / "console")
    assert proc.returncode == 1
    assert "no directory" in proc.stderr


def test_crlf_console(block, tmp_path):
    lines, results = block
    found = console.find_block([line + "\r\n" for line in lines])
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def test_interleaved_kernel_lines_are_skipped(block, tmp_path):
    lines, results = block
    noisy = list(lines)
    for at in (1, len(noisy) // 2, len(noisy) - 1):
        noisy.insert(at, "[   12.345678] random: crng init done")
    noisy.insert(3, "")
    found = console.find_block(noisy)
    assert found.foreign_lines == 4
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def test_kernel_line_splitting_a_data_line_is_corruption(block):
    lines, _ = block
    split = list(lines)
    half = len(split[5]) // 2
    split[5:6] = [split[5][:half] + "[   12.345678] WARNING: CPU: 0 PID: 1", split[5][half:]]
    message = r"corrupt: .*console lines inside it were not base64, the first: '.*WARNING: CPU: 0 PID: 1'"
    with pytest.raises(console.ResultsBlockError, match=message):
        console.find_block(split)


@pytest.mark.parametrize("damage, message", [
    (lambda lines: lines[:1] + lines[2:], r"corrupt: \d+ bytes decoded, the guest sent \d+"),
    (lambda lines: lines[:5] + [lines[5][:-4] + ("AAAA" if lines[5][-4:] != "AAAA" else "BBBB")] + lines[6:],
     r"corrupt: sha256 [0-9a-f]{12} decoded, the guest sent [0-9a-f]{12}"),
    (lambda lines: lines[:-1], r"truncated: no end line after its begin line and \d+ lines of data"),
    (lambda lines: lines[:len(lines) // 2], r"truncated"),
    (lambda lines: lines[1:], r"no results block on the console"),
    (lambda lines: lines[:-1] + [lines[-1].replace("bytes=", "bytes=1")],
     r"corrupt: its end line .* does not match its begin line"),
    (lambda lines: lines[:3] + [lines[3][:-1] + "=" + lines[3][-1:]] + lines[4:], r"corrupt: "),
])
def test_damaged_block_names_the_damage(block, damage, message):
    lines, _ = block
    with pytest.raises(console.ResultsBlockError, match=message):
        console.find_block(damage(list(lines)))


def test_last_block_wins(block, tmp_path):
    lines, results = block
    found = console.find_block(lines[:len(lines) // 2] + ["mmlat-runner: FAIL: something"] + lines)
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def _archive(add):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:bz2") as tar:
        add(tar)
    return buf.getvalue()


def test_unpack_refuses_paths_outside(tmp_path):
    def add(tar):
        info = tarfile.TarInfo("../escape")
        info.size = 1
        tar.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(console.ResultsBlockError, match="outside its folder: ../escape"):
        console.unpack(_archive(add), tmp_path / "back")
    assert not (tmp_path / "escape").exists()


def test_unpack_refuses_links(tmp_path):
    def add(tar):
        info = tarfile.TarInfo("status")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(console.ResultsBlockError, match="link or device: status"):
        console.unpack(_archive(add), tmp_path / "back")


def test_unpack_names_a_bad_archive(tmp_path):
    with pytest.raises(console.ResultsBlockError, match="results archive unreadable"):
        console.unpack(b"BZh9 not really bzip2", tmp_path / "back")


@pytest.mark.parametrize("chunk", [1, 97, 4092])
def test_through_lavas_log(block, tmp_path, chunk):
    lines, results = block
    # the serial line as QEMU's stdio gives it to LAVA: CRLF, and a quote
    con = ("mmlat-runner: start uptime=1.23\r\n" + "\r\n".join(lines)
           + '\r\nmmlat-runner: done "quoted"\r\n').encode()
    log = joblog.parse(lava_log(con, chunk))
    assert log.boot_command == "/usr/bin/qemu-system-x86_64 -nographic"
    assert log.result["result"] == "pass"
    assert log.console[-1] == 'mmlat-runner: done "quoted"'
    found = console.find_block(log.console)
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def test_through_a_servers_log(block, tmp_path):
    """A server keeps the same records as a YAML list (lavacli jobs logs
    --raw prints '- ' before each)."""
    lines, results = block
    text = lava_log(("\r\n".join(lines) + "\r\n").encode())
    server = "".join("- " + line + "\n" for line in text.splitlines())
    found = console.find_block(joblog.parse(server).console)
    console.unpack(found.archive, tmp_path / "back")
    assert tree(tmp_path / "back") == tree(results)


def test_block_size_is_what_the_console_carries(block):
    """base64 of a bzip2'd tar: a line of 76 characters carries 57 bytes."""
    lines, _ = block
    size = int(lines[0].split("bytes=")[1].split()[0])
    data = lines[1:-1]
    assert all(len(line) == 76 for line in data[:-1])
    assert len(data) == -(-size // 57)
