# Variant resolution; sourced after lib.sh.
#
# A variant is a kernel source plus series directories applied to it. Its
# spec is a name declared in variants.conf, an ad-hoc
# "name=part[+part...]", or, with KSRC set, a git ref of KSRC. A part is a
# series directory (relative to patches/, or a path), tree:VERSION (Debian's
# linux-source-VERSION) or git:REF (a commit of the git tree KSRC). The
# source comes first; a spec without one builds on the packaged tree TREE.
#
# Every variant also carries the instrumentation of its kernel version
# first, so that the variants of a run differ only by their own series:
# on 6.1, patches/preemptirq-trace, which changes nothing until the
# preemptirq tracepoints are on and then keeps their cost out of the
# windows; 6.2 and later need none (their x86 entry and idle code calls
# the plain tracepoints). INSTRUMENTATION_SERIES, when set, is used for
# every version instead.
#
# Versions: TESTED_VERSIONS run as tested; another from OLDEST_VERSION on
# runs as untested (VARIANT_TESTED=no: the caller warns); an older one is
# refused. A series directory with a 'versions' file applies to the
# versions it lists only: a variant of another version is refused naming
# it, before anything is fetched or built.
[ -n "${TREE_VALUES:-}" ] || . "$MMLAT_ROOT/bench/knobs.sh"
TREE=${TREE:-$TREE_DEFAULT}
KSRC=${KSRC:-$KSRC_DEFAULT}

# instrumentation_of VERSION: the instrumentation series of that version.
instrumentation_of() {
	if [ -n "${INSTRUMENTATION_SERIES+set}" ]; then
		printf '%s\n' "$INSTRUMENTATION_SERIES"
	elif [ "$1" = 6.1 ]; then
		echo preemptirq-trace
	fi
}

# ref_name REF: the variant name of a bare git ref (characters a name does
# not allow become '-': HEAD~2 is HEAD-2, origin/main origin-main).
ref_name() { printf '%s' "$1" | tr -c 'A-Za-z0-9_.-' '-'; }

# git_source REF: sets VARIANT_SOURCE, VARIANT_SOURCE_DIR, VARIANT_VERSION
# and VARIANT_REF for a commit of KSRC, reading only KSRC's objects.
git_source() {
	local ref=$1 commit makefile
	[ -n "$KSRC" ] || die "VARIANTS: variant '$VARIANT_NAME' names git:$ref, but KSRC (the git tree) is not set"
	git -C "$KSRC" rev-parse --git-dir > /dev/null 2>&1 ||
		knob_die KSRC "$KSRC" "the path of a git tree (a clone of Linux)"
	commit=$(git -C "$KSRC" rev-parse --verify -q "$ref^{commit}") ||
		die "VARIANTS: variant '$VARIANT_NAME': '$ref' is no commit of $KSRC (git rev-parse)"
	makefile=$(git -C "$KSRC" show "$commit:Makefile" 2>/dev/null) ||
		die "VARIANTS: variant '$VARIANT_NAME': $ref ($commit) has no top-level Makefile: not a Linux tree"
	VARIANT_VERSION=$(printf '%s\n' "$makefile" | awk '
		$1 == "VERSION" && $2 == "=" { v = $3 }
		$1 == "PATCHLEVEL" && $2 == "=" { p = $3 }
		END { if (v != "" && p != "") print v "." p }')
	VARIANT_SOURCE=git:$commit VARIANT_REF=$ref
	VARIANT_SOURCE_DIR=$BUILD_DIR/git/$commit
}

# resolve_variant SPEC: sets VARIANT_NAME, VARIANT_SERIES (absolute dirs,
# the instrumentation first), VARIANT_INSTRUMENTATION (how many of them
# are the instrumentation), VARIANT_SOURCE (tree:VERSION or git:COMMIT),
# VARIANT_SOURCE_DIR (its unpacked or exported tree, made by bench/tree.sh
# source), VARIANT_VERSION (VERSION.PATCHLEVEL) and VARIANT_REF (the git
# ref as given, else empty) and VARIANT_CONFIG_DIR (where bench/kconfig.sh
# puts the config of that source for $FLAVOR). Checks every part, and that mmlat supports
# the version, before anything is unpacked or built.
resolve_variant() {
	local spec=$1 parts line d part source=
	local -a dirs=()
	VARIANT_SERIES=() VARIANT_REF=
	case $spec in
	*=*)
		VARIANT_NAME=${spec%%=*}
		parts=$(printf '%s' "${spec#*=}" | tr '+' ' ')
		;;
	*)
		VARIANT_NAME=$spec
		line=$(grep -E "^${spec}:" "$VARIANTS_CONF" 2>/dev/null || true)
		if [ -n "$line" ]; then
			parts=${line#*:}
		elif [ -n "$KSRC" ]; then
			VARIANT_NAME=$(ref_name "$spec")
			parts=git:$spec
		else
			die "VARIANTS: unknown variant '$spec': not in ${VARIANTS_CONF#$MMLAT_ROOT/}, which declares: $(sed -n 's/^\([A-Za-z0-9_.-]*\):.*/\1/p' "$VARIANTS_CONF" | tr '\n' ' ')(or use name=series-dir, or KSRC=<git tree> for a git ref)"
		fi
		;;
	esac
	case $VARIANT_NAME in
	''|*[!A-Za-z0-9_.-]*) die "VARIANTS: bad variant name '$VARIANT_NAME': use letters, digits, '.', '_' or '-'" ;;
	esac
	for part in $parts; do
		case $part in
		tree:*|git:*)
			[ -z "$source" ] && [ ${#dirs[@]} -eq 0 ] ||
				die "VARIANTS: variant '$VARIANT_NAME': '$part': one source, before the series directories"
			source=$part ;;
		*) dirs+=("$part") ;;
		esac
	done
	case ${source:-tree:$TREE} in
	tree:*)
		VARIANT_VERSION=${source#tree:}
		VARIANT_VERSION=${VARIANT_VERSION:-$TREE}
		VARIANT_SOURCE=tree:$VARIANT_VERSION
		VARIANT_SOURCE_DIR=$BUILD_DIR/linux-source-$VARIANT_VERSION ;;
	git:*) git_source "${source#git:}" ;;
	esac
	check_version
	case $VARIANT_SOURCE in
	tree:*) VARIANT_CONFIG_DIR=$FLAVOR_CONFIG_DIR/linux-source-$VARIANT_VERSION ;;
	git:*) VARIANT_CONFIG_DIR=$FLAVOR_CONFIG_DIR/git-${VARIANT_SOURCE:4:12} ;;
	esac
	local -a instr=($(instrumentation_of "$VARIANT_VERSION"))
	VARIANT_INSTRUMENTATION=${#instr[@]}
	for d in "${instr[@]}" "${dirs[@]}"; do
		[ -d "$d" ] || d=$PATCHES_DIR/$d
		[ -d "$d" ] || die "VARIANTS: variant '$VARIANT_NAME': series directory '$d' does not exist"
		[ -f "$d/series" ] || die "VARIANTS: variant '$VARIANT_NAME': $d has no 'series' file"
		d=$(cd "$d" && pwd)
		check_series_version "$d"
		VARIANT_SERIES+=("$d")
	done
}

# version_before A B: version A (VERSION.PATCHLEVEL) comes before B.
version_before() {
	[ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]
}

# check_version: refuses a VARIANT_VERSION mmlat cannot run; sets
# VARIANT_TESTED.
check_version() {
	local what="variant '$VARIANT_NAME' (${VARIANT_REF:-$VARIANT_SOURCE})"
	[[ $VARIANT_VERSION =~ ^[0-9]+\.[0-9]+$ ]] ||
		die "VARIANTS: $what: its Makefile gives no VERSION and PATCHLEVEL: not a Linux tree"
	! version_before "$VARIANT_VERSION" "$OLDEST_VERSION" ||
		die "VARIANTS: $what is Linux $VARIANT_VERSION; mmlat needs $OLDEST_VERSION or later (its guest modules, config fragments and classes.txt start at $OLDEST_VERSION)"
	case $VARIANT_SOURCE in
	tree:*)
		case " $TREE_VALUES " in
		*" $VARIANT_VERSION "*) ;;
		*) die "VARIANTS: $what: Debian's linux-source-$VARIANT_VERSION is not in ${KERNEL_SOURCES_CONF#$MMLAT_ROOT/} (TREE takes one of: $TREE_VALUES); add its suites there" ;;
		esac ;;
	esac
	case " $TESTED_VERSIONS " in
	*" $VARIANT_VERSION "*) VARIANT_TESTED=yes ;;
	*) VARIANT_TESTED=no ;;
	esac
}

# check_series_version DIR: DIR applies to VARIANT_VERSION, by its
# 'versions' file if it has one: the versions on its first line, and on a
# 'why:' line the reason it applies to those only.
check_series_version() {
	local dir=$1 versions why
	[ -f "$dir/versions" ] || return 0
	versions=$(sed -e 's/#.*//' -e '/^why:/d' "$dir/versions" | xargs)
	case " $versions " in *" $VARIANT_VERSION "*) return 0 ;; esac
	why=$(sed -n 's/^why: *//p' "$dir/versions")
	die "VARIANTS: variant '$VARIANT_NAME' is Linux $VARIANT_VERSION (${VARIANT_REF:-$VARIANT_SOURCE}), but ${dir#$PATCHES_DIR/} applies to Linux $versions only${why:+ ($why)}; on $VARIANT_VERSION compare mainline, the tree as it ships, with a series of your own: BASELINE=mainline PATCHED=mine=path/to/series-dir"
}

# series_patches DIR: the patch files of one series directory, in order.
# Blank lines and '#' comments in the series file are skipped, as quilt does.
series_patches() {
	local dir=$1 p
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$dir/series" | while read -r p; do
		[ -n "$p" ] || continue
		[ -f "$dir/$p" ] || die "series $dir/series names '$p', which does not exist"
		printf '%s\n' "$dir/$p"
	done
}

# variant_sha256: one hash over the variant's source (a packaged tree with
# the Debian package version it was unpacked from) and its series files and
# patches, in application order.
variant_sha256() {
	local d
	{
		printf 'source %s %s\n' "$VARIANT_SOURCE" "$(cat "$VARIANT_SOURCE_DIR/.mmlat-package" 2>/dev/null)"
		for d in "${VARIANT_SERIES[@]}"; do
			cat "$d/series"
			series_patches "$d" | while read -r p; do cat "$p"; done
		done
	} | sha256sum | cut -d' ' -f1
}
