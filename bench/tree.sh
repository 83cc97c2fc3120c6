#!/bin/bash
# Prepare kernel source trees: the pristine 6.1 tree, unpacked once, and one
# tree per variant with its series applied. Variant trees are hard-link
# copies of the pristine tree; `git apply` replaces each file it patches
# with a new inode, so the pristine tree is never written to.
#
# usage: bench/tree.sh pristine
#        bench/tree.sh variant SPEC     (prints the variant tree path)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/variants.sh"

unpack_pristine() {
	[ -f "$PRISTINE_TREE/Makefile" ] && return 0
	[ -f "$LINUX_TARBALL" ] || die "$LINUX_TARBALL not found: install linux-source-6.1 (make deps)"
	log "unpacking $LINUX_TARBALL into ${PRISTINE_TREE#$MMLAT_ROOT/}"
	mkdir -p "$BUILD_DIR"
	local staging=$BUILD_DIR/.unpack.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	tar -C "$staging" -xf "$LINUX_TARBALL"
	[ -f "$staging/linux-source-6.1/Makefile" ] || die "$LINUX_TARBALL does not hold linux-source-6.1/"
	mv "$staging/linux-source-6.1" "$PRISTINE_TREE"
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
	unpack_pristine
	local tree=$TREES_DIR/$VARIANT_NAME sha
	sha=$(variant_sha256)
	if [ -f "$tree/.mmlat-series-sha256" ] &&
	   [ "$(cat "$tree/.mmlat-series-sha256")" = "$sha" ]; then
		printf '%s\n' "$tree"
		return 0
	fi
	log "preparing tree for variant '$VARIANT_NAME' (${#VARIANT_SERIES[@]} series)"
	local staging=$TREES_DIR/.$VARIANT_NAME.tmp
	mkdir -p "$TREES_DIR"
	rm -rf "$staging"
	cp -al "$PRISTINE_TREE" "$staging"
	apply_series "$staging"
	printf '%s\n' "$sha" > "$staging/.mmlat-series-sha256"
	# A changed series rebuilds from scratch (an old object dir could hold
	# objects of files this series no longer patches); ccache makes that
	# cheap.
	commit_dir "$staging" "$tree"
	printf '%s\n' "$tree"
}

case ${1:-} in
pristine) unpack_pristine ;;
variant) [ $# -eq 2 ] || die "usage: $0 variant SPEC"; prepare_variant "$2" ;;
*) die "usage: $0 pristine | variant SPEC" ;;
esac
