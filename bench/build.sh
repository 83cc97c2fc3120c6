#!/bin/bash
# Build one kernel tree out of tree with a config, and install the files
# the guest and the analysis need (bzImage, System.map, config,
# fragments.config) into OUT_DIR, with facts.json: the kernel's release
# string and ccache's hits and misses. Nothing is installed until make has
# ended well. The orchestrator (bench/orchestrator/kernels.py) decides
# whether a kernel needs building and writes its build.json.
#
# usage: bench/build.sh NAME TREE OBJ_DIR CONFIG_DIR OUT_DIR STEPS_RECORD
#   CONFIG_DIR: bench/kconfig.sh's (config, config.sha256, fragments.config);
#   STEPS_RECORD: the kbuild steps of the last full build of a config, for
#   the progress lines' total (rewritten after a full build)
#   env: CCACHE_DIR, CCACHE_MAXSIZE, PYTHON
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 6 ] || die "usage: $0 NAME TREE OBJ_DIR CONFIG_DIR OUT_DIR STEPS_RECORD"
name=$1 tree=$2 obj=$3 config_dir=$4 out=$5 steps_record=$6
[ -f "$config_dir/config" ] || die "$config_dir/config not found: run bench/kconfig.sh make first"
config_sha=$(cat "$config_dir/config.sha256")

# Seconds between progress lines while make runs.
PROGRESS_SECONDS=30

# steps LOG: how many steps the build logging to LOG has made so far, one
# per kbuild line ("  CC      mm/memory.o", "  AR      mm/built-in.a", ...).
steps() { grep -cE '^  [A-Z][A-Z0-9_]* ' "$1" || true; }

# duration SECONDS, as 4m10s.
duration() {
	if [ "$1" -ge 60 ]; then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

# progress_line NAME DONE TOTAL ELAPSED [WHY]: DONE steps of TOTAL after
# ELAPSED seconds. The estimate assumes the rest goes at the rate so far,
# which follows ccache: a warm build runs at several times a cold one's
# rate. Without a TOTAL (empty), WHY says why there is none.
progress_line() {
	local name=$1 done=$2 total=$3 elapsed=$4 why=${5:-}
	local head="kernel '$name':"
	if [ -z "$total" ]; then
		echo "$head $done steps so far, $(duration "$elapsed") elapsed ($why)"
	elif [ "$done" -ge "$total" ]; then
		echo "$head $done/$total steps, $(duration "$elapsed") elapsed, finishing"
	elif [ "$done" -eq 0 ]; then
		echo "$head 0/$total steps, $(duration "$elapsed") elapsed"
	else
		echo "$head $done/$total steps, $(duration "$elapsed") elapsed, ~$(duration $((elapsed * (total - done) / done))) left"
	fi
}

# The total for the progress lines: the steps of the last full build of
# this config, from any variant (their series change a few files of some
# 1650). `make -n` cannot count them beforehand: in an empty object dir it
# stops at the prepare stage, and in a built one it lists steps that will
# not run and relinks vmlinux for real (a `+` recipe). So a build that
# finds objects in its object dir, an incremental one, makes an unknown
# share of them and gets no total. The record lies outside the dirs make
# clean removes, so a ccache-warm rebuild after it still gets one.
full=
[ -n "$(find "$obj" -name '*.o' -print -quit 2>/dev/null)" ] || full=1
total=
why=
if [ -z "$full" ]; then
	why="an incremental build: how many steps it makes is not known beforehand"
elif [ -f "$steps_record" ] && [ "$(cut -d' ' -f1 "$steps_record")" = "$config_sha" ]; then
	total=$(cut -d' ' -f2 "$steps_record")
else
	why="no earlier full build of this config to take the total from"
fi

mkdir -p "$obj" "$CCACHE_DIR"
cp "$config_dir/config" "$obj/.config"
# Fixed build identity: reproducible compile.h, and no ccache misses from
# the timestamp. The variant name goes into the release string only. The
# build number (#1) too: kbuild counts the builds of an object dir, so a
# rebuilt kernel would differ from a first build elsewhere.
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 1970"
export KBUILD_BUILD_USER=mmlat KBUILD_BUILD_HOST=mmlat KBUILD_BUILD_VERSION=1
CCACHE_BASEDIR=$(dirname "$tree")
export CCACHE_BASEDIR CCACHE_NOHASHDIR=1 CCACHE_DIR CCACHE_MAXSIZE
kmake_args=(-C "$obj" -f "$tree/Makefile" O="$obj" ARCH=x86_64 CC="ccache gcc"
	LOCALVERSION="-mmlat-$name")
make -s "${kmake_args[@]}" olddefconfig
if ! cmp -s "$obj/.config" "$config_dir/config"; then
	diff "$config_dir/config" "$obj/.config" | sed 's/^/    /' >&2 || true
	die "variant '$name': its Kconfig changes the shared config (diff above); every variant must build with the identical .config"
fi

# One job more than CPUs keeps them busy while a job waits on the disk.
jobs=$(($(nproc) + 1))
build_log=$obj/build.log
log "building kernel '$name' (make -j$jobs, log: ${build_log#"$MMLAT_ROOT"/})"
start=$(now)
ccache -z > /dev/null

# make runs in the background so that a signal's trap runs at once, not
# when make ends. A background job has SIGINT ignored, and so have the
# compilers it starts: a ^C reaches none of them. So make leads its own
# process group (setsid) and the trap stops the group: make, its jobs and
# their compilers. If this script is killed outright (SIGKILL, no trap),
# setpriv's parent-death signal still stops make, and make its jobs.
make_pid=
tick=
stop_build() {
	local sig=$1
	trap - INT TERM HUP
	[ -z "$tick" ] || kill "$tick" 2>/dev/null || true
	kill -TERM -- "-$make_pid" 2>/dev/null || true
	wait "$make_pid" 2>/dev/null || true
	printf 'mmlat: error: interrupted by SIG%s during the build of kernel %s; make stopped, nothing installed\n' \
		"$sig" "'$name'" >&2
	# Die of the signal itself, so a calling shell stops as well.
	kill -s "$sig" $$
}
trap 'stop_build INT' INT
trap 'stop_build TERM' TERM
trap 'stop_build HUP' HUP
setpriv --pdeathsig TERM setsid make "${kmake_args[@]}" -j"$jobs" all > "$build_log" 2>&1 &
make_pid=$!
rc=
while [ -z "$rc" ]; do
	# Not on this script's stdout and stderr: a tick that outlives a
	# killed script must not keep a reader of its output waiting.
	sleep "$PROGRESS_SECONDS" > /dev/null 2>&1 &
	tick=$!
	ended=
	status=0
	wait -n -p ended "$make_pid" "$tick" || status=$?
	if [ "$ended" = "$make_pid" ]; then
		kill "$tick" 2>/dev/null || true
		rc=$status
	else
		log "$(progress_line "$name" "$(steps "$build_log")" "$total" $(($(now) - start)) "$why")"
	fi
done
trap - INT TERM HUP
if [ "$rc" -ne 0 ]; then
	grep -E 'error|Error' "$build_log" | head -20 | sed 's/^/    /' >&2
	die "variant '$name': kernel build failed, see ${build_log#"$MMLAT_ROOT"/}"
fi
if [ -n "$full" ]; then
	printf '%s %s\n' "$config_sha" "$(steps "$build_log")" > "$steps_record.tmp.$$"
	mv "$steps_record.tmp.$$" "$steps_record"
fi
hits=$(ccache -s 2>/dev/null | awk '/^ *Hits:/ {print $2; exit}')
misses=$(ccache -s 2>/dev/null | awk '/^ *Misses:/ {print $2; exit}')
mkdir -p "$out"
cp "$obj/arch/x86/boot/bzImage" "$obj/System.map" "$out/"
cp "$obj/.config" "$out/config"
[ ! -f "$config_dir/fragments.config" ] || cp "$config_dir/fragments.config" "$out/"
record write kernel_release="$(cat "$obj/include/config/kernel.release")" \
	ccache_hits:="${hits:-0}" ccache_misses:="${misses:-0}" > "$out/facts.json"
