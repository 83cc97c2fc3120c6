#!/bin/bash
# The versions of what, besides this repository, decides a boot's numbers:
# the kernel sources, the compiler and linker that build the kernels, the
# workload drivers and the guest modules, the host programs and libraries
# the guest image copies (busybox, cyclictest, stress-ng and every library
# they load), cpio, and the QEMU of icount boots. Debian's archive keeps
# only a suite's latest upload, so a reproduction elsewhere may get other
# versions: make reproduce names the ones that differ from its reference.
#
# usage: bench/versions.sh   one JSON object on stdout:
#   {"icount_qemu": the pinned QEMU's Debian version (or "given: <its
#    --version line>" for ICOUNT_QEMU), "packages": {package: version}}
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/knobs.sh"
. "$MMLAT_ROOT/bench/icount-qemu.sh"

# The files whose packages count: every host file the guest image copies
# (its tools and their libraries), the compiler, the linker and cpio with
# theirs, the compiler proper and what a static link of the workload
# drivers takes in.
listed=$(bash "$MMLAT_ROOT/guest/initramfs.sh" files gcc ld cpio) || exit 1
mapfile -t files <<< "$listed"
files+=("$(gcc -print-prog-name=cc1)" "$(gcc -print-file-name=libc.a)" "$(gcc -print-libgcc-file-name)")
# Each file's owner as dpkg recorded it, looked up in one dpkg-query (one
# costs half a second): the resolved path first (gcc is a symlink into
# gcc-12), and with merged /usr also without or with /usr (dpkg has
# /bin/busybox, which is /usr/bin/busybox on disk).
declare -A candidates=() owner_of=()
for f in "${files[@]}"; do
	r=$(realpath "$f")
	candidates[$f]="$r ${r#/usr} /usr$r $f ${f#/usr} /usr$f"
done
# shellcheck disable=SC2068 # each entry is a list of paths
mapfile -t paths < <(printf '%s\n' ${candidates[@]} | sort -u)
while IFS= read -r line; do
	owner_of[${line#*: }]=${line%%: *}
done < <(dpkg-query -S "${paths[@]}" 2>/dev/null || true)
packages=()
for f in "${files[@]}"; do
	p=
	for c in ${candidates[$f]}; do
		[ -z "${owner_of[$c]:-}" ] || { p=${owner_of[$c]}; break; }
	done
	[ -n "$p" ] || die "no Debian package owns $f"
	packages+=("${p%%:*}")
done
# the packaged kernel sources (TREE), the ELF library objtool rewrites the
# kernel's objects with, and the system's QEMU (kvm, tcg-mt)
for p in $(dpkg-query -W -f '${Package}\n' 'linux-source-*' libelf1 qemu-system-x86 2>/dev/null); do
	packages+=("$p")
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | sort -u)
fields=()
while IFS=' ' read -r p v; do
	fields+=("$p=$v")
done < <(dpkg-query -W -f '${Package} ${Version}\n' "${packages[@]}")

if [ -n "${ICOUNT_QEMU:-$ICOUNT_QEMU_DEFAULT}" ]; then
	icount="given: $("${ICOUNT_QEMU:-$ICOUNT_QEMU_DEFAULT}" --version 2>/dev/null | head -n 1)"
else
	icount=$QEMU_PINNED_VERSION
fi
record write icount_qemu="$icount" packages:="$(record write "${fields[@]}")"
