# STEPS=each: every prefix of the patched side's own patches becomes a
# variant, so that the report can say which patch moved which endpoint.
# Sourced after lib.sh and variants.sh.
#
# Two git refs of KSRC (BASELINE=<ref> PATCHED=<ref>): the steps are the
# commits of BASELINE..PATCHED, first parents only (a merge is one step),
# each exported and built as a variant of its own; BASELINE must be an
# ancestor of PATCHED.
#
# The patched variant carries the baseline's series directories first; the
# patches of its further directories, in order, are the steps. Step k is
# the baseline's directories, the further directories whose patches all
# come before patch k, and, unless patch k ends its directory, a partial
# copy of that directory holding its patches up to patch k
# (build/steps/<name>/, written by write_step_series). Its tree differs
# from the previous step's by one patch, so ccache (keyed across variant
# trees, bench/build.sh) compiles only what that patch touches. The last
# step is the patched variant itself, under its own name: its tree and
# kernel are those of STEPS=all.

STEPS_DIR=$BUILD_DIR/steps
STEP_NAMES=() STEP_PREVIOUS=() STEP_SPECS=() STEP_PATCHES=() STEP_SERIES=() STEP_PARTIAL=()

# series_label DIR: a series directory as variants.conf names it, or its
# path when it lies outside patches/.
series_label() {
	case $1 in "$PATCHES_DIR"/*) printf '%s\n' "${1#"$PATCHES_DIR"/}" ;; *) printf '%s\n' "$1" ;; esac
}

# plan_steps BASELINE_SPEC PATCHED_SPEC: the steps from the baseline to the
# patched variant, one a patch. Sets, for step i+1:
#   STEP_NAMES[i]     its variant: PATCHED.1, PATCHED.2, ..., PATCHED itself
#   STEP_PREVIOUS[i]  the variant it is compared with (the baseline first)
#   STEP_SPECS[i]     its variant spec (the last: PATCHED_SPEC)
#   STEP_PATCHES[i]   the patch it adds, as its series file names it
#   STEP_SERIES[i]    the series directory of that patch (series_label)
#   STEP_PARTIAL[i]   "COUNT DIR": the partial directory to write, the first
#                     COUNT patches of DIR; empty when the step needs none
# Writes nothing: bench/run-matrix.sh checks it at its entry.
plan_steps() {
	local base_spec=$1 patched_spec=$2 base_name patched_name own=0 i k=0 j
	local d p list spec_dirs= previous name base_source instr
	local -a base_dirs patched_dirs patches
	resolve_variant "$base_spec"
	base_name=$VARIANT_NAME base_dirs=("${VARIANT_SERIES[@]}") base_source=$VARIANT_SOURCE
	resolve_variant "$patched_spec"
	patched_name=$VARIANT_NAME patched_dirs=("${VARIANT_SERIES[@]}") instr=$VARIANT_INSTRUMENTATION
	if [ "$base_source" != "$VARIANT_SOURCE" ]; then
		plan_commit_steps "$base_name" "$base_source" "${#base_dirs[@]}" "$patched_spec"
		return
	fi
	for ((i = 0; i < ${#base_dirs[@]}; i++)); do
		[ "${patched_dirs[i]:-}" = "${base_dirs[i]}" ] || own=1
	done
	[ $own -eq 0 ] ||
		die "STEPS=each: the series directories of '$patched_name' ($(steps_labels "${patched_dirs[@]:$instr}")) do not start with those of '$base_name' ($(steps_labels "${base_dirs[@]:$instr}")): the steps are the baseline plus the patched variant's further patches, one at a time"
	# The step specs name their source and their directories by path, the
	# instrumentation left out: resolve_variant puts it first in every
	# variant.
	spec_dirs=$VARIANT_SOURCE
	for d in "${base_dirs[@]:$instr}"; do spec_dirs+=+$d; done
	previous=$base_name
	for d in "${patched_dirs[@]:${#base_dirs[@]}}"; do
		list=$(series_patches "$d")
		patches=()
		[ -z "$list" ] || mapfile -t patches <<< "$list"
		for ((j = 1; j <= ${#patches[@]}; j++)); do
			k=$((k + 1))
			p=${patches[j - 1]}
			name=$patched_name.$k
			STEP_PARTIAL+=("")
			if [ $j -lt ${#patches[@]} ]; then
				STEP_SPECS+=("$name=$spec_dirs+$STEPS_DIR/$name")
				STEP_PARTIAL[-1]="$j $d"
			else
				STEP_SPECS+=("$name=$spec_dirs+$d")
			fi
			STEP_NAMES+=("$name") STEP_PREVIOUS+=("$previous")
			STEP_PATCHES+=("${p#"$d"/}") STEP_SERIES+=("$(series_label "$d")")
			previous=$name
		done
		spec_dirs+=+$d
	done
	[ $k -gt 0 ] ||
		die "STEPS=each: '$patched_name' adds no patch to '$base_name' (its series directories beyond the baseline's: $(steps_labels "${patched_dirs[@]:${#base_dirs[@]}}"))"
	# The last step is the patched variant as given.
	STEP_NAMES[-1]=$patched_name STEP_SPECS[-1]=$patched_spec STEP_PARTIAL[-1]=
	check_step_names "$base_name" "$patched_name"
}

# check_step_names BASE_NAME PATCHED_NAME: no step takes the baseline's name.
check_step_names() {
	local name
	for name in "${STEP_NAMES[@]}"; do
		[ "$name" != "$1" ] ||
			die "STEPS=each: a step of '$2' would be called '$name', the baseline's name; rename one of them"
	done
}

# plan_commit_steps BASE_NAME BASE_SOURCE BASE_SERIES_COUNT PATCHED_SPEC:
# plan_steps for a baseline and a patched variant on other sources: both
# commits of KSRC, the baseline's an ancestor of the patched one's, with
# the same series directories. One step a commit, first parents only.
plan_commit_steps() {
	local base_name=$1 base_source=$2 base_count=$3 patched_spec=$4 commit
	local -a commits
	case $base_source:$VARIANT_SOURCE in
	git:*:git:*) ;;
	*) die "STEPS=each: '$base_name' ($base_source) and '$VARIANT_NAME' ($VARIANT_SOURCE) are on other sources: the steps are either the patched variant's further patches on one source, or the commits between two git refs of KSRC" ;;
	esac
	[ "${#VARIANT_SERIES[@]}" -eq "$base_count" ] ||
		die "STEPS=each: '$VARIANT_NAME' and '$base_name' are git refs with other series directories on top; the steps between two refs are their commits alone"
	git -C "$KSRC" merge-base --is-ancestor "${base_source#git:}" "${VARIANT_SOURCE#git:}" ||
		die "STEPS=each: $base_name (${base_source:4:12}) is not an ancestor of $VARIANT_REF (${VARIANT_SOURCE:4:12}) in $KSRC: the steps are the commits of BASELINE..PATCHED"
	mapfile -t commits < <(git -C "$KSRC" rev-list --reverse --first-parent \
		"${base_source#git:}..${VARIANT_SOURCE#git:}")
	[ ${#commits[@]} -gt 0 ] || die "STEPS=each: $base_name..$VARIANT_REF holds no commit"
	local previous=$base_name k=0
	for commit in "${commits[@]}"; do
		k=$((k + 1))
		STEP_NAMES+=("$VARIANT_NAME.$k") STEP_SPECS+=("$VARIANT_NAME.$k=git:$commit")
		STEP_PREVIOUS+=("$previous") STEP_PARTIAL+=("")
		STEP_PATCHES+=("$(git -C "$KSRC" log -1 --format='%h %s' "$commit")")
		STEP_SERIES+=("git:$base_name..$VARIANT_NAME")
		previous=$VARIANT_NAME.$k
	done
	STEP_NAMES[-1]=$VARIANT_NAME STEP_SPECS[-1]=$patched_spec
	check_step_names "$base_name" "$VARIANT_NAME"
}

# steps_labels DIR...: the directories' labels, space-separated.
steps_labels() {
	local d out=
	for d; do out+=${out:+ }$(series_label "$d"); done
	printf '%s\n' "${out:-none}"
}

# write_step_series NAME COUNT DIR: build/steps/NAME/, the first COUNT
# patches of the series directory DIR and a series file naming them. The
# copies keep the step's series sha256 (variant_sha256) that of the
# patches' contents, whatever becomes of DIR later.
write_step_series() {
	local name=$1 count=$2 src=$3 staging=$STEPS_DIR/.$1.tmp rel i
	local -a patches
	mapfile -t patches <<< "$(series_patches "$src")"
	rm -rf "$staging"
	mkdir -p "$staging"
	: > "$staging/series"
	for ((i = 0; i < count; i++)); do
		rel=${patches[i]#"$src"/}
		mkdir -p "$(dirname "$staging/$rel")"
		cp "${patches[i]}" "$staging/$rel"
		printf '%s\n' "$rel" >> "$staging/series"
	done
	commit_dir "$staging" "$STEPS_DIR/$name"
}
