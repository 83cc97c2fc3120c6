# Variant resolution; sourced after lib.sh.
#
# A variant spec is either a name declared in variants.conf or an ad-hoc
# "name=dir[+dir...]" where each dir is a series directory (relative to
# patches/, or a path).
#
# Every variant, declared or ad hoc, carries the instrumentation series
# first, so that the variants of a run differ only by their own series:
# patches/preemptirq-trace changes nothing until the preemptirq
# tracepoints are on, and then keeps their cost out of the windows.
INSTRUMENTATION_SERIES=${INSTRUMENTATION_SERIES-preemptirq-trace}

# resolve_variant SPEC: sets VARIANT_NAME and VARIANT_SERIES (absolute dirs).
resolve_variant() {
	local spec=$1 dirs line d
	VARIANT_SERIES=()
	case $spec in
	*=*)
		VARIANT_NAME=${spec%%=*}
		dirs=$(printf '%s' "${spec#*=}" | tr '+' ' ')
		;;
	*)
		VARIANT_NAME=$spec
		line=$(grep -E "^${spec}:" "$VARIANTS_CONF" || true)
		[ -n "$line" ] || die "VARIANTS: unknown variant '$spec': not in ${VARIANTS_CONF#$MMLAT_ROOT/}, which declares: $(sed -n 's/^\([A-Za-z0-9_.-]*\):.*/\1/p' "$VARIANTS_CONF" | tr '\n' ' ')(or use name=series-dir)"
		dirs=${line#*:}
		;;
	esac
	case $VARIANT_NAME in
	''|*[!A-Za-z0-9_.-]*) die "VARIANTS: bad variant name '$VARIANT_NAME': use letters, digits, '.', '_' or '-'" ;;
	esac
	for d in $INSTRUMENTATION_SERIES $dirs; do
		[ -d "$d" ] || d=$PATCHES_DIR/$d
		[ -d "$d" ] || die "VARIANTS: variant '$VARIANT_NAME': series directory '$d' does not exist"
		[ -f "$d/series" ] || die "VARIANTS: variant '$VARIANT_NAME': $d has no 'series' file"
		VARIANT_SERIES+=("$(cd "$d" && pwd)")
	done
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

# variant_sha256: one hash over the variant's series files and patches, in
# application order; the empty variant hashes the empty string.
variant_sha256() {
	local d
	for d in "${VARIANT_SERIES[@]}"; do
		cat "$d/series"
		series_patches "$d" | while read -r p; do cat "$p"; done
	done | sha256sum | cut -d' ' -f1
}
