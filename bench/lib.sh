# Shared shell helpers for bench/ scripts; sourced, never run.
# Paths are relative to the project root, which every script cds into.

MMLAT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$MMLAT_ROOT/build}
TREES_DIR=$BUILD_DIR/trees
CONFIG_DIR=$BUILD_DIR/config
CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
VARIANTS_CONF=${VARIANTS_CONF:-$MMLAT_ROOT/bench/variants.conf}
PATCHES_DIR=${PATCHES_DIR:-$MMLAT_ROOT/patches}
CONFIG_FRAGMENT=${CONFIG_FRAGMENT:-$MMLAT_ROOT/bench/config/mmlat.config}
# Build flavour: "bench" is the measured kernel; "check" adds the debug
# fragment (lockdep, atomic-sleep checks, DEBUG_VM) for the safety boots;
# "hw" is the bench kernel for real x86-64 machines (a LAVA lab's bare-metal
# devices): x86_64_defconfig rather than tinyconfig under the same
# fragment, and lava/x86-hw.config. Each flavour has its own config,
# object dirs and installed kernels, so building one never invalidates the
# other. FLAVOR_BASE: the make target the fragments are merged onto.
FLAVOR=${FLAVOR:-bench}
FLAVOR_BASE=tinyconfig
case $FLAVOR in
bench)
	FLAVOR_FRAGMENTS=("$CONFIG_FRAGMENT")
	KERNELS_DIR=$BUILD_DIR/kernels OBJ_SUBDIR=obj ;;
check)
	FLAVOR_FRAGMENTS=("$CONFIG_FRAGMENT" "$MMLAT_ROOT/bench/config/check.config")
	KERNELS_DIR=$BUILD_DIR/kernels-check OBJ_SUBDIR=obj-check ;;
hw)
	FLAVOR_BASE=x86_64_defconfig
	FLAVOR_FRAGMENTS=("$CONFIG_FRAGMENT" "$MMLAT_ROOT/lava/x86-hw.config")
	KERNELS_DIR=$BUILD_DIR/kernels-hw OBJ_SUBDIR=obj-hw ;;
*)
	printf 'mmlat: error: unknown FLAVOR=%s (bench, check or hw)\n' "$FLAVOR" >&2
	exit 1 ;;
esac
FLAVOR_CONFIG_DIR=$CONFIG_DIR/$FLAVOR
# TCG icount: 2^shift ns of virtual time per guest instruction. shift=3 is
# a 125 MIPS virtual CPU; at shift=5 (31 MIPS) cyclictest plus the window
# tracing left SCHED_OTHER tasks starved behind RT throttling.
ICOUNT_SHIFT=${ICOUNT_SHIFT:-3}
export CCACHE_DIR ICOUNT_SHIFT
# Debian's interpreter, as the Makefile's PYTHON: the analysis needs
# Debian's numpy and matplotlib, and a version manager's python3 shim on
# PATH can cost seconds a call.
PYTHON=${PYTHON:-/usr/bin/python3}

log() { printf '[mmlat %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'mmlat: error: %s\n' "$*" >&2; exit 1; }

# Move a finished staging path into place so readers never see half a result.
commit_dir() {
	local staging=$1 final=$2
	rm -rf "$final.old"
	[ -e "$final" ] && mv "$final" "$final.old"
	mv "$staging" "$final"
	rm -rf "$final.old"
}

# first_splat FILE: the first line of FILE that reports a kernel bug,
# warning or locking/atomicity violation; fails if there is none.
first_splat() {
	grep -m1 -E 'Kernel panic|BUG:|Oops|general protection fault|WARNING:|DEBUG_LOCKS_WARN_ON|possible (recursive|circular) locking|possible irq lock inversion|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|scheduling while atomic' "$1" |
		sed 's/^\[[^]]*\] //' | grep .
}

# Seconds since the epoch, for elapsed-time reporting.
now() { date +%s; }

# guarded CMD...: run CMD to its end as a child that dies with this script.
# It runs in the background, so that a trap of the caller's runs at once
# rather than when CMD ends (bash holds a trap while a foreground command
# runs); the trap stops it through GUARDED_PID. setpriv's parent-death
# signal stops it too when the caller is killed outright (SIGKILL), where
# no trap runs.
GUARDED_PID=
guarded() {
	setpriv --pdeathsig TERM "$@" &
	GUARDED_PID=$!
	local rc=0
	wait "$GUARDED_PID" || rc=$?
	GUARDED_PID=
	return $rc
}

# free_mib PATH: MiB free on PATH's filesystem.
free_mib() { df -Pm "$1" | awk 'NR == 2 {print $4}'; }
