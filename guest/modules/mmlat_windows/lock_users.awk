# The lock users of guest/classes.txt, as the kernel names them: one line
# per function, "user NAME" for every function of a row with a lock, and
# "through NAME" for those a plumbing row lists too (they take the lock
# for their caller).  Names lose the kernel versions they may carry
# (name@6.3-) and their optional mark (name?); wildcards are left out.
#
# With the kernel's System.map as second file, a name stands for each text
# symbol it is with a compiler suffix stripped (finish_mkwrite_fault.isra.0,
# a .part.0 or .cold piece of it), since the module looks functions up by
# their exact symbol; a name the map lacks is kept as it is, so that the
# module counts it missing at load.
#
# usage: awk -f lock_users.awk classes.txt [System.map]

FNR == NR {
	if ($0 ~ /^#/ || NF < 5)
		next
	for (i = 5; i <= NF; i++) {
		name = $i
		sub(/[@?].*/, "", name)
		if (name ~ /\*/)
			continue
		if ($3 == "plumbing")
			plumbing[name] = 1
		else if ($4 != "-")
			user[name] = 1
	}
	next
}

$2 ~ /^[tTwW]$/ {
	base = $3
	sub(/\.(isra|constprop|part|cold)(\..*)?$/, "", base)
	if (base in user)
		symbol[base] = symbol[base] " " $3
}

END {
	for (name in user) {
		n = split((name in symbol) ? symbol[name] : name, each, " ")
		for (i = 1; i <= n; i++) {
			print "user " each[i]
			if (name in plumbing)
				print "through " each[i]
		}
	}
}
