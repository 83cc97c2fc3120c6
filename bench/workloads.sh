# WORKLOADS entries with parameters, and the sweeps (SWEEP) that expand
# into them; sourced after lib.sh.
#
# An entry is NAME or NAME:KEY=VALUE[,KEY=VALUE...]. The whole entry names
# the cell (cells/<variant>/imap:n=256/...); the guest job is the name
# (mmlat.workload=imap) and the parameters (mmlat.params=n=256). What a
# workload accepts is in bench/workloads.conf, and nowhere else.
WORKLOADS_CONF=${WORKLOADS_CONF:-$MMLAT_ROOT/bench/workloads.conf}
# the workload names (bench/knobs.conf)
[ -n "${WORKLOAD_NAMES:-}" ] || . "$MMLAT_ROOT/bench/knobs.sh"

# workload_keys NAME: "n=1..4096 (what), ..." for NAME; empty if it takes none.
workload_keys() {
	awk -v w="$1" '!/^#/ && $1 == w {
		what = $5; for (i = 6; i <= NF; i++) what = what " " $i
		printf "%s%s=%s..%s (%s)", sep, $2, $3, $4, what; sep = ", " }' "$WORKLOADS_CONF"
}

# check_workload ENTRY [WHAT]: dies, naming the entry (or WHAT, the knob
# it came from) and the keys its workload accepts, unless every parameter
# of ENTRY is a known key of its workload, given once, with a canonical
# decimal value in the key's range, and its name one of WORKLOAD_NAMES
# (bench/knobs.conf).
check_workload() {
	local entry=$1 what=${2:-} name params keys kv key val min max seen=,
	[ -n "$what" ] || what="WORKLOADS entry '$entry'"
	check_workload_name "$what" "${entry%%:*}"
	case $entry in *:*) ;; *) return 0 ;; esac
	name=${entry%%:*} params=${entry#*:}
	keys=$(workload_keys "$name")
	if [ -z "$keys" ]; then
		die "$what: workload '$name' takes no parameters (with parameters: $(awk '!/^#/ && NF {print $1}' "$WORKLOADS_CONF" | sort -u | tr '\n' ' ' | sed 's/ $//'))"
	fi
	[[ -n $params && ! $params =~ (^|,)(,|$) ]] ||
		die "$what: an empty parameter; write $name:KEY=VALUE[,KEY=VALUE...] with $keys"
	IFS=, read -ra kvs <<< "$params"
	for kv in "${kvs[@]}"; do
		[[ $kv == *=* ]] ||
			die "$what: '$kv' is not KEY=VALUE; $name takes $keys"
		key=${kv%%=*} val=${kv#*=}
		read -r min max < <(awk -v w="$name" -v k="$key" \
			'!/^#/ && $1 == w && $2 == k {print $3, $4}' "$WORKLOADS_CONF") || true
		[ -n "${min:-}" ] ||
			die "$what: no parameter '$key' for $name; it takes $keys"
		case $seen in *",$key,"*) die "$what: '$key' given twice; $name takes $keys" ;; esac
		seen=$seen$key,
		[[ $val =~ ^(0|[1-9][0-9]*)$ ]] && [ ${#val} -le 9 ] && [ "$val" -ge "$min" ] && [ "$val" -le "$max" ] ||
			die "$what: $key=$val is not an integer in $min..$max; $name takes $keys"
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

# A sweep runs one workload over a list of values of one parameter:
# NAME:KEY=VALUE,... where a token without '=' is one more value of the key
# before it, and exactly one key has several values (imap:s=1,n=16,64,256:
# imap:s=1,n=16 imap:s=1,n=64 imap:s=1,n=256). SWEEP holds any number of
# them, space-separated.
#
# expand_sweeps SWEEP: checks every sweep of SWEEP, each of its entries as
# check_workload does, and sets in the calling shell, per sweep i:
#   SWEEP_SPECS[i]      the sweep as written
#   SWEEP_NAMES[i]      its workload
#   SWEEP_KEYS[i]       the swept key
#   SWEEP_VALUES[i]     its values, space-separated, in the order given
#   SWEEP_FIXED[i]      the other parameters, KEY=VALUE comma-separated
#   SWEEP_WORKLOADS[i]  its WORKLOADS entries, space-separated, one a value
# and SWEEP_ENTRIES, every sweep's entries in order. Dies naming the sweep
# and what is wrong with it. Runs in the caller's shell (no command
# substitution) so that die stops the caller.
expand_sweeps() {
	local spec name params tok i swept value entry seen
	local -a specs toks keys vals
	SWEEP_SPECS=() SWEEP_NAMES=() SWEEP_KEYS=() SWEEP_VALUES=() SWEEP_FIXED=()
	SWEEP_WORKLOADS=() SWEEP_ENTRIES=()
	read -ra specs <<< "$1"
	for spec in "${specs[@]}"; do
		case $spec in
		?*:?*) ;;
		*) die "SWEEP '$spec': no parameters; write NAME:KEY=V1,V2,...[,KEY=VALUE...], as in imap:s=1,n=16,64,256" ;;
		esac
		name=${spec%%:*} params=${spec#*:}
		[[ ! $params =~ (^|,)(,|$) ]] ||
			die "SWEEP '$spec': an empty value; write $name:KEY=V1,V2,...[,KEY=VALUE...]"
		# keys[j] and vals[j], its values space-separated
		keys=() vals=()
		IFS=, read -ra toks <<< "$params"
		for tok in "${toks[@]}"; do
			if [[ $tok == *=* ]]; then
				keys+=("${tok%%=*}") vals+=("${tok#*=}")
			else
				[ ${#keys[@]} -gt 0 ] ||
					die "SWEEP '$spec': '$tok' comes before any KEY=; write $name:KEY=V1,V2,..."
				vals[-1]+=" $tok"
			fi
		done
		swept=
		for i in "${!keys[@]}"; do
			case ${vals[i]} in
			*" "*)
				[ -z "$swept" ] ||
					die "SWEEP '$spec': '${keys[swept]}' and '${keys[i]}' both have several values; a sweep varies one key"
				swept=$i ;;
			esac
		done
		[ -n "$swept" ] ||
			die "SWEEP '$spec': no key has several values; a sweep varies one key (imap:n=16,64,256), a single entry goes in WORKLOADS"
		SWEEP_SPECS+=("$spec") SWEEP_NAMES+=("$name") SWEEP_KEYS+=("${keys[swept]}")
		SWEEP_VALUES+=("${vals[swept]}")
		entry=
		for i in "${!keys[@]}"; do
			[ "$i" = "$swept" ] || entry+=${entry:+,}${keys[i]}=${vals[i]}
		done
		SWEEP_FIXED+=("$entry")
		seen=" " SWEEP_WORKLOADS+=("")
		for value in ${vals[swept]}; do
			case $seen in *" $value "*) die "SWEEP '$spec': ${keys[swept]}=$value given twice" ;; esac
			seen+="$value "
			# the parameters in the order written, the swept one at its place
			entry=
			for i in "${!keys[@]}"; do
				if [ "$i" = "$swept" ]; then
					entry+=${entry:+,}${keys[i]}=$value
				else
					entry+=${entry:+,}${keys[i]}=${vals[i]}
				fi
			done
			entry=$name:$entry
			check_workload "$entry" "SWEEP '$spec' (entry '$entry')"
			SWEEP_WORKLOADS[-1]+=${SWEEP_WORKLOADS[-1]:+ }$entry
			SWEEP_ENTRIES+=("$entry")
		done
	done
}
