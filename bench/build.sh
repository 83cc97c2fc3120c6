#!/bin/bash
# Build one variant's kernel out of tree and install the artefacts the guest
# and the analysis need into build/kernels/<variant>/.
#
# usage: bench/build.sh SPEC CONFIG_DIR
#   CONFIG_DIR holds the shared config made by bench/kconfig.sh.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/variants.sh"
record() { python3 "$MMLAT_ROOT/bench/record.py" "$@"; }

[ $# -eq 2 ] || die "usage: $0 SPEC CONFIG_DIR"
spec=$1
config_dir=$(realpath "$2")
[ -f "$config_dir/config" ] || die "$config_dir/config not found: run bench/kconfig.sh make first"

tree=$(bash "$MMLAT_ROOT/bench/tree.sh" variant "$spec")
resolve_variant "$spec"
name=$VARIANT_NAME
obj=$tree/$OBJ_SUBDIR
out=$KERNELS_DIR/$name
series_sha=$(cat "$tree/.mmlat-series-sha256")
config_sha=$(cat "$config_dir/config.sha256")

if [ -f "$out/build.json" ] &&
   [ "$(record get "$out/build.json" series_sha256 2>/dev/null)" = "$series_sha" ] &&
   [ "$(record get "$out/build.json" config_sha256 2>/dev/null)" = "$config_sha" ] &&
   [ -f "$obj/Module.symvers" ]; then
	# the object tree too: the guest modules are built against it
	log "kernel '$name' is up to date"
	exit 0
fi

mkdir -p "$obj" "$CCACHE_DIR"
cp "$config_dir/config" "$obj/.config"
# Fixed build identity: reproducible compile.h, and no ccache misses from
# the timestamp. The variant name goes into the release string only.
export KBUILD_BUILD_TIMESTAMP="Thu Jan  1 00:00:00 UTC 1970"
export KBUILD_BUILD_USER=mmlat KBUILD_BUILD_HOST=mmlat
export CCACHE_BASEDIR=$TREES_DIR CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
kmake() {
	make -C "$obj" -f "$tree/Makefile" O="$obj" ARCH=x86_64 CC="ccache gcc" \
		LOCALVERSION="-mmlat-$name" "$@"
}
kmake -s olddefconfig
if ! cmp -s "$obj/.config" "$config_dir/config"; then
	diff "$config_dir/config" "$obj/.config" | sed 's/^/    /' >&2 || true
	die "variant '$name': its Kconfig changes the shared config (diff above); every variant must build with the identical .config"
fi

# One job more than CPUs keeps them busy while a job waits on the disk.
jobs=$(($(nproc) + 1))
log "building kernel '$name' (make -j$jobs, log: ${obj#$MMLAT_ROOT/}/build.log)"
start=$(now)
ccache -z >/dev/null
if ! kmake -j"$jobs" all > "$obj/build.log" 2>&1; then
	grep -E 'error|Error' "$obj/build.log" | head -20 | sed 's/^/    /' >&2
	die "variant '$name': kernel build failed, see ${obj#$MMLAT_ROOT/}/build.log"
fi
secs=$(($(now) - start))
hits=$(ccache -s 2>/dev/null | awk '/^ *Hits:/ {print $2; exit}')
misses=$(ccache -s 2>/dev/null | awk '/^ *Misses:/ {print $2; exit}')

staging=$KERNELS_DIR/.$name.tmp
rm -rf "$staging"
mkdir -p "$staging"
cp "$obj/arch/x86/boot/bzImage" "$obj/System.map" "$staging/"
cp "$obj/.config" "$staging/config"
release=$(cat "$obj/include/config/kernel.release")
series_args=(series:=[])
for d in "${VARIANT_SERIES[@]}"; do series_args+=("series[]=${d#$PATCHES_DIR/}"); done
record write variant="$name" "${series_args[@]}" series_sha256="$series_sha" \
	config_sha256="$config_sha" kernel_release="$release" build_seconds:="$secs" \
	ccache_hits:="${hits:-0}" ccache_misses:="${misses:-0}" obj_dir="$obj" > "$staging/build.json"
mkdir -p "$KERNELS_DIR"
commit_dir "$staging" "$out"
log "kernel '$name' $release built in ${secs}s (ccache hits ${hits:-?}, misses ${misses:-?})"
