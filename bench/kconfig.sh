#!/bin/bash
# Make the one .config every variant of a kernel source is built with:
# tinyconfig (FLAVOR=hw: x86_64_defconfig), plus the fragment(s) merged
# with the tree's merge_config.sh, then olddefconfig. Kconfig silently
# drops options whose dependencies are not met, so every option of the
# fragments is checked afterwards, and each one that did not survive is
# named, with whether the tree's Kconfig knows it at all.
#
# usage: bench/kconfig.sh make OUT_DIR SOURCE_DIR BASE FRAGMENT...
#          BASE: the make target the fragments are merged onto (tinyconfig,
#          x86_64_defconfig: the orchestrator's flavour, paths.FLAVORS)
#        bench/kconfig.sh check CONFIG FRAGMENT...
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# check_config CONFIG FRAGMENT...: print every fragment option whose value
# did not survive, as "CONFIG_X: wanted y, got <value or unset>".
check_config() {
	local config=$1 frag
	shift
	for frag in "$@"; do
		[ -f "$frag" ] || die "config fragment $frag not found"
		awk -v frag="$frag" '
		function want_of(line,   m) {
			if (match(line, /^CONFIG_[A-Za-z0-9_]+=/))
				return substr(line, RLENGTH + 1)
			return "unset"
		}
		function name_of(line) {
			if (line ~ /^# CONFIG_[A-Za-z0-9_]+ is not set/) {
				sub(/^# /, "", line); sub(/ is not set.*/, "", line)
				return line
			}
			if (line ~ /^CONFIG_[A-Za-z0-9_]+=/) {
				sub(/=.*/, "", line)
				return line
			}
			return ""
		}
		FILENAME == ARGV[1] {
			n = name_of($0)
			if (n != "") have[n] = want_of($0)
			next
		}
		{
			n = name_of($0)
			if (n == "") {
				if ($0 !~ /^[[:space:]]*(#.*)?$/)
					printf "%s:%d: not a config line: %s\n", FILENAME, FNR, $0
				next
			}
			got = (n in have) ? have[n] : "unset"
			if (got != want_of($0))
				printf "%s: wanted %s, got %s (%s)\n", n, want_of($0), got, frag
		}' "$config" "$frag"
	done
}

# unknown_options TREE NAME...: those of the NAMEs (CONFIG_X) that no
# Kconfig file of TREE declares.
unknown_options() {
	local tree=$1 n
	shift
	for n; do
		grep -rqsE --include='Kconfig*' "^[[:space:]]*(menu)?config[[:space:]]+${n#CONFIG_}[[:space:]]*$" \
			"$tree" || printf '%s\n' "$n"
	done
}

# make_config OUT_DIR SOURCE_DIR BASE FRAGMENT...: OUT_DIR/config, its
# config.sha256 and fragments.config (the fragments it was made from).
make_config() {
	local out staging src base f bad unknown
	out=$(realpath -m "$1")
	src=$2
	base=$3
	shift 3
	for f; do [ -f "$f" ] || die "config fragment $f not found"; done
	staging=$out.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	log "generating .config for ${src#"$MMLAT_ROOT"/}: $base + $(printf '%s ' "${@#"$MMLAT_ROOT"/}")"
	make -s -C "$src" O="$staging" ARCH=x86_64 "$base" >/dev/null
	(cd "$src" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m -O "$staging" \
		"$staging/.config" "$@") > "$staging/merge.log" 2>&1 ||
		{ cat "$staging/merge.log" >&2; die "merge_config.sh failed"; }
	make -s -C "$src" O="$staging" ARCH=x86_64 olddefconfig > "$staging/olddefconfig.log" 2>&1 ||
		{ cat "$staging/olddefconfig.log" >&2; die "olddefconfig failed"; }
	bad=$(check_config "$staging/.config" "$@")
	if [ -n "$bad" ]; then
		# shellcheck disable=SC2046
		unknown=$(unknown_options "$src" $(printf '%s\n' "$bad" | grep -o '^CONFIG_[A-Za-z0-9_]*'))
		printf '%s\n' "$bad" | while read -r line; do
			case " ${unknown//$'\n'/ } " in
			*" ${line%%:*} "*) printf '    %s: unknown to this tree'"'"'s Kconfig\n' "$line" ;;
			*) printf '    %s: Kconfig knows it, but it did not take effect (a dependency or choice)\n' "$line" ;;
			esac
		done >&2
		die "${src#"$MMLAT_ROOT"/}: Kconfig dropped or changed $(printf '%s\n' "$bad" | wc -l) option(s) of the fragments (listed above); fix the fragment, nothing was built"
	fi
	mkdir -p "$(dirname "$out")"
	rm -rf "$out"
	mkdir -p "$out"
	cp "$staging/.config" "$out/config"
	cat "$@" > "$out/fragments.config"
	sha256sum < "$out/config" | cut -d' ' -f1 > "$out/config.sha256"
	rm -rf "$staging"
	log "config ready: ${out#"$MMLAT_ROOT"/}/config sha256 $(cut -c1-12 "$out/config.sha256")"
}

case ${1:-} in
make) shift; [ $# -ge 4 ] || die "usage: $0 make OUT_DIR SOURCE_DIR BASE FRAGMENT..."; make_config "$@" ;;
check) shift; [ $# -ge 2 ] || die "usage: $0 check CONFIG FRAGMENT..."; check_config "$@" ;;
*) die "usage: $0 make OUT_DIR SOURCE_DIR BASE FRAGMENT... | check CONFIG FRAGMENT..." ;;
esac
