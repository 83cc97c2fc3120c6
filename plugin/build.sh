#!/bin/bash
# Build the mmlat QEMU plugin and the kernel constants it reads.
#
# usage: bash plugin/build.sh plugin                  BUILD_DIR/plugin/mmlat_plugin.so
#        bash plugin/build.sh offsets OBJ_DIR OUT_DIR  OUT_DIR/consts.txt
#   env: BUILD_DIR, QEMU_BPO_MIRROR, PYTHON (bench/plan/knobs.py)
# Each prints the path it made.
#
# plugin: qemu-plugin.h is in no binary package: it comes from Debian's
# source package of the QEMU that loads the plugin (bench/qemu-smp.sh's
# bookworm-backports QEMU), fetched with a private apt configuration (apt
# checks the tarball against the Sources index signed by Debian's archive
# key), its sha256 recorded in build/plugin/qemu-source.json; only the
# header is unpacked. The build stops if the header's API version is not
# the one that QEMU release speaks.
#
# offsets: plugin/kernel/offsets.c compiled against a kernel's object
# directory, so struct offsets come from that tree's headers (no debug
# information); its DEFINE() markers become "NAME VALUE" lines.
set -euo pipefail
# shellcheck source=../bench/lib.sh
. "$(dirname "$0")/../bench/lib.sh"
# shellcheck source=../bench/qemu-smp.sh
. "$MMLAT_ROOT/bench/qemu-smp.sh"

PLUGIN_DIR=$BUILD_DIR/plugin
SRC_DIR=$MMLAT_ROOT/plugin/src
QEMU_SRC_DIR=$PLUGIN_DIR/qemu-source
# The plugin API version of QEMU 10.0 (include/qemu/qemu-plugin.h):
# version 4 added qemu_plugin_read_memory_vaddr().
PLUGIN_API=4

# fetch_header: QEMU's qemu-plugin.h of $QEMU_BPO_VERSION, in
# $QEMU_SRC_DIR/include.
fetch_header() {
	local stamp=$QEMU_SRC_DIR/qemu-source.json apt tarball upstream header api tmp
	if [ -f "$stamp" ] && [ "$(record get "$stamp" version 2>/dev/null)" = "$QEMU_BPO_VERSION" ]; then
		return
	fi
	tmp=$QEMU_SRC_DIR.tmp.$$
	rm -rf "$tmp"
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	apt=$tmp/apt
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/src" "$tmp/root/include"
	printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm-backports main\n' \
		"$QEMU_BPO_MIRROR" > "$apt/sources.list"
	local aptopts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
	[ "$(id -u)" -ne 0 ] || aptopts+=(-o APT::Sandbox::User=root)
	log "plugin: fetching the source of QEMU $QEMU_BPO_VERSION from bookworm-backports for qemu-plugin.h"
	apt-get "${aptopts[@]}" update >&2 ||
		die "apt-get update of bookworm-backports' sources ($QEMU_BPO_MIRROR) failed"
	# the upstream tarball only: the header is QEMU's, Debian's patches
	# are for the packaging
	(cd "$apt/src" && apt-get "${aptopts[@]}" source --download-only --tar-only \
		"qemu=$QEMU_BPO_VERSION") >&2 ||
		die "apt-get source of qemu=$QEMU_BPO_VERSION failed"
	tarball=$(find "$apt/src" -maxdepth 1 -name 'qemu_*.orig.tar.*' | head -n 1)
	[ -n "$tarball" ] || die "no QEMU source tarball came with qemu=$QEMU_BPO_VERSION"
	upstream=${QEMU_BPO_VERSION#*:}
	upstream=${upstream%%+*}
	header=qemu-$upstream/include/qemu/qemu-plugin.h
	tar -xf "$tarball" -C "$tmp/root/include" --strip-components=3 "$header" ||
		die "$(basename "$tarball") has no $header"
	api=$(sed -n 's/^#define QEMU_PLUGIN_VERSION \([0-9]*\)$/\1/p' "$tmp/root/include/qemu-plugin.h")
	[ "$api" = "$PLUGIN_API" ] ||
		die "QEMU $upstream's qemu-plugin.h speaks plugin API ${api:-?}, the plugin is written for $PLUGIN_API"
	record write version="$QEMU_BPO_VERSION" upstream="$upstream" mirror="$QEMU_BPO_MIRROR" \
		tarball="$(basename "$tarball")" sha256="$(sha256sum "$tarball" | cut -d' ' -f1)" \
		plugin_api:="$api" fetched="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp/root/qemu-source.json" ||
		die "cannot write the source record"
	mkdir -p "$PLUGIN_DIR"
	commit_dir "$tmp/root" "$QEMU_SRC_DIR"
	rm -rf "$tmp"
	trap - EXIT
	log "plugin: qemu-plugin.h (API $api) of QEMU $upstream in ${QEMU_SRC_DIR#"$MMLAT_ROOT"/}"
}

build_plugin() {
	local qemu v glib out=$PLUGIN_DIR/mmlat_plugin.so
	qemu=$(provision)
	v=$(qemu_version "$qemu") || die "$qemu does not run"
	fetch_header
	[ "$v" = "$(record get "$QEMU_SRC_DIR/qemu-source.json" upstream)" ] ||
		die "the plugin QEMU is $v, the header is QEMU $(record get "$QEMU_SRC_DIR/qemu-source.json" upstream)'s"
	glib=$(pkg-config --cflags glib-2.0 2>/dev/null) ||
		die "the plugin needs glib's headers: apt-get install libglib2.0-dev"
	# shellcheck disable=SC2086
	gcc -shared -fPIC -O2 -g -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror \
		-std=gnu11 $glib -I "$QEMU_SRC_DIR/include" -o "$out.tmp" "$SRC_DIR"/*.c ||
		die "the plugin does not build"
	mv "$out.tmp" "$out"
	log "plugin: ${out#"$MMLAT_ROOT"/} for QEMU $v"
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
