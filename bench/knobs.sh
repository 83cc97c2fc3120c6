# The knobs' defaults and allowed values, from bench/knobs.conf (their one
# home), and the checks bench/run-matrix.sh runs on every knob before it
# builds anything; sourced after lib.sh.
KNOBS_CONF=${KNOBS_CONF:-$MMLAT_ROOT/bench/knobs.conf}
while IFS= read -r knob_line || [ -n "$knob_line" ]; do
	case $knob_line in ''|'#'*) continue ;; esac
	printf -v "${knob_line%%=*}" '%s' "${knob_line#*=}"
done < "$KNOBS_CONF"
unset knob_line
# TREE's allowed values: the versions bench/kernel-sources.conf lists.
KERNEL_SOURCES_CONF=${KERNEL_SOURCES_CONF:-$MMLAT_ROOT/bench/kernel-sources.conf}
TREE_VALUES=$(sed -n 's/^\([0-9][0-9]*\.[0-9][0-9]*\):.*/\1/p' "$KERNEL_SOURCES_CONF" | paste -sd' ')

# record ARG...: bench/record.py, the serializer of the run's JSON records.
record() { "$PYTHON" "$MMLAT_ROOT/bench/record.py" "$@"; }

# knob_die KNOB VALUE ALLOWED: the error every bad knob gets, naming the
# knob, its value and what it allows.
knob_die() { die "$1='$2' is not allowed: $1 takes $3"; }

# check_one_of KNOB VALUE LIST
check_one_of() {
	case " $3 " in *" $2 "*) return 0 ;; esac
	knob_die "$1" "$2" "one of: $3"
}

# int_in VALUE "MIN MAX": VALUE is a canonical decimal integer in range.
int_in() {
	[[ $1 =~ ^(0|[1-9][0-9]{0,8})$ ]] && [ "$1" -ge "${2% *}" ] && [ "$1" -le "${2#* }" ]
}

# check_int KNOB VALUE "MIN MAX"
check_int() {
	int_in "$2" "$3" || knob_die "$1" "$2" "an integer in ${3/ /..}"
}

# check_workload_name WHAT NAME: NAME is a workload the runner knows.
check_workload_name() {
	case " $WORKLOAD_NAMES " in *" $2 "*) return 0 ;; esac
	die "$1: unknown workload '$2': a workload is one of: $WORKLOAD_NAMES (parameters: NAME:KEY=VALUE,... as bench/workloads.conf allows)"
}
