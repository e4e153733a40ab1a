#!/usr/bin/env bash
# slurm_check.sh TEMPLATE CONFORMANCE_PROGRAM TASKBENCH_PROGRAM MPI_PROGRAM
#
# Deployment test: start a private single-host SLURM cluster (munged,
# slurmctld and slurmd on loopback, every file in a temporary directory),
# then submit the job template TEMPLATE (containers/ompc.sbatch) as a user
# would, on 1 head + 2 workers, with both launchers the template offers
# (srun with Slurm's PMI, MPICH's mpiexec inside the allocation).  Each job
# runs CONFORMANCE_PROGRAM (an ompcc-built test that prints PASS) or a
# small Task Bench graph, and must exit 0 with the expected output.  Then
# MPI_PROGRAM (tests/offload/mpi/halo.c, an MPI program that offloads) runs
# through the template with srun on 4 ranks, 2 application ranks x 1
# worker (OMPC_WORKERS_PER_RANK=1), and must print stock LLVM's result.
#
# Installs slurm-wlm and munge with apt-get when missing (root only; exit
# 77, a CTest skip, otherwise).  Exits non-zero with a message naming the
# step that failed, and the daemons' logs.
set -euo pipefail

if [ $# -ne 4 ]; then
  echo "usage: $0 TEMPLATE CONFORMANCE_PROGRAM TASKBENCH_PROGRAM MPI_PROGRAM" >&2
  exit 2
fi
for f in "$@"; do
  if [ ! -r "$f" ]; then
    echo "slurm_check: FAIL: $f does not exist (build first)" >&2
    exit 1
  fi
done
# Jobs run in a directory of their own: absolute paths only.
template=$(realpath "$1")
conformance=$(realpath "$2")
taskbench=$(realpath "$3")
mpi_program=$(realpath "$4")

ranks=3            # 1 head + 2 workers
mpi_ranks=4        # the MPI program: 2 application ranks x 1 worker
node=ompc-node     # the node's SLURM name, independent of the host name
job_wait=120       # seconds one job may take, queueing included
start_wait=60      # seconds the daemons may take to be ready

say() { echo "slurm_check: $*"; }

# --- packages -------------------------------------------------------------
# Daemons must run as root to start jobs; without root there is nothing
# this test can check.
need_cmds=(munged munge unmunge slurmctld slurmd sbatch srun scontrol squeue sinfo scancel)
missing=0
for c in "${need_cmds[@]}"; do
  command -v "$c" >/dev/null 2>&1 || missing=1
done
if [ "$(id -u)" -ne 0 ]; then
  say "SKIP: needs root (slurmd starts jobs as their user; apt-get)"
  exit 77
fi
if [ "$missing" -eq 1 ]; then
  say "installing slurm-wlm and munge with apt-get"
  # Another apt-get may hold the lock (parallel builds on CI): wait for it
  # rather than fail, but not forever.
  apt_opts=(-o DPkg::Lock::Timeout=120 -qq)
  if ! { timeout 180 apt-get "${apt_opts[@]}" update &&
         DEBIAN_FRONTEND=noninteractive timeout 420 apt-get "${apt_opts[@]}" \
           install -y --no-install-recommends slurm-wlm munge; } >/dev/null; then
    say "FAIL: apt-get could not install slurm-wlm and munge"
    exit 1
  fi
  for c in "${need_cmds[@]}"; do
    if ! command -v "$c" >/dev/null 2>&1; then
      say "FAIL: $c still missing after installing slurm-wlm and munge"
      exit 1
    fi
  done
fi

# --- private cluster state ----------------------------------------------
# Every process this test starts (daemons, and jobs through sbatch's
# --export) carries the variable $tag; clean-up finds strays by it, never
# by program name, so it cannot touch anyone else's slurmstepd or munged.
work=""
tag=""
daemon_pids=()
daemon_names=()
ctl_started=""
sbatch_pid=""
jobs_submitted=()

tagged_pids() {
  local env_file pid
  [ -n "$tag" ] || return 0
  for env_file in /proc/[0-9]*/environ; do
    pid=${env_file#/proc/}
    pid=${pid%/environ}
    if grep -qzxF -- "$tag" "$env_file" 2>/dev/null; then
      echo "$pid"
    fi
  done
}

# munged in the foreground logs to stderr only; slurmctld and slurmd log to
# their log file and to stderr alike, stderr alone holding what they say
# before the log file is open.
show_logs() {
  local d f
  for d in munged slurmctld slurmd; do
    f=$work/log/$d.log
    [ -s "$f" ] || f=$work/log/$d.stderr
    [ -s "$f" ] || continue
    echo "----- $(basename "$f") (last 40 lines)"
    tail -n 40 "$f"
  done
}

cleanup() {
  local rc=$? pid i
  local -a left jobs
  # A second signal (CTest, an impatient user) must not cut clean-up short:
  # it is bounded (about 25 s at worst) and leaves nothing behind.
  trap - EXIT
  trap '' INT TERM
  set +e
  # sbatch --wait would poll a dead controller until its timeout.
  [ -n "$sbatch_pid" ] && kill -TERM "$sbatch_pid" 2>/dev/null
  # Every job of this private cluster is ours.  Let slurmd stop their steps
  # the normal way before the daemons go.
  if [ -n "$ctl_started" ]; then
    mapfile -t jobs < <(timeout 5 squeue -h -o %i 2>/dev/null)
    if [ ${#jobs[@]} -gt 0 ]; then
      timeout 10 scancel "${jobs[@]}" >/dev/null 2>&1
      i=$((SECONDS + 10))
      while [ "$SECONDS" -lt "$i" ] &&
            [ -n "$(timeout 3 squeue -h -o %i 2>/dev/null)" ]; do
        sleep 0.5
      done
    fi
  fi
  for pid in "${daemon_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for ((i = 0; i < 40; i++)); do
    mapfile -t left < <(tagged_pids)
    [ ${#left[@]} -eq 0 ] && break
    # slurmstepd and job processes outlive slurmd; after 5 s, by force.
    if [ "$i" -eq 10 ]; then
      kill -TERM "${left[@]}" 2>/dev/null
    elif [ "$i" -ge 20 ]; then
      kill -KILL "${left[@]}" 2>/dev/null
    fi
    sleep 0.5
  done
  for pid in "${daemon_pids[@]}" $sbatch_pid; do
    wait "$pid" 2>/dev/null
  done
  mapfile -t left < <(tagged_pids)
  if [ ${#left[@]} -gt 0 ]; then
    say "WARNING: processes left behind: ${left[*]}"
  fi
  [ -n "$work" ] && rm -rf "$work"
  exit "$rc"
}

fail() {
  say "FAIL: $*"
  show_logs
  exit 1
}

trap cleanup EXIT
trap 'say "FAIL: interrupted"; exit 130' INT
trap 'say "FAIL: terminated"; exit 143' TERM

work=$(mktemp -d /tmp/ompc-slurm.XXXXXX)
tag="ompc_slurm_check_tag=$work"
export SLURM_CONF=$work/slurm.conf
mkdir -p "$work"/{munge,state,spool,log,run,jobs}
# munged wants every directory above its socket reachable by all users;
# the key's directory stays private.
chmod 755 "$work"
chmod 700 "$work/munge"
mkdir -m 755 "$work/munge-sock"

# A TCP port nothing on this host is bound to (any address, any state),
# away from a real cluster's defaults (6817/6818) and below Linux's
# ephemeral range (32768-), where a client could take it meanwhile.
used_ports() {
  local _ addr
  cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
    while read -r _ addr _; do
      [ "$addr" = local_address ] || echo $((16#${addr##*:}))
    done | sort -un
}
pick_port() {
  local used p tries
  used=$(used_ports)
  for ((tries = 0; tries < 100; tries++)); do
    p=$((20000 + RANDOM % 12000))
    if ! grep -qx "$p" <<<"$used" && [ "$p" != "${1:-}" ]; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
ctl_port=$(pick_port) || fail "no free TCP port"
slurmd_port=$(pick_port "$ctl_port") || fail "no free TCP port"

# --- munge ----------------------------------------------------------------
# A key of our own: the host's /etc/munge key (if any) and its daemon are
# none of our business.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munge_socket=$work/munge-sock/munge.socket
env "$tag" munged --foreground \
  --socket="$munge_socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/run/munged.pid" --seed-file="$work/munge/munged.seed" \
  </dev/null >"$work/log/munged.log" 2>&1 &
daemon_pids+=($!)
daemon_names+=(munged)
ok=0
for ((i = 0; i < 2 * start_wait; i++)); do
  if [ -S "$munge_socket" ] &&
     munge -n -S "$munge_socket" 2>/dev/null | unmunge -S "$munge_socket" >/dev/null 2>&1; then
    ok=1
    break
  fi
  kill -0 "${daemon_pids[0]}" 2>/dev/null || fail "munged exited during start-up"
  sleep 0.5
done
[ "$ok" -eq 1 ] || fail "munged did not start (no working socket $munge_socket)"

# --- slurm.conf -----------------------------------------------------------
# The node is described as slurmd itself sees the hardware (CPUs, sockets,
# cores, memory), except on hosts with fewer CPUs than ranks (2 cores in
# CI): SLURM 22.05 never runs a job whose --ntasks-per-node exceeds a
# node's CPUs, --overcommit or not, so the node then claims one CPU per
# rank and config_overrides stops slurmd from draining it for having fewer.
hw=$(slurmd -C | head -n 1) || fail "slurmd -C could not read the hardware"
hw=${hw#NodeName=* }
real_cpus=$(grep -oE 'CPUs=[0-9]+' <<<"$hw" | cut -d= -f2)
real_mem=$(grep -oE 'RealMemory=[0-9]+' <<<"$hw" | cut -d= -f2)
slurmd_params=""
if [ "${real_cpus:-0}" -lt "$mpi_ranks" ]; then
  hw="CPUs=$mpi_ranks RealMemory=${real_mem:-1}"
  slurmd_params="SlurmdParameters=config_overrides"
fi
cat >"$SLURM_CONF" <<EOF
# Generated by slurm_check.sh: a one-node cluster on loopback.
ClusterName=ompccheck
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No systemd and no delegated cgroup v2 in a container: track processes
# through /proc and bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd, so no sacct; finished jobs stay in scontrol for MinJobAge s
# and are logged to a text file.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$work/log/jobcomp.txt
MinJobAge=600
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
MailProg=/bin/true
$slurmd_params
NodeName=$node NodeAddr=127.0.0.1 NodeHostname=localhost $hw State=UNKNOWN
PartitionName=ompc Nodes=$node Default=YES MaxTime=10 State=UP
EOF

# --- slurmctld and slurmd -------------------------------------------------
env "$tag" slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$work/log/slurmctld.stderr" 2>&1 &
daemon_pids+=($!)
daemon_names+=(slurmctld)
ctl_started=1
env "$tag" slurmd -D -N "$node" -f "$SLURM_CONF" </dev/null >"$work/log/slurmd.stderr" 2>&1 &
daemon_pids+=($!)
daemon_names+=(slurmd)

state=""
for ((i = 0; i < 2 * start_wait; i++)); do
  state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  for ((d = 0; d < ${#daemon_pids[@]}; d++)); do
    kill -0 "${daemon_pids[d]}" 2>/dev/null ||
      fail "${daemon_names[d]} exited during start-up"
  done
  sleep 0.5
done
[ "$state" = idle ] || fail "node $node not idle after ${start_wait}s (state '${state:-unknown}')"
say "cluster up: slurmctld on 127.0.0.1:$ctl_port, slurmd on :$slurmd_port, node $node (${hw%% Boards=*})"

# --- jobs -----------------------------------------------------------------
# run_job NAME LAUNCHER PROGRAM [ARGS...]: submits the template and waits
# for it.  The one node holds every rank, with one CPU each; everything
# else comes from the template's own #SBATCH lines and logic.  job_ranks
# (default $ranks) and job_env (more NAME=value,... to export) change a
# job.
job_name=""
job_id=""
job_out=""
job_status=""
run_job() {
  local launcher=$2 rc=0 sub info state code t0=$SECONDS
  job_name=$1
  shift 2
  job_out=$work/jobs/$job_name.out
  sub=$work/jobs/$job_name.sbatch
  # In the background: bash runs the EXIT trap on a signal only once the
  # foreground command ends, and `wait` returns at once.
  timeout "$job_wait" sbatch --wait --parsable \
    --job-name="$job_name" --nodes=1 --ntasks="${job_ranks:-$ranks}" \
    --ntasks-per-node="${job_ranks:-$ranks}" \
    --cpus-per-task=1 --time=5 \
    --output="$job_out" --chdir="$work/jobs" \
    --export="ALL,$tag,JOB_LAUNCHER=$launcher,OMPC_STATS=1,HYDRA_IFACE=lo${job_env:+,$job_env}" \
    "$template" "$@" >"$sub" 2>&1 &
  sbatch_pid=$!
  wait "$sbatch_pid" || rc=$?
  sbatch_pid=""
  job_id=$(grep -oE '^[0-9]+' "$sub" | head -n 1 || true)
  [ -n "$job_id" ] || fail "sbatch refused job $job_name: $(cat "$sub")"
  jobs_submitted+=("$job_id")
  [ "$rc" -ne 124 ] || job_fail "did not finish within ${job_wait}s"
  # sbatch --wait returns the job's exit code; scontrol says how it ended
  # (no slurmdbd here, so no sacct).
  info=$(timeout 10 scontrol -o show job "$job_id" 2>/dev/null || true)
  state=${info#*JobState=}
  state=${state%% *}
  code=${info#*ExitCode=}
  code=${code%% *}
  if [ "$rc" -ne 0 ] || [ "$state" != COMPLETED ]; then
    job_fail "ended with sbatch exit $rc, state ${state:-?}, exit code ${code:-?}"
  fi
  job_status="COMPLETED, exit code $code, $((SECONDS - t0))s"
}

job_fail() {
  fail "job $job_name ($job_id) $*; its output:
$(cat "$job_out" 2>/dev/null || echo '(none)')"
}

# expect REGEX COUNT [WHY]: the last job's output has REGEX on exactly
# COUNT lines ("+": on at least one); WHY says what a mismatch means.
expect() {
  local regex=$1 count=$2 why=${3:-} n ok
  n=$(grep -cE -- "$regex" "$job_out" || true)
  if [ "$count" = + ]; then ok=$((n > 0)); else ok=$((n == count)); fi
  if [ "$ok" -ne 1 ]; then
    job_fail "printed $n line(s) matching /$regex/, expected ${count/+/at least 1}${why:+ ($why)}"
  fi
}

# The job must be one ompc program on 3 ranks.  A launcher without PMI
# starts 3 singletons instead, each running main() alone and passing, so
# the head's OMPC_STATS report must list workers on ranks 1 and 2.
expect_one_cluster() {
  local pmi="the ranks did not form one MPI job: check the PMI (srun --mpi=)"
  expect "^ompc\.sbatch: job [0-9]+ .*: $ranks ranks \(1 head \+ $((ranks - 1)) workers\)" 1 \
    "the template's start line"
  expect '^\[ompc stats\] worker ' 2 "$pmi"
  expect '^\[ompc stats\] worker 0 \(rank 1,' 1 "$pmi"
  expect '^\[ompc stats\] worker 1 \(rank 2,' 1 "$pmi"
  expect '^ompc\.sbatch: exit status 0$' 1 "the template's end line"
}

job_ok() {
  say "job $job_name ($job_id): $job_status; its output:"
  sed 's/^/    /' "$job_out"
}

conf_pass=$(basename "$conformance")
conf_pass=${conf_pass#off_conf_}

for launcher in srun mpiexec; do
  run_job "conformance-$launcher" "$launcher" "$conformance"
  expect_one_cluster
  expect "^PASS $conf_pass\$" 1
  job_ok

  run_job "taskbench-$launcher" "$launcher" "$taskbench" -steps 10 -width 4 -type stencil_1d
  expect_one_cluster
  expect '^Total Tasks 40$' 1 "Task Bench's summary"
  expect '^Elapsed Time [0-9.e+-]+ seconds$' 1 "Task Bench's summary"
  job_ok
done

# An MPI program that offloads, under srun: 2 application ranks, each the
# head of one worker.  Singletons (no PMI) would stop at once: 1 rank does
# not split into groups of 2.  Each head reports its own worker (rank 1 of
# its group), and rank 0 prints stock LLVM's result (off_mpi_halo_2x1).
job_ranks=$mpi_ranks job_env=OMPC_WORKERS_PER_RANK=1
run_job mpi-srun srun "$mpi_program" 2
expect "^ompc\.sbatch: job [0-9]+ .*: $mpi_ranks ranks \(2 application ranks x 1 worker\)" 1 \
  "the template's start line"
expect '^\[ompc stats\] worker 0 \(rank 1,' 2 "one worker per application rank"
expect '^RESULT ranks 2 norm 1\.022893980821063e\+02 checksum 3\.069704879953006e\+04$' 1 \
  "stock LLVM's result"
expect '^ompc\.sbatch: exit status 0$' 1 "the template's end line"
job_ok
job_ranks="" job_env=""

say "ok: ${#jobs_submitted[@]} jobs of $(basename "$template") passed (srun --mpi=pmi2, and mpiexec inside the allocation; an MPI program on 2 application ranks x 1 worker)"
