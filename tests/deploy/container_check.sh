#!/usr/bin/env bash
# container_check.sh SRC [--budget SECONDS] [--keep DIR]
#
# Builds the image containers/ompc.def describes without Apptainer or Docker
# (neither runs on CI): the same root filesystem with debootstrap, the same
# %files, the recipe's own %post, %test, %environment and %runscript run
# inside it with chroot; then, inside that root, the image's ompcc compiles
# a conformance program (tests/offload/conformance/stencil.c) and the runscript runs it
# on 1 head + 2 workers, as `apptainer run ompc.sif -n 3 ./stencil` would
# (embedded model), and a launcher starts the runscript once per rank, as
# `srun apptainer run ompc.sif ./pipeline` would (hybrid model).
#
# Phases (each with a time limit, elapsed time printed, a failure names its
# phase and shows the end of its log):
#   recipe       parse ompc.def; its %files must list every top-level entry
#                of the source tree and match containers/Dockerfile.dockerignore
#   host-tools   root, mount and debootstrap available (apt-get installs it)
#   debootstrap  debootstrap as Apptainer's debootstrap bootstrap runs it
#   files        %files: from a git checkout only tracked and untracked, not
#                ignored, files (git ls-files -co --exclude-standard)
#   post         %post in the chroot (/bin/sh -ex, clean environment)
#   test         %test in the chroot (the find_package example on 3 ranks)
#   compile      ompcc builds tests/offload/conformance/stencil.c in the chroot
#   embedded     runscript -n 3 ./stencil: exit 0 and "PASS stencil"
#   hybrid       mpiexec.mpich -n 3 runscript ./pipeline: one job, workers=2
#
# Everything happens in a fresh directory under ${TMPDIR:-/tmp}.  The EXIT
# trap (also after a failure, a time-out or a signal) kills what still runs
# inside the root, unmounts everything under the directory, checks with
# findmnt that nothing is mounted there any more, and only then deletes it;
# if something stays mounted, the directory is left in place and named.
# --budget: the whole run must end within SECONDS (CTest's TIMEOUT minus a
# margin for the clean-up), each phase's limit is cut to what remains.
# --keep DIR: work in DIR and keep it (unmounted); a root already
# debootstrapped there is reused (for developing the recipe, not for CI).
# Exit 77 (CTest: skipped) when not root, when mounts are not permitted, or
# when the Debian mirror cannot be reached.
set -eEuo pipefail

usage() { echo "usage: $0 SRC [--budget SECONDS] [--keep DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
src=$(cd "$1" && pwd)
shift
budget=2280
keep=""
while [ $# -gt 0 ]; do
  case "$1" in
    --budget) budget=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    *) usage ;;
  esac
done

def=$src/containers/ompc.def
dockerfile=$src/containers/Dockerfile
dockerignore=$src/containers/Dockerfile.dockerignore
start_time=$(date +%s)
deadline=$((start_time + budget))
# The environment of every command run inside the root: nothing from the
# caller (CTest's or a user's OMPC_* variables), as `apptainer --cleanenv`.
clean_env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
           HOME=/root TERM=dumb LANG=C.UTF-8)

phase=""
phase_start=0
phase_log=""
summary=()
work=""
root=""
logs=""

say() { echo "container_check: $*"; }
skip() { say "SKIPPED: $*"; exit 77; }
fail() {
  echo "container_check: FAILED in phase [$phase]: $*" >&2
  if [ -n "$phase_log" ] && [ -s "$phase_log" ]; then
    echo "---- last 60 lines of the [$phase] log ----" >&2
    tail -n 60 "$phase_log" >&2
    echo "---- end of the [$phase] log ----" >&2
  fi
  exit 1
}

# begin PHASE: ends the previous phase (records its time), starts PHASE and
# its log file.
begin() {
  local now
  now=$(date +%s)
  [ -z "$phase" ] || summary+=("$(printf '%-12s %5d s' "$phase" $((now - phase_start)))")
  [ -z "$phase" ] || say "[$phase] done in $((now - phase_start)) s"
  phase=$1
  phase_start=$now
  phase_log=""
  if [ -n "$logs" ]; then
    phase_log=$logs/$phase.log
    : > "$phase_log"
  fi
  [ "$phase" = end ] || say "[$phase] ... (at $((now - start_time)) s)"
}

# limit SECONDS: the phase's time limit, cut to what remains of the budget.
limit() {
  local left=$((deadline - $(date +%s)))
  [ "$left" -gt 10 ] || fail "out of time: the --budget of $budget s is spent"
  if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}

# run LIMIT CMD...: runs CMD with a time limit, output to the phase's log.
# timeout(1) puts CMD in a process group of its own; a time-out kills that
# group and fails the phase.  The group's id ($running) lets the clean-up
# stop it too when this script is interrupted.
running=""
run() {
  local t rc=0
  t=$(limit "$1") || exit 1
  shift
  timeout -k 15 "$t" "$@" >> "$phase_log" 2>&1 &
  running=$!
  wait "$running" || rc=$?
  running=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    fail "timed out after $t s: $*"
  fi
  return "$rc"
}

# in_root LIMIT SCRIPT [ARGS...]: runs the shell SCRIPT (sh -c) inside the
# root with a clean environment, from /.
in_root() {
  local t=$1 script=$2
  shift 2
  run "$t" "${clean_env[@]}" chroot "$root" /bin/sh -c "$script" sh "$@"
}

# --- clean-up -----------------------------------------------------------

# Processes whose root directory is ours: started inside the chroot by this
# script (mpiexec, its proxies, the ranks, apt, the compiler).
root_pids() {
  local p r
  for p in /proc/[0-9]*; do
    r=$(readlink "$p/root" 2>/dev/null) || continue
    [ "$r" = "$root" ] && echo "${p#/proc/}"
  done
  return 0
}

# mounts_below [DIR]: mount points at or below DIR ($work), deepest first.
mounts_below() {
  findmnt -rn -o TARGET | awk -v w="${1:-$work}" 'index($0, w "/") == 1 || $0 == w' | sort -r
}

# safe_rm DIR: rm -rf DIR, only if nothing is mounted at or below it.
safe_rm() {
  local m
  m=$(mounts_below "$1")
  [ -z "$m" ] || fail "refusing to delete $1: still mounted there: $m"
  rm -rf --one-file-system "$1"
}

cleanup() {
  local rc=$? pids m left i
  set +e
  trap - EXIT INT TERM HUP ERR
  if [ -n "$running" ]; then
    # Interrupted during a phase: stop its process group (debootstrap, apt,
    # mpiexec...) before touching the mounts it may use.
    kill -TERM -- "-$running" 2> /dev/null
    sleep 2
    kill -KILL -- "-$running" 2> /dev/null
  fi
  if [ -n "$root" ] && [ -d "$root" ]; then
    for i in 1 2 3 4 5; do
      pids=$(root_pids)
      [ -z "$pids" ] && break
      say "clean-up: killing processes still inside the root: $(tr '\n' ' ' <<< "$pids")"
      # shellcheck disable=SC2086
      kill -KILL $pids 2> /dev/null
      sleep 1
    done
  fi
  if [ -n "$work" ]; then
    for i in 1 2 3; do
      left=$(mounts_below)
      [ -z "$left" ] && break
      while read -r m; do
        [ -n "$m" ] || continue
        umount "$m" 2> /dev/null || { [ "$i" -lt 3 ] || umount -l "$m"; }
      done <<< "$left"
      sleep 1
    done
    left=$(mounts_below)
    if [ -n "$left" ]; then
      echo "container_check: clean-up: still mounted, $work left in place:" >&2
      echo "$left" >&2
      rc=1
    elif [ -n "$keep" ]; then
      say "clean-up: unmounted; kept $work (--keep)"
    else
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -d "$logs" ]; then
        local saved
        saved=$(mktemp -d "${TMPDIR:-/tmp}/ompc-container-logs.XXXXXX")
        cp -a "$logs/." "$saved/" && say "logs of this run kept in $saved"
      fi
      # Nothing is mounted below $work (checked just above); --one-file-system
      # would still refuse to cross into one.
      safe_rm "$work"
    fi
  fi
  if [ -n "$phase" ] && [ "$phase" != end ]; then
    summary+=("$(printf '%-12s %5d s  (failed)' "$phase" $(($(date +%s) - phase_start)))")
  fi
  if [ ${#summary[@]} -gt 0 ]; then
    say "time per phase:"
    printf '  %s\n' "${summary[@]}"
  fi
  say "total $(($(date +%s) - start_time)) s, exit $rc"
  exit "$rc"
}
trap cleanup EXIT
# A command that fails outside an explicit check still names its phase.
trap 'fail "line $LINENO: $BASH_COMMAND (exit $?)"' ERR
trap 'fail "interrupted (SIGINT)"' INT
trap 'fail "terminated (SIGTERM)"' TERM
trap 'fail "hung up (SIGHUP)"' HUP

# --- recipe -------------------------------------------------------------
begin recipe
[ -f "$def" ] || fail "no $def"

# header KEY: the value of "KEY: value" before the first section.
header() {
  awk -v key="$(tr '[:upper:]' '[:lower:]' <<< "$1")" '
    $1 ~ /^%/ { exit }
    $1 ~ /^#/ { next }
    { line = $0; k = line; sub(/:.*/, "", k); gsub(/[ \t]/, "", k)
      if (tolower(k) == key && index(line, ":")) {
        sub(/^[^:]*:[ \t]*/, "", line); sub(/#.*/, "", line); sub(/[ \t]+$/, "", line)
        print line; exit } }' "$def"
}
# section NAME: the body of %NAME (all of its occurrences, in order).  As
# Apptainer's parser: a line whose first word starts with % opens a section.
section() {
  awk -v want="%$1" '$1 ~ /^%/ { cur = tolower($1); next } cur == want { print }' "$def"
}

bootstrap=$(header Bootstrap)
suite=$(header OSVersion)
mirror=$(header MirrorURL)
include=$(header Include)
[ "$bootstrap" = debootstrap ] || fail "ompc.def: Bootstrap is '$bootstrap', this test follows debootstrap"
[ -n "$suite" ] || fail "ompc.def: no OSVersion"
[ -n "$mirror" ] || fail "ompc.def: no MirrorURL"
post=$(section post)
test_script=$(section test)
environment=$(section environment)
runscript=$(section runscript)
[ -n "$post" ] || fail "ompc.def: empty %post"
[ -n "$runscript" ] || fail "ompc.def: empty %runscript"
mapfile -t files_lines < <(section files | sed 's/#.*//' | awk 'NF')
[ ${#files_lines[@]} -gt 0 ] || fail "ompc.def: empty %files"
files_src=()
for l in "${files_lines[@]}"; do
  read -r s d extra <<< "$l"
  if [ -z "${d:-}" ] || [ -n "${extra:-}" ]; then
    fail "ompc.def: %files line '$l' is not 'source destination'"
  fi
  case "$s" in /*) fail "ompc.def: %files source '$s' must be relative to the checkout" ;; esac
  files_src+=("$s")
done
say "ompc.def: $bootstrap $suite from $mirror${include:+, include $include}; %files: ${files_src[*]}"

# Every top-level entry of the source tree (but dot files: .git, .ci, ...)
# must be copied, or the image builds from an incomplete tree.
if git -C "$src" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
  is_git=1
  mapfile -t top < <(git -C "$src" ls-files -co --exclude-standard | cut -d/ -f1 | sort -u | grep -v '^\.')
else
  is_git=0
  top=()
  for t in "$src"/*; do
    case "${t##*/}" in build*) ;; *) top+=("${t##*/}") ;; esac
  done
fi
for t in "${top[@]}"; do
  printf '%s\n' "${files_src[@]}" | grep -qxF "$t" ||
    fail "ompc.def: %files does not copy '$t' (add '$t /usr/local/src/ompc/' to %files and '!$t' to containers/Dockerfile.dockerignore)"
done
# The Dockerfile's build context lets in the same entries.
[ -f "$dockerignore" ] || fail "no $dockerignore"
want=$(printf '%s\n' "${files_src[@]}" | sort)
have=$(sed -n 's/^!\(.*\)$/\1/p' "$dockerignore" | sort)
[ "$want" = "$have" ] ||
  fail "containers/Dockerfile.dockerignore lets in other entries than ompc.def's %files:
$(diff <(echo "$want") <(echo "$have") || true)"
# Both recipes use the shared build and entry scripts.
grep -q 'containers/build-in-image.sh' <<< "$post" || fail "ompc.def: %post does not run containers/build-in-image.sh"
grep -q '^RUN .*containers/build-in-image.sh' "$dockerfile" || fail "Dockerfile does not RUN containers/build-in-image.sh"
grep -q 'ompc-entry' <<< "$runscript" || fail "ompc.def: %runscript does not run ompc-entry"
grep -q '^ENTRYPOINT .*ompc-entry' "$dockerfile" || fail "Dockerfile's ENTRYPOINT is not ompc-entry"
grep -q "^FROM debian:$suite\$" "$dockerfile" || fail "Dockerfile is not FROM debian:$suite"

# --- host-tools ---------------------------------------------------------
begin host-tools
[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, mount, chroot)"
for tool in chroot mount umount findmnt timeout mknod; do
  command -v "$tool" > /dev/null || fail "$tool not found"
done
if [ -n "$keep" ]; then
  # Only a new directory, or one an earlier --keep run made (marker file).
  if [ -e "$keep" ] && [ -n "$(ls -A "$keep")" ] && [ ! -e "$keep/.ompc-container-check" ]; then
    fail "--keep $keep: not empty and not made by this script"
  fi
  mkdir -p "$keep"
  work=$(cd "$keep" && pwd -P)
else
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/ompc-container.XXXXXX")
  work=$(cd "$tmp" && pwd -P)
fi
touch "$work/.ompc-container-check"
case "$work/" in "$src"/*) fail "work directory $work is inside the source tree" ;; esac
root=$work/rootfs
logs=$work/logs
mkdir -p "$logs"
# The root's programs run from here, and debootstrap creates device nodes.
case ",$(findmnt -n -o OPTIONS --target "$work")," in
  *,noexec,* | *,nodev,*)
    fail "$work is on a noexec or nodev file system; set TMPDIR to another directory" ;;
esac
phase_log=$logs/host-tools.log
: > "$phase_log"
# Mounts permitted here (not in every container)?
mkdir -p "$work/probe"
if ! mount -t tmpfs probe "$work/probe" 2>> "$phase_log"; then
  skip "mount is not permitted here: $(tail -n 1 "$phase_log")"
fi
umount "$work/probe"
rmdir "$work/probe"
# The mirror reachable?  (HTTP only: a HEAD of the suite's Release file.)
case "$mirror" in
  http://*)
    hostport=${mirror#http://}
    path=/${hostport#*/}
    hostport=${hostport%%/*}
    host=${hostport%%:*}
    port=80
    [ "$host" = "$hostport" ] || port=${hostport#*:}
    # shellcheck disable=SC2016  # the inner script's own variables
    if ! timeout 20 bash -c '
        exec 3<> "/dev/tcp/$1/$2" &&
        printf "HEAD %s/dists/%s/Release HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" "${3%/}" "$4" "$1" >&3 &&
        head -n 1 <&3' sh "$host" "$port" "$path" "$suite" >> "$phase_log" 2>&1; then
      skip "the mirror $mirror cannot be reached"
    fi
    grep -q "^HTTP/1.[01] [23]" "$phase_log" || fail "the mirror does not serve dists/$suite/Release"
    ;;
esac
if ! command -v debootstrap > /dev/null; then
  say "installing debootstrap with apt-get"
  run 300 apt-get update -qq || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive run 300 apt-get install -y -qq --no-install-recommends debootstrap ||
    fail "apt-get install debootstrap"
fi
say "$(debootstrap --version)"

# --- debootstrap --------------------------------------------------------
begin debootstrap
# Apptainer's debootstrap bootstrap (conveyorPacker_debootstrap.go) runs:
#   debootstrap --variant=minbase --exclude=openssl,udev,debconf-i18n,e2fsprogs
#               --include=apt,<Include> --arch=<arch> <OSVersion> <rootfs> <MirrorURL>
includes=apt
[ -z "$include" ] || includes="apt,$(tr -s ' ,' ',' <<< "$include")"
if [ -n "$keep" ] && [ -x "$root/usr/bin/apt-get" ] && [ ! -d "$root/debootstrap" ]; then
  say "reusing the root in $root (--keep)"
else
  [ ! -e "$root" ] || safe_rm "$root"
  run 900 debootstrap --variant=minbase --exclude=openssl,udev,debconf-i18n,e2fsprogs \
    --include="$includes" --arch="$(dpkg --print-architecture)" "$suite" "$root" "$mirror" ||
    fail "debootstrap $suite from $mirror"
fi
root=$(cd "$root" && pwd -P)
tail -n 1 "$phase_log" || true

# --- files --------------------------------------------------------------
begin files
# As Apptainer: each source (a glob, relative to the checkout) goes to the
# destination inside the root, symlinks dereferenced (cp -fLr SRC DST/).
# From a git checkout only the files git would commit are copied, so that
# build trees, editor files and the like stay out.
copy_entry() {  # copy_entry MATCH DEST
  local m=$1 d=$root$2
  mkdir -p "$d"
  if [ "$is_git" -eq 1 ]; then
    (cd "$src" && git ls-files -co --exclude-standard -z -- "$m" |
       while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done |
       tar --null -T - -ch -f -) | tar -C "$d" -xf -
  else
    cp -fLr "$src/$m" "$d"
  fi
}
dests=()
for l in "${files_lines[@]}"; do
  read -r s d <<< "$l"
  dests+=("$root$d")
  case "$d" in */) ;; *) fail "ompc.def: %files destination '$d' should end with / (a directory)" ;; esac
  mapfile -t matches < <(cd "$src" && for m in $s; do if [ -e "$m" ]; then echo "$m"; fi; done)
  [ ${#matches[@]} -gt 0 ] || fail "%files source '$s' matches nothing in $src"
  for m in "${matches[@]}"; do
    copy_entry "$m" "$d" >> "$phase_log" 2>&1 || fail "copying $m to $d"
  done
done
mapfile -t dests < <(printf '%s\n' "${dests[@]}" | sort -u)
say "copied $(find "${dests[@]}" -type f | wc -l) files into ${dests[*]#"$root"}"
# What Apptainer writes into an image: the environment, runscript and test
# scripts (/.singularity.d), and its session's resolv.conf and hosts.
mkdir -p "$root/.singularity.d/env"
printf '%s\n' "$environment" > "$root/.singularity.d/env/90-environment.sh"
printf '#!/bin/sh\n%s\n' "$runscript" > "$root/.singularity.d/runscript"
printf '#!/bin/sh\n%s\n' "$test_script" > "$root/.singularity.d/test"
chmod 0755 "$root/.singularity.d/runscript" "$root/.singularity.d/test"
: > "$root/.build.labels"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
cp -L /etc/hosts "$root/etc/hosts"

# The root's kernel file systems: fresh instances (proc, sysfs, tmpfs), never
# binds of the host's, so no clean-up can reach a host file through them.
mount -t proc proc "$root/proc" || fail "mount proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys" ||
  fail "mount sysfs"
mount -t tmpfs -o mode=0755,nosuid dev "$root/dev" || fail "mount tmpfs on /dev"
for n in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do
  read -r name major minor <<< "$n"
  mknod -m 0666 "$root/dev/$name" c "$major" "$minor" || fail "mknod /dev/$name"
done
mkdir -m 0755 "$root/dev/pts"
mkdir -m 1777 "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts" ||
  fail "mount devpts"
# MPICH's shared-memory transport lives in /dev/shm.
mount -t tmpfs -o mode=1777,nosuid,nodev shm "$root/dev/shm" || fail "mount tmpfs on /dev/shm"
mounts_below >> "$phase_log"

# --- post ---------------------------------------------------------------
begin post
# As Apptainer: /bin/sh -ex /.post.script from /, clean environment, with
# APPTAINER_ENVIRONMENT and APPTAINER_LABELS.
printf '%s\n' "$post" > "$root/.post.script"
run 1500 "${clean_env[@]}" APPTAINER_ENVIRONMENT=/.singularity.d/env/91-environment.sh \
  APPTAINER_LABELS=/.build.labels chroot "$root" /bin/sh -ex /.post.script ||
  fail "%post failed (containers/build-in-image.sh: its last step is named in the log)"
rm -f "$root/.post.script"
grep 'build-in-image: \[' "$phase_log" || true
say "labels: $(tr '\n' ';' < "$root/.build.labels")"

# --- test ---------------------------------------------------------------
begin test
if [ -n "$test_script" ]; then
  in_root 400 '. /.singularity.d/env/90-environment.sh && exec /.singularity.d/test' ||
    fail "%test failed"
  grep -E "workers=|result=" "$phase_log" || true
else
  say "ompc.def has no %test"
fi

# --- compile ------------------------------------------------------------
begin compile
# The user's working directory (Apptainer binds it): a conformance program.
mkdir -p "$root/root/work"
cp "$src/tests/offload/conformance/stencil.c" "$src/tests/offload/conformance/offload_check.h" \
   "$src/examples/find_package/pipeline.c" "$root/root/work/"
in_root 300 '. /.singularity.d/env/90-environment.sh && cd /root/work &&
  command -v ompcc && ompcc -O1 -Wall -Wextra -Werror -o stencil stencil.c &&
  ompcc -O2 -o pipeline pipeline.c' ||
  fail "ompcc (from %environment's PATH) could not build stencil.c and pipeline.c"
head -n 1 "$phase_log"

# --- embedded -----------------------------------------------------------
begin embedded
# apptainer run ompc.sif -n 3 ./stencil
in_root 300 '. /.singularity.d/env/90-environment.sh && cd /root/work &&
  exec /.singularity.d/runscript -n 3 ./stencil' ||
  fail "runscript -n 3 ./stencil exited non-zero"
grep -qx "PASS stencil" "$phase_log" || fail "runscript -n 3 ./stencil did not print 'PASS stencil'"
grep -x "PASS stencil" "$phase_log"

# --- hybrid -------------------------------------------------------------
begin hybrid
# srun -n 3 apptainer run ompc.sif [--exec] ./pipeline: a launcher outside
# the runscript starts it once per rank, and the runscript must exec the
# program (one job of 3 ranks), not start mpiexec again (3 jobs of 1 rank).
for how in "" "--exec "; do
  : > "$phase_log"
  in_root 300 ". /.singularity.d/env/90-environment.sh && cd /root/work &&
    exec mpiexec.mpich -n 3 /.singularity.d/runscript $how./pipeline" ||
    fail "mpiexec.mpich -n 3 runscript $how./pipeline exited non-zero"
  n=$(grep -c "workers=" "$phase_log" || true)
  [ "$n" -eq 1 ] ||
    fail "runscript $how./pipeline under a launcher: expected one job (one 'workers=' line), got $n"
  grep -q "workers=2" "$phase_log" || fail "runscript $how./pipeline: expected workers=2 (1 head + 2 workers)"
  grep -q "result=ok" "$phase_log" || fail "runscript $how./pipeline: expected result=ok"
  say "mpiexec.mpich -n 3 runscript $how./pipeline: $(grep -E "workers=|result=" "$phase_log" | tr '\n' ' ')"
done

begin end
say "PASSED: the image of containers/ompc.def builds from scratch, compiles and runs ompc programs (embedded and hybrid)"
