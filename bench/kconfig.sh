#!/bin/bash
# Make the one .config every variant is built with: tinyconfig, plus the
# fragment(s) merged with the tree's merge_config.sh, then olddefconfig.
# Kconfig silently drops options whose dependencies are not met, so every
# option of the fragments is checked afterwards.
#
# usage: bench/kconfig.sh make OUT_DIR [FRAGMENT...]   (default: the fragments of $FLAVOR)
#        bench/kconfig.sh check CONFIG FRAGMENT...
set -euo pipefail
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

make_config() {
	local out staging
	out=$(realpath -m "$1")
	shift
	local frags=() f
	[ $# -gt 0 ] || set -- "${FLAVOR_FRAGMENTS[@]}"
	for f in "$@"; do
		[ -f "$f" ] || die "config fragment $f not found"
		frags+=("$(realpath "$f")")
	done
	bash "$MMLAT_ROOT/bench/tree.sh" pristine
	staging=$out.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	log "generating .config: tinyconfig + ${frags[*]#$MMLAT_ROOT/}"
	make -s -C "$PRISTINE_TREE" O="$staging" ARCH=x86_64 tinyconfig >/dev/null
	(cd "$PRISTINE_TREE" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m -O "$staging" \
		"$staging/.config" "${frags[@]}") > "$staging/merge.log" 2>&1 ||
		{ cat "$staging/merge.log" >&2; die "merge_config.sh failed"; }
	make -s -C "$PRISTINE_TREE" O="$staging" ARCH=x86_64 olddefconfig > "$staging/olddefconfig.log" 2>&1 ||
		{ cat "$staging/olddefconfig.log" >&2; die "olddefconfig failed"; }
	local bad
	bad=$(check_config "$staging/.config" "${frags[@]}")
	if [ -n "$bad" ]; then
		printf '%s\n' "$bad" | sed 's/^/    /' >&2
		die "Kconfig dropped or changed $(printf '%s\n' "$bad" | wc -l) option(s) of the fragment (listed above); fix the fragment, nothing was built"
	fi
	mkdir -p "$(dirname "$out")"
	rm -rf "$out"
	mkdir -p "$out"
	cp "$staging/.config" "$out/config"
	sha256sum < "$out/config" | cut -d' ' -f1 > "$out/config.sha256"
	rm -rf "$staging"
	log "config ready: ${out#$MMLAT_ROOT/}/config sha256 $(cut -c1-12 "$out/config.sha256")"
}

case ${1:-} in
make) shift; [ $# -ge 1 ] || die "usage: $0 make OUT_DIR [FRAGMENT...]"; make_config "$@" ;;
check) shift; [ $# -ge 2 ] || die "usage: $0 check CONFIG FRAGMENT..."; check_config "$@" ;;
*) die "usage: $0 make OUT_DIR [FRAGMENT...] | check CONFIG FRAGMENT..." ;;
esac
