#!/usr/bin/env bash
# awave_check.sh MODE AWAVE DIR [awave options...]
#   energy:    a constant-velocity run must image (almost) nothing: its rms
#              below 15% of the layered model's, same geometry.
#   roundtrip: modelled data saved with --write-data and read back with
#              --data give the same image; a file of zeros in their place
#              gives an image of exact zeros (the file is used, not the
#              modelling).
#   identical: the image of 1 rank and of 1 head + 3 workers must be the
#              same bytes (shots stacked in shot order).
#   segy:      the model written as raw float32 (--vel) and as SEG-Y with
#              IEEE (format 5) and IBM (format 1) samples, by
#              awave_segy_gen.py, gives bitwise the same image.
#   segy_bad:  a SEG-Y file with sample format 3, a truncated one, one
#              shorter than the headers and a raw model in the other byte
#              order are refused with a clear message.
#   checkpoint: stored snapshots every 16 steps (--snap 16), the automatic
#              checkpointing that --mem 1 forces (k grows to the Nyquist 16,
#              then the snapshots still do not fit), and --checkpoint=3 (a
#              partial last segment, 3 shots on one worker): bitwise the
#              same image.
#   progress:  --progress=0 prints data/source/migration percentages within
#              each shot, every shot prints its run time, PREFIX.json has
#              one time per shot; without --progress no percentage at all.
#   png:       the pictures (PREFIX.png, PREFIX-vel.png) decode, hold the
#              image's pixels exactly and are compressed
#              (awave_png_check.py).
# MPIEXEC names the launcher.
set -u
mode=$1 awave=$2 dir=$3
shift 3
mkdir -p "$dir"
mpiexec=${MPIEXEC:-mpiexec}
rms() { sed -n 's/.*image rms \([0-9.e+-]*\).*/\1/p' "$1"; }
case "$mode" in
  energy)
    "$mpiexec" -n 3 "$awave" --model layered --no-png --out "$dir/lay" "$@" >"$dir/lay.log" 2>&1 ||
      { cat "$dir/lay.log"; echo "awave_check: FAIL"; exit 1; }
    "$mpiexec" -n 3 "$awave" --model constant --vconst 2000 --no-png --out "$dir/con" "$@" \
      >"$dir/con.log" 2>&1 || { cat "$dir/con.log"; echo "awave_check: FAIL"; exit 1; }
    a=$(rms "$dir/lay.log") b=$(rms "$dir/con.log")
    echo "image rms: layered $a, constant $b"
    if awk -v a="$a" -v b="$b" 'BEGIN{exit !(a > 0 && b < 0.15 * a)}'; then
      echo "awave_check: ok (ratio $(awk -v a="$a" -v b="$b" 'BEGIN{print b/a}'))"
    else
      echo "awave_check: FAIL: the constant-velocity image is not below 15% of the layered one"
      exit 1
    fi ;;
  identical)
    for np in 1 4; do
      "$mpiexec" -n $np "$awave" --no-png --out "$dir/np$np" "$@" >"$dir/np$np.log" 2>&1 ||
        { cat "$dir/np$np.log"; echo "awave_check: FAIL at -n $np"; exit 1; }
      grep -E 'wall' "$dir/np$np.log"
    done
    if cmp "$dir/np1.bin" "$dir/np4.bin"; then
      echo "awave_check: ok (images bitwise identical)"
    else
      echo "awave_check: FAIL: the images of -n 1 and -n 4 differ"
      exit 1
    fi ;;
  roundtrip)
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/w" --write-data "$dir/d.bin" "$@" \
      >"$dir/w.log" 2>&1 || { cat "$dir/w.log"; echo "awave_check: FAIL"; exit 1; }
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/r" --data "$dir/d.bin" "$@" \
      >"$dir/r.log" 2>&1 || { cat "$dir/r.log"; echo "awave_check: FAIL"; exit 1; }
    cmp "$dir/w.bin" "$dir/r.bin" ||
      { echo "awave_check: FAIL: migrating the saved data gives another image"; exit 1; }
    grep -q "observed data read from $dir/d.bin" "$dir/r.log" ||
      { cat "$dir/r.log"; echo "awave_check: FAIL: no 'observed data read from' line"; exit 1; }
    truncate -s "$(stat -c %s "$dir/d.bin")" "$dir/zero.bin"
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/z" --data "$dir/zero.bin" "$@" \
      >"$dir/z.log" 2>&1 || { cat "$dir/z.log"; echo "awave_check: FAIL (zero data)"; exit 1; }
    z=$(rms "$dir/z.log")
    [ "$z" = "0.000000e+00" ] ||
      { echo "awave_check: FAIL: zero shot gathers give image rms '$z', not 0"; exit 1; }
    echo "awave_check: ok (same image from the saved shot gathers, zero image from zero ones)" ;;
  segy)
    nx=120 nz=60
    python3 "$(dirname "$0")/awave_segy_gen.py" "$dir" $nx $nz ||
      { echo "awave_check: FAIL: awave_segy_gen.py"; exit 1; }
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/raw" --vel "$dir/model.bin" --nx $nx --nz $nz \
      "$@" >"$dir/raw.log" 2>&1 || { cat "$dir/raw.log"; echo "awave_check: FAIL (--vel)"; exit 1; }
    for f in ieee ibm; do
      "$mpiexec" -n 3 "$awave" --no-png --out "$dir/$f" --segy "$dir/model-$f.sgy" "$@" \
        >"$dir/$f.log" 2>&1 || { cat "$dir/$f.log"; echo "awave_check: FAIL (--segy $f)"; exit 1; }
      grep -q "model segy $nx x $nz" "$dir/$f.log" ||
        { cat "$dir/$f.log"; echo "awave_check: FAIL: $f SEG-Y not read as $nx x $nz"; exit 1; }
      cmp "$dir/raw.bin" "$dir/$f.bin" ||
        { echo "awave_check: FAIL: the $f SEG-Y model gives another image than --vel"; exit 1; }
    done
    echo "awave_check: ok (IEEE and IBM SEG-Y give bitwise the --vel image)" ;;
  segy_bad)
    python3 "$(dirname "$0")/awave_segy_gen.py" "$dir" 40 30 ||
      { echo "awave_check: FAIL: awave_segy_gen.py"; exit 1; }
    for c in "format:SEG-Y sample format 3 not supported \(only 1 = IBM float, 5 = IEEE float\)" \
             "trunc:bytes after the headers are not a whole number of 360-byte traces \(30 samples\)" \
             "short:is shorter than a SEG-Y header \(3600 bytes\)"; do
      f=${c%%:*} re=${c#*:}
      "$mpiexec" -n 2 "$awave" --no-png --out "$dir/$f" --segy "$dir/bad-$f.sgy" "$@" \
        >"$dir/$f.log" 2>&1
      rc=$?
      if [ $rc -eq 0 ] || ! grep -Eq "$re" "$dir/$f.log"; then
        cat "$dir/$f.log"
        echo "awave_check: FAIL: bad-$f.sgy (exit $rc) without the message /$re/"
        exit 1
      fi
      grep -E "error" "$dir/$f.log"
    done
    # The raw model in the other byte order: its 1500-3540 m/s read as
    # 1e-38 and less, which once ran (the migration model came out 0).
    python3 -c "import sys; d = open(sys.argv[1], 'rb').read(); open(sys.argv[2], 'wb').write(b''.join(d[i:i + 4][::-1] for i in range(0, len(d), 4)))" \
      "$dir/model.bin" "$dir/swapped.bin" || { echo "awave_check: FAIL: byte swap"; exit 1; }
    "$mpiexec" -n 2 "$awave" --no-png --out "$dir/swapped" --vel "$dir/swapped.bin" \
      --nx 40 --nz 30 "$@" >"$dir/swapped.log" 2>&1
    rc=$?
    re="swapped.bin: velocity [0-9.e+-]+ at sample 0 is not within 1\.\.1e\+06 m/s \(wrong byte order or format\?\)"
    if [ $rc -eq 0 ] || ! grep -Eq "$re" "$dir/swapped.log"; then
      cat "$dir/swapped.log"
      echo "awave_check: FAIL: byte-swapped raw model (exit $rc) without the message /$re/"
      exit 1
    fi
    grep -E "error" "$dir/swapped.log"
    echo "awave_check: ok (malformed SEG-Y and raw files refused)" ;;
  checkpoint)
    run() {  # name np options...: runs awave, then shows its source-wavefield line
      local name=$1 np=$2
      shift 2
      "$mpiexec" -n "$np" "$awave" --no-png --out "$dir/$name" "$@" >"$dir/$name.log" 2>&1 ||
        { cat "$dir/$name.log"; echo "awave_check: FAIL ($name)"; exit 1; }
      grep "source wavefield" "$dir/$name.log"
    }
    run snap 3 "$@" --snap 16
    run auto 3 "$@" --mem 1
    run seg3 2 "$@" --snap 16 --checkpoint=3
    grep -q "stored snapshots, snapshot every 16 steps" "$dir/snap.log" &&
      grep -Eq "checkpointing, snapshot every 16 steps .* in [2-9] segments" "$dir/auto.log" &&
      grep -Eq "checkpointing, snapshot every 16 steps \(([0-9]+)\) in [0-9]+ segments of 3;" \
        "$dir/seg3.log" ||
      { echo "awave_check: FAIL: not the expected strategies (see the lines above)"; exit 1; }
    for r in auto seg3; do
      cmp "$dir/snap.bin" "$dir/$r.bin" ||
        { echo "awave_check: FAIL: the $r checkpointed image differs from the snapshots' one"
          exit 1; }
    done
    echo "awave_check: ok (checkpointed images bitwise equal to the stored snapshots' one)" ;;
  progress)
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/p" --progress=0 "$@" >"$dir/p.log" 2>&1 ||
      { cat "$dir/p.log"; echo "awave_check: FAIL"; exit 1; }
    shots=$(sed -n 's/^shots \([0-9]*\),.*/\1/p' "$dir/p.log")
    for phase in data source migration; do
      grep -Eq "^awave: shot [0-9]+/$shots: $phase [1-9]0% \([0-9]+/[0-9]+ steps\), [0-9.]+ s$" \
        "$dir/p.log" || { cat "$dir/p.log"; echo "awave_check: FAIL: no $phase progress"; exit 1; }
    done
    n=$(grep -Ec "^awave: shot [0-9]+/$shots \(x = [0-9]+ m\) done in [0-9.]+ s \(data" "$dir/p.log")
    t=$(grep -o '"shot_seconds": \[[^]]*\]' "$dir/p.json" | grep -Eo '[0-9]+\.[0-9]+' | wc -l)
    [ "$n" = "$shots" ] && [ "$t" = "$shots" ] ||
      { cat "$dir/p.log" "$dir/p.json"
        echo "awave_check: FAIL: $n 'done in' lines and $t shot times for $shots shots"; exit 1; }
    "$mpiexec" -n 3 "$awave" --no-png --out "$dir/q" "$@" >"$dir/q.log" 2>&1 ||
      { cat "$dir/q.log"; echo "awave_check: FAIL"; exit 1; }
    if grep -E "^awave: shot [0-9]+/[0-9]+: " "$dir/q.log"; then
      echo "awave_check: FAIL: progress lines without --progress"
      exit 1
    fi
    grep -c "%" "$dir/p.log" | sed 's/^/progress lines: /'
    echo "awave_check: ok (progress within shots, run time of each shot, quiet by default)" ;;
  png)
    "$mpiexec" -n 3 "$awave" --out "$dir/pic" "$@" >"$dir/pic.log" 2>&1 ||
      { cat "$dir/pic.log"; echo "awave_check: FAIL"; exit 1; }
    python3 "$(dirname "$0")/awave_png_check.py" "$dir/pic" || exit 1
    echo "awave_check: ok" ;;
  *) echo "usage: awave_check.sh energy|identical|roundtrip|segy|segy_bad|checkpoint|progress|png AWAVE DIR [options]"
     exit 2 ;;
esac
