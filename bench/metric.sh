# Sourced by the bench scripts. metric FILE NAME UNIT prints the median of
# UNIT over the samples of benchmark NAME (without its -GOMAXPROCS suffix)
# in go test -bench output FILE, or NaN when there are none.
metric() {
	awk -v name="$2" -v unit="$3" '
		$1 ~ /^Benchmark/ {
			n = $1
			sub(/-[0-9]+$/, "", n)
			if (n != name) next
			for (i = 3; i < NF; i += 2) if ($(i + 1) == unit) print $i
		}' "$1" | sort -g | awk '
		{ v[NR] = $1 }
		END {
			if (NR == 0) { print "NaN"; exit }
			if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2
		}'
}
