# Shared shell helpers for bench/ scripts; sourced, never run.
# Paths are relative to the project root, which every script cds into.

MMLAT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$MMLAT_ROOT/build}
PRISTINE_TREE=$BUILD_DIR/linux-source-6.1
TREES_DIR=$BUILD_DIR/trees
KERNELS_DIR=$BUILD_DIR/kernels
CONFIG_DIR=$BUILD_DIR/config
CCACHE_DIR=${CCACHE_DIR:-$BUILD_DIR/ccache}
LINUX_TARBALL=${LINUX_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
VARIANTS_CONF=${VARIANTS_CONF:-$MMLAT_ROOT/bench/variants.conf}
PATCHES_DIR=${PATCHES_DIR:-$MMLAT_ROOT/patches}
CONFIG_FRAGMENT=${CONFIG_FRAGMENT:-$MMLAT_ROOT/bench/config/mmlat.config}
# TCG icount: 2^shift ns of virtual time per guest instruction. shift=3 is
# a 125 MIPS virtual CPU; at shift=5 (31 MIPS) cyclictest plus the window
# tracing left SCHED_OTHER tasks starved behind RT throttling.
ICOUNT_SHIFT=${ICOUNT_SHIFT:-3}
export CCACHE_DIR ICOUNT_SHIFT

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

# Seconds since the epoch, for elapsed-time reporting.
now() { date +%s; }
