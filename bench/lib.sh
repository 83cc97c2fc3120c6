# shellcheck shell=bash
# Shared shell helpers of the leaf commands under bench/ and guest/;
# sourced, never run. The knobs a leaf reads come from its environment
# (the orchestrator's, or the Makefile's: bench/plan/knobs.py).

MMLAT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { printf '[mmlat %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'mmlat: error: %s\n' "$*" >&2; exit 1; }

# record ARG...: bench/record.py, the leaves' serializer of small JSON
# records (a boot's boot.json, a fetched package's package.json).
record() { "$PYTHON" "$MMLAT_ROOT/bench/record.py" "$@"; }

# Move a finished staging path into place so readers never see half a result.
commit_dir() {
	local staging=$1 final=$2
	rm -rf "$final.old"
	[ ! -e "$final" ] || mv "$final" "$final.old"
	mv "$staging" "$final"
	rm -rf "$final.old"
}

# first_splat FILE: the first line of FILE that reports a kernel bug,
# warning or locking/atomicity violation; fails if there is none.
first_splat() {
	grep -m1 -E 'Kernel panic|BUG:|Oops|general protection fault|WARNING:|DEBUG_LOCKS_WARN_ON|possible (recursive|circular) locking|possible irq lock inversion|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|scheduling while atomic' "$1" |
		sed 's/^\[[^]]*\] //' | grep .
}

# Seconds since the epoch, for elapsed-time reporting.
now() { date +%s; }
