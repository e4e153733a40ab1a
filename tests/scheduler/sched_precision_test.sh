#!/bin/sh
# ompc-sched prints times exactly: on a schedule of 400,000 tasks whose
# times reach tens of millions, every printed finish - start equals the
# task's cost.  The tasks form a chain (independent tasks all ready at 0
# make HEFT scan every gap of a worker per task: quadratic).  Costs are multiples of 1/4, so each sum and difference is
# exact in a double and awk can compare with ==.
#   sched_precision_test.sh OMPC-SCHED WORKDIR
set -eu
tool=$1
dir=$2
n=400000
mkdir -p "$dir"
in=$dir/precision.json
out=$dir/precision.out
awk -v n=$n 'BEGIN {
    printf "{\"workers\": 2, \"tasks\": [\n"
    for (i = 0; i < n; i++) {
        c = (i * 37 % 400) / 4 + 0.25
        printf "{\"id\": %d, \"cost\": [%.2f, %.2f]}%s\n", i, c, c + 0.5, i + 1 < n ? "," : ""
    }
    printf "], \"edges\": [\n"
    for (i = 1; i < n; i++)
        printf "{\"from\": %d, \"to\": %d, \"cost\": 0}%s\n", i - 1, i, i + 1 < n ? "," : ""
    printf "]}\n"
}' > "$in"
"$tool" "$in" > "$out"
awk -v n=$n '
/^task / {
    id = $2; w = $4; s = $6; f = $8
    c = (id * 37 % 400) / 4 + 0.25 + (w == 1 ? 0.5 : 0)
    if (f - s != c) { printf "task %d: finish %s - start %s != cost %.2f\n", id, f, s, c; bad = 1; exit 1 }
    if (f > max) max = f
    seen++
}
/^makespan / { m = $2 }
END {
    if (bad) exit 1
    if (seen != n) { printf "%d task lines, expected %d\n", seen, n; exit 1 }
    if (m != max) { printf "makespan %s != latest finish %s\n", m, max; exit 1 }
    if (max < 1e7) { printf "makespan %s: too short to need more than 6 digits\n", max; exit 1 }
    printf "sched_precision: %d durations exact, makespan %s\n", n, m
}' "$out"
