#!/bin/bash
# Build the mmlat QEMU plugin and the kernel constants it reads.
#
# usage: bash plugin/build.sh plugin                  BUILD_DIR/plugin/mmlat_plugin.so
#        bash plugin/build.sh offsets OBJ_DIR OUT_DIR  OUT_DIR/consts.txt
#   env: BUILD_DIR, PYTHON, ICOUNT_QEMU, DEBIAN_MIRROR, DEBIAN_KEYRING
#   (bench/plan/knobs.py)
# Each prints the path it made.
#
# plugin: for the QEMU that loads it, the icount QEMU (bench/icount-qemu.sh:
# ICOUNT_QEMU, else the pinned bookworm-backports build, provisioned here
# if need be). qemu-plugin.h is in no binary package: it comes from the
# upstream tarball of Debian's source package of the pinned build, fetched
# through bench/debian-archive.sh (apt checks it against the suite's
# Sources list, signed by Debian's archive key), its sha256 recorded in
# BUILD_DIR/plugin/qemu-source/qemu-source.json; only the header is
# unpacked. The build stops unless the header speaks the plugin API the
# plugin is written for and the QEMU is the header's release.
#
# offsets: plugin/kernel/offsets.c compiled against a kernel's object
# directory, so struct offsets come from that tree's headers (no debug
# information); its DEFINE() markers become "NAME VALUE" lines.
set -euo pipefail
# shellcheck source=../bench/lib.sh
. "$(dirname "$0")/../bench/lib.sh"
# shellcheck source=../bench/icount-qemu.sh
. "$MMLAT_ROOT/bench/icount-qemu.sh"

PLUGIN_DIR=$BUILD_DIR/plugin
SRC_DIR=$MMLAT_ROOT/plugin/src
QEMU_SRC_DIR=$PLUGIN_DIR/qemu-source
# The plugin API version of QEMU 10.0 (include/qemu/qemu-plugin.h):
# version 4 added qemu_plugin_read_memory_vaddr().
PLUGIN_API=4

# fetch_header: qemu-plugin.h of QEMU $QEMU_PINNED_VERSION, in
# $QEMU_SRC_DIR/include.
fetch_header() {
	local stamp=$QEMU_SRC_DIR/qemu-source.json tarball upstream header api tmp
	if [ -f "$stamp" ] && [ "$(record get "$stamp" version 2>/dev/null)" = "$QEMU_PINNED_VERSION" ]; then
		return
	fi
	# shellcheck source=../bench/debian-archive.sh
	. "$MMLAT_ROOT/bench/debian-archive.sh"
	tmp=$QEMU_SRC_DIR.tmp.$$
	rm -rf "$tmp"
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	mkdir -p "$tmp/root/include"
	log "plugin: fetching the source of QEMU $QEMU_PINNED_VERSION from $QEMU_PINNED_SUITE for qemu-plugin.h"
	archive_apt "src:$QEMU_PINNED_SUITE"
	archive_source "$tmp/src" "qemu=$QEMU_PINNED_VERSION"
	tarball=$(find "$tmp/src" -maxdepth 1 -name 'qemu_*.orig.tar.*' | head -n 1)
	[ -n "$tarball" ] || die "no QEMU source tarball came with qemu=$QEMU_PINNED_VERSION"
	upstream=${QEMU_PINNED_VERSION#*:}
	upstream=${upstream%%+*}
	header=qemu-$upstream/include/qemu/qemu-plugin.h
	tar -xf "$tarball" -C "$tmp/root/include" --strip-components=3 "$header" ||
		die "$(basename "$tarball") has no $header"
	api=$(sed -n 's/^#define QEMU_PLUGIN_VERSION \([0-9]*\)$/\1/p' "$tmp/root/include/qemu-plugin.h")
	[ "$api" = "$PLUGIN_API" ] ||
		die "QEMU $upstream's qemu-plugin.h speaks plugin API ${api:-?}, the plugin is written for $PLUGIN_API"
	record write version="$QEMU_PINNED_VERSION" upstream="$upstream" mirror="$DEBIAN_MIRROR" \
		suite="$QEMU_PINNED_SUITE" tarball="$(basename "$tarball")" \
		sha256="$(sha256sum "$tarball" | cut -d' ' -f1)" plugin_api:="$api" \
		fetched="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp/root/qemu-source.json" ||
		die "cannot write the source record"
	mkdir -p "$PLUGIN_DIR"
	commit_dir "$tmp/root" "$QEMU_SRC_DIR"
	rm -rf "$tmp"
	trap - EXIT
	log "plugin: qemu-plugin.h (API $api) of QEMU $upstream in ${QEMU_SRC_DIR#"$MMLAT_ROOT"/}"
}

build_plugin() {
	local glib header out=$PLUGIN_DIR/mmlat_plugin.so
	[ -n "${ICOUNT_QEMU:-}" ] || provision > /dev/null
	icount_qemu 1 || die "the plugin's QEMU: $ICOUNT_QEMU_WHY"
	fetch_header
	header=$(record get "$QEMU_SRC_DIR/qemu-source.json" upstream)
	[ "$ICOUNT_QEMU_VERSION" = "$header" ] ||
		die "the icount QEMU (${ICOUNT_QEMU_CMD[0]}) is $ICOUNT_QEMU_VERSION, the plugin's header is QEMU $header's"
	glib=$(pkg-config --cflags glib-2.0 2>/dev/null) ||
		die "the plugin needs glib's headers: apt-get install libglib2.0-dev"
	# shellcheck disable=SC2086
	gcc -shared -fPIC -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror \
		-std=gnu11 $glib -I "$QEMU_SRC_DIR/include" -o "$out.tmp" "$SRC_DIR"/*.c ||
		die "the plugin does not build"
	mv "$out.tmp" "$out"
	log "plugin: ${out#"$MMLAT_ROOT"/} for QEMU $ICOUNT_QEMU_VERSION"
	echo "$out"
}

build_offsets() {
	local obj=$1 out=$2 src
	[ -f "$obj/Module.symvers" ] || die "$obj is no built kernel's object folder (no Module.symvers)"
	src=$out/.offsets.$$
	rm -rf "$src"
	mkdir -p "$src"
	# shellcheck disable=SC2064
	trap "rm -rf '$src'" EXIT
	cp "$MMLAT_ROOT/plugin/kernel/Kbuild" "$MMLAT_ROOT/plugin/kernel/offsets.c" \
		"$MMLAT_ROOT"/guest/modules/include/*.h "$src/"
	make -s -C "$obj" M="$src" ARCH=x86_64 CC="ccache gcc" offsets.s >&2 ||
		die "plugin/kernel/offsets.c does not build against $obj"
	sed -n 's/^[[:space:]]*\.ascii "->\([A-Z_]*\) \$\{0,1\}\(-\{0,1\}[0-9][0-9]*\) .*/\1 \2/p' \
		"$src/offsets.s" > "$src/consts.txt"
	grep -q '^THREAD_SIZE ' "$src/consts.txt" || die "no constants in the offsets.s of $obj"
	mv "$src/consts.txt" "$out/consts.txt"
	rm -rf "$src"
	trap - EXIT
	echo "$out/consts.txt"
}

case ${1:-} in
plugin) [ $# -eq 1 ] || die "usage: $0 plugin"; build_plugin ;;
offsets) [ $# -eq 3 ] || die "usage: $0 offsets OBJ_DIR OUT_DIR"; build_offsets "$2" "$3" ;;
*) die "usage: $0 plugin | offsets OBJ_DIR OUT_DIR" ;;
esac
