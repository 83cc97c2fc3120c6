#!/bin/bash
# The config of mmlat's kernel for real x86-64 machines: x86_64_defconfig,
# then bench/config/mmlat.config and lava/x86-hw.config merged with the
# tree's merge_config.sh, then olddefconfig; every option of both
# fragments is checked afterwards (bench/kconfig.sh check), and one that
# Kconfig dropped fails with its name.
#
# usage: lava/x86-hw.sh config OUT_DIR [SPEC]   (the source of variant SPEC;
#                                  default: the packaged tree TREE)
# Writes OUT_DIR/config, OUT_DIR/fragments.config and OUT_DIR/config.sha256,
# the files bench/build.sh reads from a config folder.
set -euo pipefail
. "$(dirname "$0")/../bench/lib.sh"
. "$MMLAT_ROOT/bench/knobs.sh"
. "$MMLAT_ROOT/bench/variants.sh"

HW_FRAGMENTS=("$MMLAT_ROOT/bench/config/mmlat.config" "$MMLAT_ROOT/lava/x86-hw.config")

make_config() {
	local out=$1 spec=${2:-source=tree:$TREE} src staging bad
	out=$(realpath -m "$out")
	resolve_variant "$spec"
	src=$(bash "$MMLAT_ROOT/bench/tree.sh" source "$spec")
	staging=$out.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	log "generating the x86-64 hardware .config for Linux $VARIANT_VERSION (${src#"$MMLAT_ROOT"/}): x86_64_defconfig + ${HW_FRAGMENTS[*]#"$MMLAT_ROOT"/}"
	make -s -C "$src" O="$staging" ARCH=x86_64 x86_64_defconfig > /dev/null
	(cd "$src" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m -O "$staging" \
		"$staging/.config" "${HW_FRAGMENTS[@]}") > "$staging/merge.log" 2>&1 ||
		{ cat "$staging/merge.log" >&2; die "merge_config.sh failed"; }
	make -s -C "$src" O="$staging" ARCH=x86_64 olddefconfig > "$staging/olddefconfig.log" 2>&1 ||
		{ cat "$staging/olddefconfig.log" >&2; die "olddefconfig failed"; }
	bad=$(bash "$MMLAT_ROOT/bench/kconfig.sh" check "$staging/.config" "${HW_FRAGMENTS[@]}")
	if [ -n "$bad" ]; then
		printf '    %s\n' "$bad" >&2
		die "Linux $VARIANT_VERSION: Kconfig dropped or changed $(printf '%s\n' "$bad" | wc -l) option(s) of the fragments on x86_64_defconfig (listed above); nothing was written"
	fi
	rm -rf "$out"
	mkdir -p "$out"
	cp "$staging/.config" "$out/config"
	cat "${HW_FRAGMENTS[@]}" > "$out/fragments.config"
	sha256sum < "$out/config" | cut -d' ' -f1 > "$out/config.sha256"
	rm -rf "$staging"
	log "x86-64 hardware config ready: ${out#"$MMLAT_ROOT"/}/config sha256 $(cut -c1-12 "$out/config.sha256")"
}

case ${1:-} in
config) shift; [ $# -ge 1 ] && [ $# -le 2 ] || die "usage: $0 config OUT_DIR [SPEC]"; make_config "$@" ;;
*) die "usage: $0 config OUT_DIR [SPEC]" ;;
esac
