#!/bin/bash
# Kernel source trees: a variant's source, unpacked (Debian's
# linux-source-VERSION, fetched by bench/kernel-source.sh; the tree's
# .mmlat-package names the package version) or exported (a commit of a git
# tree, read only: nothing is checked out or written there) once, and one
# tree per variant with its patches applied. Variant trees are hard-link
# copies of the source; `git apply` replaces each file it patches with a
# new inode, so a source is never written to.
#
# usage: bench/tree.sh source-tree VERSION OUT_DIR
#        bench/tree.sh source-git KSRC COMMIT OUT_DIR
#        bench/tree.sh variant NAME SOURCE_DIR OUT_DIR SHA256 PATCH...
#   variant: OUT_DIR is made anew unless its .mmlat-series-sha256 is
#   SHA256 (bench/orchestrator/variants.py's hash of the source and the
#   series), then prints OUT_DIR.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# unpack VERSION OUT: Debian's linux-source-VERSION into OUT, in place only
# when whole (with the record of its package).
unpack() {
	local version=$1 out=$2 staging tarball top=linux-source-$1
	[ ! -f "$out/.mmlat-package" ] || return 0
	staging=$out.tmp.$$
	rm -rf "$staging"
	mkdir -p "$staging" "$(dirname "$out")"
	tarball=$(bash "$MMLAT_ROOT/bench/kernel-source.sh" tarball "$version")
	log "unpacking ${tarball#"$MMLAT_ROOT"/} into ${out#"$MMLAT_ROOT"/}"
	tar -C "$staging" -xf "$tarball"
	[ -f "$staging/$top/Makefile" ] || die "$tarball does not hold $top/"
	"$PYTHON" "$MMLAT_ROOT/bench/record.py" get "$(dirname "$tarball")/package.json" version \
		> "$staging/$top/.mmlat-package"
	commit_dir "$staging/$top" "$out"
	rm -rf "$staging"
}

# export_commit KSRC COMMIT OUT: the commit's files into OUT.
export_commit() {
	local ksrc=$1 commit=$2 out=$3 staging
	[ ! -f "$out/Makefile" ] || return 0
	staging=$out.tmp.$$
	rm -rf "$staging"
	mkdir -p "$staging"
	log "exporting $commit of $ksrc into ${out#"$MMLAT_ROOT"/}"
	git -C "$ksrc" archive --format=tar "$commit" | tar -C "$staging" -x ||
		die "git archive of $commit from $ksrc failed"
	commit_dir "$staging" "$out"
}

# apply TREE NAME PATCH...: apply every patch, stopping at the first one
# that does not apply with the patch, file and hunk named. The trees live
# inside the project's git work tree, and git apply run there takes patch
# paths as relative to the project and silently skips them all ("outside
# the directory"); the ceiling keeps git from finding the project
# repository, so it patches the tree like patch(1) would.
apply() {
	local tree=$1 name=$2 patch err
	shift 2
	for patch; do
		if ! err=$(cd "$tree" && GIT_CEILING_DIRECTORIES=$(dirname "$tree") \
			git apply --verbose --whitespace=nowarn -p1 "$patch" 2>&1) ||
		   printf '%s\n' "$err" | grep -q '^Skipped patch'; then
			printf '%s\n' "$err" | sed 's/^/    /' >&2
			die "variant '$name': patch ${patch#"$MMLAT_ROOT"/} does not apply (git apply: $(printf '%s' "$err" | grep -m1 -E 'patch failed|does not apply|error' || echo "$err"))"
		fi
	done
}

# variant NAME SOURCE OUT SHA PATCH...
variant() {
	local name=$1 source=$2 out=$3 sha=$4 staging
	shift 4
	if [ -f "$out/.mmlat-series-sha256" ] && [ "$(cat "$out/.mmlat-series-sha256")" = "$sha" ]; then
		printf '%s\n' "$out"
		return 0
	fi
	log "preparing tree for variant '$name' ($# patches on ${source#"$MMLAT_ROOT"/})"
	staging=$(dirname "$out")/.$name.tmp
	mkdir -p "$(dirname "$out")"
	rm -rf "$staging"
	cp -al "$source" "$staging"
	apply "$staging" "$name" "$@"
	printf '%s\n' "$sha" > "$staging/.mmlat-series-sha256"
	# A changed series rebuilds from scratch (an old object dir could hold
	# objects of files this series no longer patches); ccache makes that
	# cheap.
	commit_dir "$staging" "$out"
	printf '%s\n' "$out"
}

case ${1:-} in
source-tree) [ $# -eq 3 ] || die "usage: $0 source-tree VERSION OUT_DIR"; unpack "$2" "$3" ;;
source-git) [ $# -eq 4 ] || die "usage: $0 source-git KSRC COMMIT OUT_DIR"; export_commit "$2" "$3" "$4" ;;
variant) [ $# -ge 5 ] || die "usage: $0 variant NAME SOURCE_DIR OUT_DIR SHA256 PATCH..."; shift; variant "$@" ;;
*) die "usage: $0 source-tree VERSION OUT_DIR | source-git KSRC COMMIT OUT_DIR | variant NAME SOURCE_DIR OUT_DIR SHA256 PATCH..." ;;
esac
