#!/bin/bash
# Prepare kernel source trees: each variant's source, unpacked (Debian's
# linux-source-VERSION, fetched by bench/kernel-source.sh; the tree's
# .mmlat-package names the package version) or exported (a commit of the
# git tree KSRC) once,
# and one tree per variant with its series applied. Variant trees are
# hard-link copies of the source; `git apply` replaces each file it patches
# with a new inode, so a source is never written to. KSRC is only read
# (rev-parse, show, archive): nothing is checked out or written there.
#
# usage: bench/tree.sh source SPEC      (prints the variant's source path)
#        bench/tree.sh variant SPEC     (prints the variant tree path)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/variants.sh"

# prepare_source: VARIANT_SOURCE_DIR, made once, in place only when whole
# (a packaged tree with the record of its package).
prepare_source() {
	case $VARIANT_SOURCE in
	tree:*) [ -f "$VARIANT_SOURCE_DIR/.mmlat-package" ] && return 0 ;;
	git:*) [ -f "$VARIANT_SOURCE_DIR/Makefile" ] && return 0 ;;
	esac
	local staging=$BUILD_DIR/.source.tmp tarball top
	rm -rf "$staging"
	mkdir -p "$staging" "$(dirname "$VARIANT_SOURCE_DIR")"
	case $VARIANT_SOURCE in
	tree:*)
		top=linux-source-$VARIANT_VERSION
		tarball=$(bash "$MMLAT_ROOT/bench/kernel-source.sh" tarball "$VARIANT_VERSION")
		log "unpacking ${tarball#$MMLAT_ROOT/} into ${VARIANT_SOURCE_DIR#$MMLAT_ROOT/}"
		tar -C "$staging" -xf "$tarball"
		[ -f "$staging/$top/Makefile" ] || die "$tarball does not hold $top/"
		record get "$(dirname "$tarball")/package.json" version > "$staging/$top/.mmlat-package"
		commit_dir "$staging/$top" "$VARIANT_SOURCE_DIR"
		;;
	git:*)
		log "exporting $VARIANT_REF (${VARIANT_SOURCE#git:}) of $KSRC into ${VARIANT_SOURCE_DIR#$MMLAT_ROOT/}"
		mkdir -p "$staging/tree"
		git -C "$KSRC" archive --format=tar "${VARIANT_SOURCE#git:}" | tar -C "$staging/tree" -x ||
			die "git archive of $VARIANT_SOURCE from $KSRC failed"
		mv "$staging/tree" "$VARIANT_SOURCE_DIR"
		;;
	esac
	rm -rf "$staging"
}

# apply_series TREE: apply every patch of VARIANT_SERIES, stopping at the
# first one that does not apply with the patch, file and hunk named.
# The trees live inside the project's git work tree, and git apply run
# there takes patch paths as relative to the project and silently skips
# them all ("outside the directory"); the ceiling keeps git from finding
# the project repository, so it patches the tree like patch(1) would.
apply_series() {
	local tree=$1 dir patch err
	for dir in "${VARIANT_SERIES[@]}"; do
		while read -r patch; do
			if ! err=$(cd "$tree" && GIT_CEILING_DIRECTORIES=$(dirname "$tree") \
				git apply --verbose --whitespace=nowarn -p1 "$patch" 2>&1) ||
			   printf '%s\n' "$err" | grep -q '^Skipped patch'; then
				printf '%s\n' "$err" | sed 's/^/    /' >&2
				die "variant '$VARIANT_NAME': patch ${patch#$MMLAT_ROOT/} does not apply (git apply: $(printf '%s' "$err" | grep -m1 -E 'patch failed|does not apply|error' || echo "$err"))"
			fi
		done < <(series_patches "$dir")
	done
}

prepare_variant() {
	resolve_variant "$1"
	prepare_source
	local tree=$TREES_DIR/$VARIANT_NAME sha
	sha=$(variant_sha256)
	if [ -f "$tree/.mmlat-series-sha256" ] &&
	   [ "$(cat "$tree/.mmlat-series-sha256")" = "$sha" ]; then
		printf '%s\n' "$tree"
		return 0
	fi
	log "preparing tree for variant '$VARIANT_NAME' (${VARIANT_REF:-$VARIANT_SOURCE} + ${#VARIANT_SERIES[@]} series)"
	local staging=$TREES_DIR/.$VARIANT_NAME.tmp
	mkdir -p "$TREES_DIR"
	rm -rf "$staging"
	cp -al "$VARIANT_SOURCE_DIR" "$staging"
	apply_series "$staging"
	printf '%s\n' "$sha" > "$staging/.mmlat-series-sha256"
	# A changed series rebuilds from scratch (an old object dir could hold
	# objects of files this series no longer patches); ccache makes that
	# cheap.
	commit_dir "$staging" "$tree"
	printf '%s\n' "$tree"
}

case ${1:-} in
source) [ $# -eq 2 ] || die "usage: $0 source SPEC"
	resolve_variant "$2"; prepare_source; printf '%s\n' "$VARIANT_SOURCE_DIR" ;;
variant) [ $# -eq 2 ] || die "usage: $0 variant SPEC"; prepare_variant "$2" ;;
*) die "usage: $0 source SPEC | variant SPEC" ;;
esac
