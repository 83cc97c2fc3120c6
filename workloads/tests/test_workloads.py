"""Build the workload drivers and run each briefly on the host: they are
plain userspace programs. Checks the key=value contract the analysis reads,
and that SIGTERM ends a run early with its output."""
import signal
import subprocess
import time
from pathlib import Path

import pytest
from plan import workloads

ROOT = Path(__file__).resolve().parents[2]
# The driver rows of the workload registry, but imap, whose cycle is N
# times a file's worth of mappings (tested on its own below), and reclaim,
# which needs a cgroup v2 parent and swap that the host tests must never
# touch (only its refusals are tested here).
DRIVERS = [w for w in workloads.DRIVERS if w not in ("imap", "reclaim")]


@pytest.fixture(scope="module")
def bindir(tmp_path_factory):
    out = tmp_path_factory.mktemp("workloads")
    subprocess.run(["make", "-s", "-C", str(ROOT / "workloads"), f"O={out}"],
                   check=True)
    return out


def keyvals(text):
    return dict(line.split("=", 1) for line in text.split() if "=" in line)


@pytest.mark.parametrize("name", DRIVERS)
def test_driver_reports_its_work(bindir, name, tmp_path):
    proc = subprocess.run([str(bindir / f"mmlat-{name}"), "-d", "1", "-s", "8"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    kv = keyvals(proc.stdout)
    assert kv["workload"] == name
    ops, secs = int(kv["ops"]), float(kv["duration_s"])
    assert ops > 0 and int(kv["bytes"]) > 0
    assert 0.9 <= secs < 5
    assert abs(float(kv["ops_per_s"]) - ops / secs) <= 0.01 * ops / secs + 0.001


def test_sigterm_ends_run_with_output(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-munmap"), "-d", "30", "-s", "8"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    kv = keyvals(out)
    assert float(kv["duration_s"]) < 10


def test_bad_option_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-fork"), "-d", "zero"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and proc.stderr


def file_mappings(pid):
    """How many vmas of pid map the driver's (unlinked) tmpfs file."""
    maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    return sum("/mmlat-imap." in line for line in maps)


def test_imap_maps_the_file_n_times_and_remaps_it(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-imap"), "-d", "2", "-s", "1", "-n", "5"],
                            stdout=subprocess.PIPE, text=True)
    time.sleep(0.7)
    parent = file_mappings(proc.pid)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    # the truncating process maps the file N times; the remapping child
    # was forked before those mappings and has at most its one page
    assert parent == 5
    kv = keyvals(out)
    assert kv["workload"] == "imap" and kv["n"] == "5" and kv["region_mib"] == "1"
    ops, secs = int(kv["ops"]), float(kv["duration_s"])
    assert ops > 0 and int(kv["remaps"]) > 0
    assert int(kv["bytes"]) == ops * 5 * (1 << 20)
    assert 1.9 <= secs < 6
    assert abs(float(kv["ops_per_s"]) - ops / secs) <= 0.01 * ops / secs + 0.001


def test_imap_default_n_and_stop_within_a_long_cycle(bindir):
    # 64 mappings of 16 MiB: a cycle takes longer than the run here, and
    # the driver still stops at the deadline with its output
    t0 = time.monotonic()
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-d", "1", "-s", "16"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    kv = keyvals(proc.stdout)
    assert kv["n"] == "64" and int(kv["remaps"]) > 0
    assert float(kv["duration_s"]) < 5 and time.monotonic() - t0 < 10


def test_imap_bad_n_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-n", "0"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "invalid number" in proc.stderr


# imap -w adds a zram device: on the host only its refusals are tested, with
# -z naming a directory that is not zram's control directory, so that the
# host's zram is never touched


def test_imap_writers_need_zram_and_touch_nothing_without_it(bindir, tmp_path):
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-z", str(tmp_path), "-d", "1",
                           "-s", "1", "-n", "2", "-w", "2"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
    assert f"{tmp_path}/hot_add" in proc.stderr and "-w needs zram" in proc.stderr
    assert not proc.stdout and not list(tmp_path.iterdir())


@pytest.mark.parametrize("writers, message", [("0", "invalid number"),
                                              ("9", "at most 8 writers")])
def test_imap_bad_writers_is_an_error(bindir, tmp_path, writers, message):
    proc = subprocess.run([str(bindir / "mmlat-imap"), "-z", str(tmp_path), "-w", writers],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and message in proc.stderr


def group_members(pgid):
    """Pids of the live (not zombie) processes in process group pgid."""
    pids = []
    for d in Path("/proc").iterdir():
        try:
            stat = (d / "stat").read_text()
        except (OSError, ValueError):
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces
        state, _, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state != "Z":
            pids.append(int(d.name))
    return pids


def test_anonchain_keeps_w_chains_of_d_tasks_and_leaves_none_behind(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-anonchain"), "-d", "3", "-s", "1",
                             "-D", "3", "-w", "2"], stdout=subprocess.PIPE, text=True)
    time.sleep(1.5)
    # its own process group: the root, 2 chains of 3 and a leaf per chain
    # at times
    members = group_members(proc.pid)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert 1 + 2 * 3 <= len(members) <= 1 + 2 * 4
    assert group_members(proc.pid) == []
    kv = keyvals(out)
    assert kv["workload"] == "anonchain" and kv["depth"] == "3" and kv["width"] == "2"
    ops, secs = int(kv["ops"]), float(kv["duration_s"])
    assert ops > 0 and kv["region_mib"] == "1"
    # a leaf writes one page in 16 of the region
    assert int(kv["bytes"]) == ops * (1 << 20) // 16
    assert 2.9 <= secs < 8


def test_anonchain_sigterm_stops_every_task(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-anonchain"), "-d", "60", "-s", "1",
                             "-D", "8"], stdout=subprocess.PIPE, text=True)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert float(keyvals(out)["duration_s"]) < 10
    assert group_members(proc.pid) == []


def test_anonchain_bad_depth_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-anonchain"), "-D", "0"],
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "invalid number '0'" in proc.stderr


def run_reclaim(bindir, *args):
    """mmlat-reclaim with args, which must name a cgroup parent (-g) that
    is not the host's: these runs may only fail before touching it."""
    assert "-g" in args
    return subprocess.run([str(bindir / "mmlat-reclaim"), "-d", "1", *args],
                          capture_output=True, text=True, timeout=30)


def test_reclaim_refuses_a_cgroup_parent_that_is_not_cgroup_v2(bindir, tmp_path):
    proc = run_reclaim(bindir, "-g", str(tmp_path))
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"error: cgroup parent {tmp_path} is not a cgroup v2 directory "
                           "(the guest runner mounts cgroup2 at /sys/fs/cgroup)\n")
    assert list(tmp_path.iterdir()) == []


def test_reclaim_refuses_a_missing_cgroup_parent(bindir, tmp_path):
    proc = run_reclaim(bindir, "-g", str(tmp_path / "none"))
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"error: cgroup parent {tmp_path}/none: No such file or directory")


@pytest.mark.parametrize("args, message", [
    (["-k", "65"], "error: -k 65: at most 64 readers"),
    (["-s", "1"], "error: -s 1: at least 2 MiB"),
    (["-F", "0"], "invalid number '0'"),
    (["-n", "256", "-s", "2"],
     "error: -n 256 -F 1 -s 2: the page tables of 256 mappings of 1 MiB (up to 2048 KiB) "
     "would take more than half of memory.max (1024 KiB)"),
    (["-n", "256", "-F", "7", "-s", "16"], "error: -n 256 -F 7 -s 16: the page tables"),
    (["-k", "0"], "invalid number '0'"),
    (["-x", "1"], "usage:"),
])
def test_reclaim_bad_options_are_errors_before_the_cgroup(bindir, tmp_path, args, message):
    proc = run_reclaim(bindir, "-g", str(tmp_path), *args)
    assert proc.returncode != 0 and message in proc.stderr, proc.stderr
    assert "cgroup" not in proc.stderr


# ---------------------------------------------------------------- seed (-S)
SEED_KEYS = ("seed", "start_delay_us", "layout_pad_pages")


def run_driver(bindir, name, *args, duration="1"):
    proc = subprocess.run([str(bindir / f"mmlat-{name}"), "-d", duration, *args],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return keyvals(proc.stdout)


@pytest.mark.parametrize("name", ["fork", "truncate"])
def test_same_seed_same_phase_and_layout_other_seeds_differ(bindir, name):
    runs = {s: run_driver(bindir, name, "-s", "1", "-S", str(s)) for s in (1, 2, 3)}
    again = run_driver(bindir, name, "-s", "1", "-S", "2")
    assert all(again[k] == runs[2][k] for k in SEED_KEYS)
    delays = {int(r["start_delay_us"]) for r in runs.values()}
    pads = {int(r["layout_pad_pages"]) for r in runs.values()}
    assert len(delays) == 3 and len(pads) == 3
    assert all(0 <= d < 10000 for d in delays) and all(1 <= p <= 512 for p in pads)


def test_no_seed_varies_nothing(bindir):
    kv = run_driver(bindir, "fork", "-s", "1")
    assert (kv["seed"], kv["start_delay_us"], kv["layout_pad_pages"], kv["layout_base"]) == \
        ("0", "0", "0", "0")


def test_seed_pads_the_layout_before_the_drivers_mappings(bindir):
    proc = subprocess.Popen([str(bindir / "mmlat-imap"), "-d", "2", "-s", "1", "-n", "3",
                             "-S", "7"], stdout=subprocess.PIPE, text=True)
    time.sleep(0.7)
    maps = Path(f"/proc/{proc.pid}/maps").read_text().splitlines()
    out, _ = proc.communicate(timeout=30)
    kv = keyvals(out)
    base, pages = int(kv["layout_base"], 16), int(kv["layout_pad_pages"])
    pad = [line for line in maps if line.startswith("%x-" % base)]
    assert len(pad) == 1
    start, end = (int(x, 16) for x in pad[0].split()[0].split("-"))
    assert end - start == pages * 4096 and pad[0].split()[1] == "---p"
    # the driver's file mappings come after the padding, below it
    files = [int(line.split("-")[0], 16) for line in maps if "/mmlat-imap." in line]
    assert len(files) == 3 and all(a < base for a in files)


def test_bad_seed_is_an_error(bindir):
    proc = subprocess.run([str(bindir / "mmlat-fork"), "-S", "-1"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid seed '-1'" in proc.stderr


# ------------------------------------------------- fine-grained work (pages)
@pytest.mark.parametrize("name", DRIVERS + ["imap"])
def test_driver_counts_pages_up_to_the_stop(bindir, name):
    args = ["-s", "1", "-n", "4"] if name == "imap" else ["-s", "8"]
    kv = run_driver(bindir, name, *args, "-S", "1")
    pages, secs = int(kv["pages"]), float(kv["pages_s"])
    assert pages > 0
    # the stop ends the count; ops and duration_s include the operation
    # in flight, finished after it
    assert 0.9 <= secs <= float(kv["duration_s"]) + 0.001
    rate = float(kv["pages_per_s"])
    if name == "mixed":
        # the sum of its parts' rates, each over the part's own time to its
        # stop, pages_s the longest of them
        assert pages / secs * 0.999 <= rate <= pages / secs * 1.25
    else:
        assert abs(rate - pages / secs) <= 0.001 * pages / secs + 0.001


@pytest.mark.parametrize("name, per_op", [
    ("truncate", 8 << 8),        # the parent writes the file's pages, then truncates
    ("fork", 8 << 8),            # a fork copies the region's page tables
])
def test_pages_count_the_operation_in_flight_in_part(bindir, name, per_op):
    for seed in (1, 2, 3):
        kv = run_driver(bindir, name, "-s", "8", "-S", str(seed))
        ops, pages = int(kv["ops"]), int(kv["pages"])
        # ops counts the operation in flight at the stop whole, pages
        # only its part done by then
        assert (ops - 1) * per_op <= pages <= ops * per_op, kv


def test_the_duration_is_the_runners_to_give(bindir):
    """No driver has a duration of its own: the runner always passes the
    run's DURATION (bench/plan/knobs.py)."""
    proc = subprocess.run([str(bindir / "mmlat-fork"), "-s", "8"], capture_output=True,
                          text=True, timeout=10)
    assert proc.returncode == 2 and proc.stderr.startswith("usage: ")
    assert "-d SECONDS" in proc.stderr
