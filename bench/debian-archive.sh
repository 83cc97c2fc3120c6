# shellcheck shell=bash
# Packages from Debian's archive, fetched without changing the host: a
# private apt configuration (its own sources list, lists and cache under
# build/apt/), the suites asked for, Debian's archive key. apt checks every
# list against the suite's signed Release file and every .deb against the
# list's SHA256, so a package that arrives is the archive's. Nothing is
# installed: callers unpack what they need under build/.
# Sourced after lib.sh.

# env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR, DEBIAN_KEYRING, BUILD_DIR.

# archive_apt SUITE...: sets ARCHIVE_APT (apt-get/apt-cache options of a
# private configuration carrying those suites) and refreshes its lists;
# src:SUITE carries that suite's source packages (archive_source).
# Each set of suites has its own folder, locked while in use, so runs
# sharing build/ never update one list under another.
archive_apt() {
	local dir suite mirror kind
	if ! command -v apt-get > /dev/null || ! command -v dpkg-deb > /dev/null; then
		die "fetching from Debian's archive needs apt-get and dpkg-deb (a Debian host)"
	fi
	[ -r "$DEBIAN_KEYRING" ] || die "Debian's archive key $DEBIAN_KEYRING is missing (package debian-archive-keyring)"
	dir=$BUILD_DIR/apt/$(printf '%s\n' "$@" | paste -sd+)
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	exec {ARCHIVE_LOCK}>> "$dir/.lock"
	flock "$ARCHIVE_LOCK"
	: > "$dir/sources.list"
	for suite; do
		kind=deb
		case $suite in src:*) kind=deb-src suite=${suite#src:} ;; esac
		mirror=$DEBIAN_MIRROR
		case $suite in *-security) mirror=$DEBIAN_SECURITY_MIRROR ;; esac
		printf '%s [signed-by=%s] %s %s main\n' "$kind" "$DEBIAN_KEYRING" "$mirror" "$suite" >> "$dir/sources.list"
	done
	ARCHIVE_APT=(-q -o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
		-o Dir::State::status=/dev/null)
	# as root apt would drop to _apt, who cannot write into this folder
	[ "$(id -u)" -ne 0 ] || ARCHIVE_APT+=(-o APT::Sandbox::User=root)
	log "Debian archive: reading the lists of $* ($DEBIAN_MIRROR)"
	apt-get "${ARCHIVE_APT[@]}" update > "$dir/update.log" 2>&1 || {
		sed 's/^/    /' "$dir/update.log" >&2
		die "apt-get update of $* failed (above): Debian's archive cannot be reached or its signature does not verify"
	}
	ARCHIVE_SUITES="$*"
}

# archive_carried PREFIX: every package of the configured suites whose name
# starts with PREFIX, as "name version (suite)" of its newest upload, one a
# line.
archive_carried() {
	local name
	apt-cache "${ARCHIVE_APT[@]}" pkgnames "$1" 2>/dev/null | LC_ALL=C sort -V | while read -r name; do
		apt-cache "${ARCHIVE_APT[@]}" madison "$name" 2>/dev/null |
			awk -F'|' -v n="$name" 'NR == 1 { gsub(/ /, "", $2); split($3, s, " "); sub(/\/.*/, "", s[2]); print n " " $2 " (" s[2] ")" }'
	done
}

# archive_version PACKAGE: the version apt would fetch (the newest in the
# configured suites), with its suite as "version suite"; fails if none
# carries it.
archive_version() {
	apt-cache "${ARCHIVE_APT[@]}" madison "$1" 2>/dev/null |
		awk -F'|' 'NR == 1 { gsub(/ /, "", $2); split($3, s, " "); sub(/\/.*/, "", s[2]); print $2, s[2]; found = 1 }
			END { exit !found }'
}

# archive_download DIR SPEC...: the .deb of each SPEC (package or
# package=version) into DIR, checked by apt against the signed lists.
archive_download() {
	local dest=$1
	shift
	mkdir -p "$dest"
	(cd "$dest" && apt-get "${ARCHIVE_APT[@]}" download "$@") > "$dest/download.log" 2>&1 || {
		sed 's/^/    /' "$dest/download.log" >&2
		die "apt-get download of $* from $ARCHIVE_SUITES failed (above)"
	}
	rm -f "$dest/download.log"
}

# archive_source DIR PACKAGE=VERSION: the upstream tarball of that source
# package into DIR, checked by apt against the signed Sources list of a
# src:SUITE archive_apt carries. The tarball only: the .dsc and Debian's
# own tarball are the packaging, and some mirrors do not serve them.
archive_source() {
	local dest=$1
	shift
	mkdir -p "$dest"
	(cd "$dest" && apt-get "${ARCHIVE_APT[@]}" source --download-only --tar-only "$@") \
		> "$dest/source.log" 2>&1 || {
		sed 's/^/    /' "$dest/source.log" >&2
		die "apt-get source of $* from $ARCHIVE_SUITES failed (above)"
	}
	rm -f "$dest/source.log"
}
