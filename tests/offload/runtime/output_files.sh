#!/usr/bin/env bash
# output_files.sh NP PROGRAM: the files a run writes (OMPC_TRACE,
# OMPC_PERF_MODEL) never clobber what is planted at or next to their path,
# and a bad perf model file is refused line by line, named, and rewritten.
#
# Devices: as root a private node (mknod) stands in for /dev/null and
# /dev/zero, so that a broken build replaces the node, not the system's.
set -u
np=$1 prog=$2
dir=$(mktemp -d)
readers=()
cleanup() {
    for p in "${readers[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$dir"
}
trap cleanup EXIT
fail=0
bad() { echo "output_files: FAIL: $*"; fail=1; }

# Each rank plants symlinks under the names the old code used for its
# temporaries, then becomes the program: the rank is the supervisor's
# child (tgt_supervise.c), so its pid is a little above the planter's.
# One process plants them all, so that no pid is used up in between.
cat > "$dir/plant.py" <<'EOF'
import os
import sys
if "PLANT_PRELOAD" in os.environ:  # the program's, not the planter's
    os.environ["LD_PRELOAD"] = os.environ.pop("PLANT_PRELOAD")
v = os.environ.get("PLANT_VICTIM")
names = []
for p in range(os.getpid(), os.getpid() + 200):
    if v and os.environ.get("PLANT_TRACE"):
        names.append("%s.tmp.%d.0" % (os.environ["PLANT_TRACE"], p))
    if v and os.environ.get("PLANT_MODEL"):
        names.append("%s.tmp%d" % (os.environ["PLANT_MODEL"], p))
for n in names:
    try:
        os.symlink(v, n)
    except FileExistsError:  # planted by another rank
        pass
os.execv(sys.argv[1], sys.argv[1:])
EOF

# The interpreter itself, not a version manager's shim: a shim is a shell
# script, and under the sanitizer builds every process of it runs with the
# sanitizer's runtime preloaded, which made each run many times slower.
# For the same reason the planter runs without the preload and hands it
# on to the program it becomes.
py=$(python3 -c 'import sys; print(sys.executable)')

run() { # run LOG ENV...: the program on NP ranks, 60 s at most; 1 MB of
         # its messages are kept (a flood ends the run by SIGPIPE)
    local log=$1
    shift
    env -u LD_PRELOAD PLANT_PRELOAD="${LD_PRELOAD:-}" "$@" timeout 60 "$MPIEXEC" -n "$np" "$py" "$dir/plant.py" "$prog" 2>&1 >"$log.out" |
        head -c 1000000 > "$log"
    return "${PIPESTATUS[0]}"
}

device() { # device NAME MAJOR MINOR: a node that acts as /dev/NAME
    if [ "$(id -u)" = 0 ] && mknod "$dir/$1" c "$2" "$3" 2>/dev/null; then
        echo "$dir/$1"
    else
        echo "/dev/$1"
    fi
}

is_json() { "$py" -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
has_header() { grep -q '^# ompc perf model 1' "$1" 2>/dev/null; }

# ---------------------------------------------------------------- trace
echo precious > "$dir/victim"
run "$dir/t1.err" OMPC_TRACE="$dir/t1.json" PLANT_TRACE="$dir/t1.json" PLANT_VICTIM="$dir/victim" ||
    bad "trace, planted temporary: run failed: $(head -3 "$dir/t1.err")"
[ "$(cat "$dir/victim")" = precious ] || bad "trace: a symlink planted under the temporary's name was followed"
{ [ -f "$dir/t1.json" ] && [ ! -L "$dir/t1.json" ] && is_json "$dir/t1.json"; } ||
    bad "trace: with planted symlinks around, no regular trace file was written"

mkdir "$dir/real"
echo old > "$dir/real/t2.json"
ln -s real/t2.json "$dir/t2.json"
run "$dir/t2.err" OMPC_TRACE="$dir/t2.json" || bad "trace through a symlink: run failed"
[ -L "$dir/t2.json" ] || bad "trace: the symlink at OMPC_TRACE was replaced"
is_json "$dir/real/t2.json" || bad "trace: the symlink's target does not hold the trace"

mkfifo "$dir/t3.fifo"
timeout 60 cat "$dir/t3.fifo" > "$dir/t3.out" &
readers+=($!)
run "$dir/t3.err" OMPC_TRACE="$dir/t3.fifo" || bad "trace into a FIFO: run failed"
if [ -p "$dir/t3.fifo" ]; then
    wait "${readers[-1]}"
    is_json "$dir/t3.out" || bad "trace: the FIFO's reader did not get the trace"
else
    bad "trace: the FIFO at OMPC_TRACE was replaced by $(stat -c %F "$dir/t3.fifo")"
fi

mkfifo "$dir/t4.fifo"
run "$dir/t4.err" OMPC_TRACE="$dir/t4.fifo"
[ $? = 124 ] && bad "trace: a FIFO without a reader hung the run"
grep -q "t4.fifo is a FIFO with no reader" "$dir/t4.err" ||
    bad "trace: a FIFO without a reader is not refused by name: $(head -3 "$dir/t4.err")"
[ -p "$dir/t4.fifo" ] || bad "trace: the FIFO without a reader was replaced"

null=$(device null 1 3)
run "$dir/t5.err" OMPC_TRACE="$null" || bad "trace into $null: run failed"
[ -c "$null" ] || bad "trace: $null was replaced by $(stat -c %F "$null")"
grep -q "cannot\|refused" "$dir/t5.err" && bad "trace into $null: $(head -3 "$dir/t5.err")"

# A private /dev/stdout: the trace goes to the run's output, the link stays.
ln -s /proc/self/fd/1 "$dir/stdout"
run "$dir/t6.err" OMPC_TRACE="$dir/stdout" || bad "trace to stdout: run failed"
[ -L "$dir/stdout" ] || bad "trace: the link to /proc/self/fd/1 was replaced"
grep -q '"displayTimeUnit"' "$dir/t6.err.out" ||
    bad "trace to stdout: not in the output: $(head -3 "$dir/t6.err")"

# A dangling link is not followed to create its target.
ln -s "$dir/nowhere/t7.json" "$dir/t7.json"
run "$dir/t7.err" OMPC_TRACE="$dir/t7.json"
grep -q "t7.json is a symlink to a missing" "$dir/t7.err" ||
    bad "trace: a dangling symlink is not refused by name: $(head -3 "$dir/t7.err")"
[ -L "$dir/t7.json" ] || bad "trace: the dangling symlink was replaced"

# Someone else's link in a sticky world-writable directory (as /tmp) is
# refused (needs root to make the link another user's).
if [ "$(id -u)" = 0 ]; then
    mkdir "$dir/sticky" && chmod 1777 "$dir/sticky"
    echo precious > "$dir/victim"
    ln -s ../victim "$dir/sticky/t8.json" && chown -h nobody "$dir/sticky/t8.json"
    run "$dir/t8.err" OMPC_TRACE="$dir/sticky/t8.json"
    grep -q "t8.json is a symlink owned by another user" "$dir/t8.err" ||
        bad "trace: a planted link in a sticky directory is followed: $(head -3 "$dir/t8.err")"
    [ "$(cat "$dir/victim")" = precious ] || bad "trace: the planted link's target was written"
fi

# ----------------------------------------------------------- perf model
m=$dir/m1.tsv
echo precious > "$dir/victim"
run "$dir/m1.err" OMPC_PERF_MODEL="$m" PLANT_MODEL="$m" PLANT_VICTIM="$dir/victim" ||
    bad "model, planted temporary: run failed: $(head -3 "$dir/m1.err")"
[ "$(cat "$dir/victim")" = precious ] || bad "model: a symlink planted under the temporary's name was followed"
{ [ -f "$m" ] && [ ! -L "$m" ] && has_header "$m"; } ||
    bad "model: with planted symlinks around, no regular model file was written"

echo "# old" > "$dir/real/m2.tsv"
ln -s real/m2.tsv "$dir/m2.tsv"
run "$dir/m2.err" OMPC_PERF_MODEL="$dir/m2.tsv" || bad "model through a symlink: run failed"
[ -L "$dir/m2.tsv" ] || bad "model: the symlink at OMPC_PERF_MODEL was replaced"
has_header "$dir/real/m2.tsv" || bad "model: the symlink's target does not hold the model"

mkfifo "$dir/m3.fifo"
run "$dir/m3.err" OMPC_PERF_MODEL="$dir/m3.fifo"
rc=$?
[ $rc = 124 ] && bad "model: a FIFO hung start-up"
[ $rc = 0 ] || [ $rc = 124 ] || bad "model: a FIFO failed the run (rc $rc)"
grep -q "m3.fifo is a FIFO, not a regular file" "$dir/m3.err" ||
    bad "model: a FIFO is not refused by name: $(head -3 "$dir/m3.err")"
[ -p "$dir/m3.fifo" ] || bad "model: the FIFO was replaced"

zero=$(device zero 1 5)
run "$dir/m4.err" OMPC_PERF_MODEL="$zero"
rc=$?
[ $rc = 0 ] || bad "model $zero: rc $rc, $(wc -c < "$dir/m4.err") bytes of messages"
grep -q "is a device, not a regular file" "$dir/m4.err" ||
    bad "model: $zero is not refused by name: $(head -c 300 "$dir/m4.err")"
[ -c "$zero" ] || bad "model: $zero was replaced"

# Costs that load but break every later run, one file each.
for v in inf 1e308 0x1p1023 nan -1; do
    m=$dir/m5.tsv
    rm -f "$m"
    run "$dir/m5.err" OMPC_PERF_MODEL="$m" || { bad "model: first run failed"; break; }
    awk -F'\t' -v OFS='\t' -v v="$v" '/^__omp_offloading_/ {$3 = v} {print}' "$m" > "$m.new"
    mv "$m.new" "$m"
    line=$(grep -n '^__omp_offloading_' "$m" | head -1 | cut -d: -f1)
    run "$dir/m5.err" OMPC_PERF_MODEL="$m" ||
        bad "model with mean $v: run failed: $(grep -v '^$' "$dir/m5.err" | head -3)"
    grep -q "m5.tsv:$line: mean '$v' is not a number of seconds" "$dir/m5.err" ||
        bad "model with mean $v: not named with file and line: $(head -3 "$dir/m5.err")"
    awk -F'\t' '/^__omp_offloading_/ && !($3 + 0 >= 0 && $3 + 0 < 1e6 && $3 ~ /^[0-9.e+-]+$/) {exit 1}' "$m" ||
        bad "model with mean $v: the file was not rewritten: $(cat "$m")"
    run "$dir/m5.err" OMPC_PERF_MODEL="$m" || bad "model with mean $v: the run after it failed"
    grep -q "OMPC_PERF_MODEL" "$dir/m5.err" && bad "model with mean $v: still complained after the rewrite"
done

# Warnings are bounded: a handful named, the rest counted.
m=$dir/m6.tsv
for i in $(seq 1000); do echo "garbage line $i"; done > "$m"
run "$dir/m6.err" OMPC_PERF_MODEL="$m" || bad "model of 1000 bad lines: run failed"
n=$(grep -c "OMPC_PERF_MODEL=" "$dir/m6.err")
[ "$n" -le 6 ] || bad "model of 1000 bad lines: $n warning lines"
grep -q "m6.tsv: 995 more bad lines ignored" "$dir/m6.err" ||
    bad "model of 1000 bad lines: the skipped lines are not counted: $(tail -2 "$dir/m6.err")"

left=$(find "$dir" -name '*.tmp*' ! -type l | head -3)
[ -z "$left" ] || bad "temporaries left behind: $left"
[ $fail = 0 ] && echo "output_files: ok ($np ranks)"
exit $fail
