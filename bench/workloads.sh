# WORKLOADS entries with parameters; sourced after lib.sh.
#
# An entry is NAME or NAME:KEY=VALUE[,KEY=VALUE...]. The whole entry names
# the cell (cells/<variant>/imap:n=256/...); the guest job is the name
# (mmlat.workload=imap) and the parameters (mmlat.params=n=256). What a
# workload accepts is in bench/workloads.conf, and nowhere else.
WORKLOADS_CONF=${WORKLOADS_CONF:-$MMLAT_ROOT/bench/workloads.conf}

# workload_keys NAME: "n=1..4096 (what), ..." for NAME; empty if it takes none.
workload_keys() {
	awk -v w="$1" '!/^#/ && $1 == w {
		what = $5; for (i = 6; i <= NF; i++) what = what " " $i
		printf "%s%s=%s..%s (%s)", sep, $2, $3, $4, what; sep = ", " }' "$WORKLOADS_CONF"
}

# check_workload ENTRY: dies, naming the entry and the keys its workload
# accepts, unless every parameter of ENTRY is a known key of its workload,
# given once, with a canonical decimal value in the key's range. A plain
# NAME passes unchecked, as before parameters existed.
check_workload() {
	local entry=$1 name params keys kv key val min max seen=,
	case $entry in *:*) ;; *) return 0 ;; esac
	name=${entry%%:*} params=${entry#*:}
	keys=$(workload_keys "$name")
	if [ -z "$keys" ]; then
		die "WORKLOADS entry '$entry': workload '$name' takes no parameters (with parameters: $(awk '!/^#/ && NF {print $1}' "$WORKLOADS_CONF" | sort -u | tr '\n' ' ' | sed 's/ $//'))"
	fi
	[[ -n $params && ! $params =~ (^|,)(,|$) ]] ||
		die "WORKLOADS entry '$entry': an empty parameter; write $name:KEY=VALUE[,KEY=VALUE...] with $keys"
	IFS=, read -ra kvs <<< "$params"
	for kv in "${kvs[@]}"; do
		[[ $kv == *=* ]] ||
			die "WORKLOADS entry '$entry': '$kv' is not KEY=VALUE; $name takes $keys"
		key=${kv%%=*} val=${kv#*=}
		read -r min max < <(awk -v w="$name" -v k="$key" \
			'!/^#/ && $1 == w && $2 == k {print $3, $4}' "$WORKLOADS_CONF") || true
		[ -n "${min:-}" ] ||
			die "WORKLOADS entry '$entry': no parameter '$key' for $name; it takes $keys"
		case $seen in *",$key,"*) die "WORKLOADS entry '$entry': '$key' given twice; $name takes $keys" ;; esac
		seen=$seen$key,
		[[ $val =~ ^(0|[1-9][0-9]*)$ ]] && [ ${#val} -le 9 ] && [ "$val" -ge "$min" ] && [ "$val" -le "$max" ] ||
			die "WORKLOADS entry '$entry': $key=$val is not an integer in $min..$max; $name takes $keys"
		min= max=
	done
}

# workload_job ENTRY: the guest job keys of ENTRY, checked first.
workload_job() {
	check_workload "$1"
	case $1 in
	*:*) printf 'mmlat.workload=%s mmlat.params=%s' "${1%%:*}" "${1#*:}" ;;
	*) printf 'mmlat.workload=%s' "$1" ;;
	esac
}
