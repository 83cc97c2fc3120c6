"""The boot matrix with every leaf that needs a kernel or QEMU replaced by a
stub: the orchestrator (bench/orchestrator, bench/plan) runs unchanged
from a copy of the project's root whose leaves are stubs."""
import shutil
import subprocess
import textwrap

import pytest
from helpers import ROOT, STEP_SERIES, clean_environ, provisioned_icount_qemu

RECORD = '/usr/bin/python3 "$(dirname "$0")/record.py"'
STUBS = {
    "bench/deps.sh": "exit 0\n",
    "bench/tree.sh": "exit 0\n",
    # make OUT SOURCE BASE FRAGMENT...; kconfig.log: the calls
    "bench/kconfig.sh": 'mkdir -p "$MMLAT_RESULTS" "$2"; echo "$*" >> "$MMLAT_RESULTS/kconfig.log"; '
                        'echo c0ffee > "$2/config.sha256"\n',
    # NAME TREE OBJ CONFIG OUT STEPS_RECORD; STUB_BUILD_SLEEP: seconds a
    # build takes; build.pid: this build
    "bench/build.sh": textwrap.dedent("""\
        echo $$ > "$BUILD_DIR/build.pid"
        # as build.sh's make: gone with it
        setpriv --pdeathsig TERM sleep "${STUB_BUILD_SLEEP:-0}"
        mkdir -p "$5"
        touch "$5/System.map" "$5/config" "$5/bzImage"
        %s write kernel_release="6.1.0-mmlat-$1" ccache_hits:=0 ccache_misses:=0 \\
            > "$5/facts.json"
        """ % RECORD),
    "bench/kernel-source.sh": textwrap.dedent("""\
        d=$BUILD_DIR/debian/linux-source-$2
        mkdir -p "$d"
        echo '{"package": "linux-source-'"$2"'", "version": "6.1.0-1"}' > "$d/package.json"
        echo "$d/package.json"
        """),
    # plugin: the plugin; offsets OBJ OUT: OUT/consts.txt, offsets.log the
    # object folders
    "plugin/build.sh": textwrap.dedent("""\
        case $1 in
        plugin) mkdir -p "$BUILD_DIR/plugin"; echo so > "$BUILD_DIR/plugin/mmlat_plugin.so"
            echo "$BUILD_DIR/plugin/mmlat_plugin.so" ;;
        offsets) echo "$2" >> "$MMLAT_RESULTS/offsets.log"; echo "THREAD_SIZE 16384" > "$3/consts.txt"
            echo "$3/consts.txt" ;;
        esac
        """),
    "guest/initramfs.sh":
        'case $1 in base) echo base > "$2" ;; module) echo module > "$3" ;; esac\n',
    # ACCEL=auto: the probe's verdict, STUB_ACCEL's if set
    "bench/accel.sh": "echo \"${STUB_ACCEL:-tcg-icount}\"\n",
    # One line per boot in boots.log: the output dir and the guest job, and
    # the QEMU plugin's argument when the boot loads it.
    # STUB_FAIL: boots whose job contains it fail.
    # REPEAT=auto's rule (mmlat look): STUB_LOOKS' answer for the look
    # after round N (JSON, a list); looks.log: the rounds meta.json had.
    # The drift guard (mmlat drift): drift.log, the kernel folders it
    # checked; STUB_DRIFT: its exit status
    "analysis/mmlat/__init__.py": "",
    "analysis/mmlat/__main__.py": textwrap.dedent("""\
        import json, os, sys
        if sys.argv[1] == "drift":
            with open(os.path.join(os.environ["MMLAT_RESULTS"], "drift.log"), "a") as f:
                f.write(" ".join(sys.argv[2:]) + "\\n")
            sys.exit(int(os.environ.get("STUB_DRIFT", "0")))
        with open(os.path.join(sys.argv[2], "meta.json")) as f:
            rounds = json.load(f)["rounds"]
        with open(os.path.join(os.environ["MMLAT_RESULTS"], "looks.log"), "a") as f:
            f.write(" ".join(sys.argv[3:]) + " " + json.dumps(rounds) + "\\n")
        print(json.dumps(json.loads(os.environ["STUB_LOOKS"])[len(rounds) - 1]))
        """),
    "bench/qemu.sh": textwrap.dedent("""\
        out=$1 job=$4
        echo "${out#$MMLAT_RESULTS/} $job${5:+ plugin=$5}" >> "$MMLAT_RESULTS/boots.log"
        mkdir -p "$out/guest"
        echo "$job" > "$out/console.log"
        printf '%%s\\n' "${STUB_QEMU:-qemu-stub}" > "$out/qemu.cmdline"
        status=ok cause=
        case $job in *"${STUB_FAIL:-none-fails}"*)
            status=failed cause=${STUB_CAUSE:-stub failure} ;;
        esac
        # STUB_SLEEP: seconds each boot takes; events.log: when each
        # boot starts and ends
        echo "start $out" >> "$MMLAT_RESULTS/events.log"
        sleep "${STUB_SLEEP:-0}"
        echo "end $out" >> "$MMLAT_RESULTS/events.log"
        %s write status="$status" cause="$cause" wall_seconds:=1 guest_seconds_to_runner:=2 \\
            accel="$ACCEL" qemu_binary=qemu-stub qemu="QEMU stub" > "$out/boot.json"
        [ "$status" = ok ]
        """ % RECORD),
}
# The real files the orchestrator reads beside the stubs.
REAL = ("bench/lib.sh", "bench/record.py", "bench/icount-qemu.sh", "bench/kernel-sources.conf")


@pytest.fixture
def matrix(tmp_path, terminal_job):
    """run_matrix(**env) -> (the finished run's process, its boots.log lines,
    in the order the boots started: one boot at a time unless JOBS says);
    run_matrix.start(**env) -> the run in the background, in a process group
    of its own as a terminal's foreground job is; and the run's folder."""
    root = tmp_path / "root"
    (root / "bench").mkdir(parents=True)
    for pkg in ("plan", "orchestrator"):
        (root / "bench" / pkg).symlink_to(ROOT / "bench" / pkg)
    for rel in REAL:
        (root / rel).write_text((ROOT / rel).read_text())
    for rel, body in STUBS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(body)
    build = tmp_path / "build"
    (build / "linux-source-6.1").mkdir(parents=True)
    (build / "linux-source-6.1/Makefile").write_text("kernelversion:\n\t@echo 6.1.0\n")
    (build / "linux-source-6.1/.mmlat-package").write_text("6.1.0-1\n")
    provisioned_icount_qemu(build)
    conf = tmp_path / "variants.conf"
    conf.write_text("base:\npatch:\n")
    # series directories for ad hoc variants (STEPS=each): the stub build
    # applies none of their patches
    for d, names in STEP_SERIES.items():
        (tmp_path / "patches" / d).mkdir(parents=True)
        (tmp_path / "patches" / d / "series").write_text(
            "# a comment\n" + "".join(n + "\n" for n in names))
        for n in names:
            (tmp_path / "patches" / d / n).write_text("patch %s/%s\n" % (d, n))
    # a series that applies to one kernel version only, as the seed's
    (tmp_path / "patches/only61/versions").write_text("# a comment\n6.1\nwhy: the seed's port\n")
    results = tmp_path / "results"
    base_env = {"BUILD_DIR": str(build), "VARIANTS_CONF": str(conf),
                "PATCHES_DIR": str(tmp_path / "patches"),
                "INSTRUMENTATION_SERIES": "", "PYTHONPATH": str(root / "bench"),
                "RESULTS_DIR": str(results), "MMLAT_RESULTS": str(results),
                "RUN_ID": "t", "VARIANTS": "base patch", "WORKLOADS": "munmap idle",
                "REPEAT": "2", "DURATION": "1", "ACCEL": "tcg-icount", "JOBS": "1",
                "TRACE": "windows", "CALIB": "preempt:200"}
    command = ["/usr/bin/python3", "-m", "orchestrator", "run"]

    def environ(env):
        return dict(clean_environ(), **dict(base_env, **env))

    def run_matrix(**env):
        proc = subprocess.run(command, cwd=root, env=environ(env), text=True,
                              capture_output=True)
        log = results / "boots.log"
        boots = log.read_text().splitlines() if log.exists() else []
        if log.exists():
            log.unlink()
        return proc, boots

    def start(**env):
        return subprocess.Popen(command, cwd=root, env=environ(env), text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, preexec_fn=terminal_job)
    run_matrix.start = start
    return run_matrix, results / "t"


GUEST_APPLETS = ("sh", "tar", "bzip2", "wc", "sha256sum", "base64", "mktemp", "rm", "cut")


@pytest.fixture
def guest_path(tmp_path):
    """A PATH of the guest's busybox applets, as the initramfs has them,
    and the file where the script's console loglevel changes are
    recorded instead of made (busybox's shell runs its own dmesg applet
    whatever PATH says, which would set this machine's loglevel)."""
    busybox = shutil.which("busybox")
    if busybox is None:
        pytest.skip("busybox (busybox-static, what the guest image is built from) is not installed")
    bindir = tmp_path / "guest-bin"
    bindir.mkdir()
    for applet in GUEST_APPLETS:
        (bindir / applet).symlink_to(busybox)
    return bindir, tmp_path / "console-level.calls"
