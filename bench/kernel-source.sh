#!/bin/bash
# Debian's kernel sources, linux-source-VERSION, fetched from the suites
# bench/kernel-sources.conf lists for that VERSION (newest upload first)
# through a private apt configuration (bench/debian-archive.sh), never
# installed. The tarball lands in build/debian/linux-source-VERSION/ with
# package.json: the exact package version, its suite and the .deb's
# sha256. It is fetched once; the archive keeps only the latest upload, so
# that record is what says which source a kernel was built from.
#
# usage: bench/kernel-source.sh tarball VERSION   (prints the tarball path)
#        bench/kernel-source.sh record VERSION    (prints package.json's path)
#   env: BUILD_DIR, KERNEL_SOURCES_CONF, DEBIAN_MIRROR,
#   DEBIAN_SECURITY_MIRROR, DEBIAN_KEYRING
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# kernel_source_suites VERSION: its suites, or fails.
kernel_source_suites() {
	awk -v v="$1:" '$1 == v { $1 = ""; sub(/^ /, ""); print; found = 1 } END { exit !found }' \
		"$KERNEL_SOURCES_CONF"
}

# kernel_source_dir VERSION: where its tarball and record live.
kernel_source_dir() { printf '%s\n' "$BUILD_DIR/debian/linux-source-$1"; }

# fetch VERSION: the tarball of linux-source-VERSION, fetched unless it
# already is. Fails naming the suites and what they carry when none has it.
fetch() {
	local version=$1 package=linux-source-$1 dir suites found deb staging
	dir=$(kernel_source_dir "$version")
	if [ -f "$dir/package.json" ] && [ -f "$dir/$package.tar.xz" ]; then
		return 0
	fi
	suites=$(kernel_source_suites "$version") ||
		die "Linux $version: ${KERNEL_SOURCES_CONF#"$MMLAT_ROOT"/} names no Debian suite for it (it lists $(cut -d: -f1 "$KERNEL_SOURCES_CONF" | grep -v '^#' | paste -sd' ')); add a line 'VERSION: SUITE...'"
	# shellcheck source=debian-archive.sh
	. "$MMLAT_ROOT/bench/debian-archive.sh"
	read -ra suite_list <<< "$suites"
	archive_apt "${suite_list[@]}"
	if ! found=$(archive_version "$package"); then
		die "$package is not in $suites ($DEBIAN_MIRROR); those suites carry: $(archive_carried linux-source- | paste -sd, | sed 's/,/, /g')"
	fi
	read -r version suite <<< "$found"
	set -- "$version" "$suite"
	staging=$dir.tmp.$$
	rm -rf "$staging"
	trap 'rm -rf "$staging"' EXIT
	log "fetching $package $1 from $2 into ${dir#"$MMLAT_ROOT"/}"
	archive_download "$staging/deb" "$package=$1"
	deb=$(ls "$staging"/deb/*.deb)
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$package.tar.xz" > "$staging/$package.tar.xz" ||
		die "$(basename "$deb") holds no usr/src/$package.tar.xz"
	record write package="$package" version="$1" suite="$2" mirror="$DEBIAN_MIRROR" \
		deb="$(basename "$deb")" deb_sha256="$(sha256sum < "$deb" | cut -d' ' -f1)" \
		tarball_sha256="$(sha256sum < "$staging/$package.tar.xz" | cut -d' ' -f1)" \
		fetched="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$staging/package.json"
	rm -rf "$staging/deb"
	mkdir -p "$(dirname "$dir")"
	commit_dir "$staging" "$dir"
	trap - EXIT
	log "$package $1: $(du -h "$dir/$package.tar.xz" | cut -f1), sha256 $(record get "$dir/package.json" tarball_sha256 | cut -c1-12)"
}

[ $# -eq 2 ] || die "usage: $0 tarball VERSION | record VERSION"
case $1 in
tarball) fetch "$2"; printf '%s/linux-source-%s.tar.xz\n' "$(kernel_source_dir "$2")" "$2" ;;
record) fetch "$2"; printf '%s/package.json\n' "$(kernel_source_dir "$2")" ;;
*) die "usage: $0 tarball VERSION | record VERSION" ;;
esac
