#!/bin/bash
# Build the guest initramfs images.
#
#   base: busybox, cyclictest and stress-ng with their shared libraries,
#         our workload drivers, the runner as /init and its results
#         shippers (guest/ship.c, guest/console-results.sh). The same for
#         every variant, and byte-for-byte reproducible on every machine
#         (sorted entries, zero mtimes, root ownership, fixed modes).
#   module (per variant): the guest modules (calibration, windows) built
#         against that variant's kernel, appended to the base at boot (the
#         kernel unpacks concatenated cpio archives in order).
#
# usage: guest/initramfs.sh base OUT.cpio ETC_DIR
#          ETC_DIR: the runner's knobs.conf and workloads.conf, generated
#          from the registries (python3 -m plan guest-config ETC_DIR)
#        guest/initramfs.sh module OBJ_DIR OUT.cpio
#          OBJ_DIR: the variant kernel's object folder
#        guest/initramfs.sh files [TOOL...]
#          the host files base is made of, and each TOOL with its
#          libraries, one a line (the run's versions record: their packages)
set -euo pipefail
# shellcheck source=../bench/lib.sh
. "$(dirname "$0")/../bench/lib.sh"
# The archive records each entry's mode: directories made here get theirs
# from the umask, which differs between users and machines.
umask 022

GUEST_TOOLS="busybox cyclictest stress-ng"
# Out-of-tree guest modules (guest/modules/NAME/NAME.c), built per variant.
GUEST_MODULES="mmlat_calib mmlat_windows"

# pack DIR OUT: a reproducible newc archive of DIR.
pack() {
	local dir=$1 out=$2
	find "$dir" -exec touch -h -d @0 {} +
	(cd "$dir" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet --reproducible -o -H newc -R 0:0) > "$out.tmp.$$"
	mv "$out.tmp.$$" "$out"
}

# libs_of BIN: the shared libraries BIN loads, as the host resolves them
# (none for a static one, which ldd fails on).
libs_of() {
	{ ldd "$1" 2>/dev/null || true; } | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'
}

# tool_path TOOL: its host binary.
tool_path() {
	command -v "$1" || die "$1 not found on the host: run make deps"
}

copy_with_libs() {
	local root=$1 bin=$2 lib
	install -D -m 755 "$bin" "$root/bin/$(basename "$bin")"
	for lib in $(libs_of "$bin"); do
		[ -e "$root$lib" ] || install -D -m 755 "$(realpath "$lib")" "$root$lib"
	done
}

# host_files [TOOL...]: every host file that goes into the base image (the
# tools it copies with their libraries; the compiler proper, the C library
# and libgcc the static drivers are made of), and each TOOL's binary with
# its libraries, one a line, for the versions of their packages
# (bench/orchestrator/packages.py).
host_files() {
	local tool path arg
	for tool in $GUEST_TOOLS "$@"; do
		path=$(tool_path "$tool")
		echo "$path"
		libs_of "$path"
	done
	for arg in -print-prog-name=cc1 -print-file-name=libc.a -print-libgcc-file-name; do
		gcc "$arg"
	done
}

build_base() {
	local out=$1 etc=$2 root tool path
	# Work dirs belong to this output, so concurrent runs never share one.
	root=$out.root.$$
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,out,lib/mmlat} "$(dirname "$out")"
	log "guest image: copying ${GUEST_TOOLS// /, } and their libraries"
	for tool in $GUEST_TOOLS; do
		path=$(tool_path "$tool")
		copy_with_libs "$root" "$path"
	done
	for tool in $("$root/bin/busybox" --list); do
		[ -e "$root/bin/$tool" ] || ln -s busybox "$root/bin/$tool"
	done
	ln -s bin "$root/sbin"
	mkdir -p "$root/usr"
	ln -s ../bin "$root/usr/bin"
	ln -s ../bin "$root/usr/sbin"
	[ -e "$root/lib64" ] || ln -s lib "$root/lib64"
	log "guest image: building the workload drivers"
	make -s -C "$MMLAT_ROOT/workloads" O="$out.workloads.$$" >&2
	install -m 755 "$out.workloads.$$"/mmlat-* "$root/bin/"
	rm -rf "$out.workloads.$$"
	install -m 755 "$MMLAT_ROOT/guest/runner.sh" "$root/init"
	# the runner's results into QEMU's shared memory (guest/ship.c), and
	# on the console, for hosts that keep only the serial log
	gcc -static -O2 -Wall -Wextra -Werror -o "$root/bin/mmlat-ship" "$MMLAT_ROOT/guest/ship.c"
	install -m 755 "$MMLAT_ROOT/guest/console-results.sh" "$root/bin/mmlat-console-results"
	# the job keys' defaults and allowed values, which the runner checks its
	# job against, and the workloads it runs
	install -D -m 644 "$etc/knobs.conf" "$root/etc/mmlat/knobs.conf"
	install -D -m 644 "$etc/workloads.conf" "$root/etc/mmlat/workloads.conf"
	pack "$root" "$out"
	rm -rf "$root"
	log "base initramfs: ${out#"$MMLAT_ROOT"/} ($(du -h "$out" | cut -f1), sha256 $(sha256sum "$out" | cut -c1-12))"
}

build_module() {
	local obj=$1 out=$2 src root
	[ -f "$obj/Module.symvers" ] || die "no kernel built in $obj: run make kernels"
	root=$out.root.$$
	rm -rf "$root"
	log "guest image: building ${GUEST_MODULES// /, } against ${obj#"$MMLAT_ROOT"/}"
	for mod in $GUEST_MODULES; do
		src=$out.src.$$/$mod
		rm -rf "$src"
		mkdir -p "$(dirname "$src")"
		cp -r "$MMLAT_ROOT/guest/modules/$mod" "$src"
		# the table of lock users and window classes (mmlat_windows),
		# and the headers both modules share
		cp "$MMLAT_ROOT/guest/classes.txt" "$MMLAT_ROOT"/guest/modules/include/*.h "$src/"
		make -s -C "$obj" M="$src" ARCH=x86_64 CC="ccache gcc" modules >&2 ||
			die "module $mod does not build against ${obj#"$MMLAT_ROOT"/}"
		install -D -m 644 "$src/$mod.ko" "$root/lib/mmlat/$mod.ko"
	done
	pack "$root" "$out"
	rm -rf "$root" "$out.src.$$"
}

case ${1:-} in
base) [ $# -eq 3 ] || die "usage: $0 base OUT.cpio ETC_DIR"; build_base "$(realpath -m "$2")" "$3" ;;
module) [ $# -eq 3 ] || die "usage: $0 module OBJ_DIR OUT.cpio"; build_module "$2" "$(realpath -m "$3")" ;;
files) shift; host_files "$@" ;;
*) die "usage: $0 base OUT.cpio ETC_DIR | module OBJ_DIR OUT.cpio | files [TOOL...]" ;;
esac
