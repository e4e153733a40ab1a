#!/usr/bin/env bash
# awave_outputs.sh AWAVE: awave's outputs (--out PREFIX: .bin, .json, .png,
# -vel.png) keep a symlink, a FIFO and a device at their path, and a FIFO
# without a reader is refused by name instead of hanging the run.
set -u
awave=$1
dir=$(mktemp -d)
reader=
trap '[ -n "$reader" ] && kill "$reader" 2>/dev/null; rm -rf "$dir"' EXIT
fail=0
bad() { echo "awave_outputs: FAIL: $*"; fail=1; }
small=(--model layered --nx 100 --nz 50 --shots 2 --tmax 0.5 --threads 1)
x=$dir/x

mkdir "$dir/real"
echo old > "$dir/real/x.json"
ln -s real/x.json "$x.json"
mkfifo "$x.png"
timeout 60 cat "$x.png" > "$dir/png.out" &
reader=$!
# As root a private node stands in for /dev/null (a broken build would
# replace the node, not the system's).
null=/dev/null
[ "$(id -u)" = 0 ] && mknod "$x-vel.png" c 1 3 2>/dev/null && null=$x-vel.png
[ "$null" = /dev/null ] && ln -s /dev/null "$x-vel.png"
timeout 60 "$MPIEXEC" -n 3 "$awave" "${small[@]}" --out "$x" >/dev/null 2>"$dir/err1" ||
    bad "run failed: $(head -3 "$dir/err1")"
[ -L "$x.json" ] || bad "the symlink x.json was replaced"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/real/x.json" 2>/dev/null ||
    bad "the symlink's target does not hold the JSON"
if [ -p "$x.png" ]; then
    wait "$reader"
    reader=
    [ "$(head -c 4 "$dir/png.out" | tail -c 3)" = PNG ] || bad "the FIFO's reader got no PNG"
else
    bad "the FIFO x.png was replaced"
fi
[ -c "$null" ] || bad "$null was replaced"
{ [ -f "$x.bin" ] && [ ! -L "$x.bin" ]; } || bad "x.bin is not a regular file"

rm -f "$x.bin"
mkfifo "$x.bin"
timeout 60 "$MPIEXEC" -n 3 "$awave" "${small[@]}" --out "$x" >/dev/null 2>"$dir/err2"
rc=$?
[ $rc = 124 ] && bad "a FIFO without a reader hung the run"
[ $rc = 0 ] && bad "a FIFO without a reader at x.bin: exit 0"
grep -q "x.bin is a FIFO with no reader" "$dir/err2" ||
    bad "a FIFO without a reader is not refused by name: $(head -3 "$dir/err2")"
ls "$dir"/x.*tmp* >/dev/null 2>&1 && bad "temporaries left: $(ls "$dir"/x.*tmp*)"
[ $fail = 0 ] && echo "awave_outputs: ok"
exit $fail
