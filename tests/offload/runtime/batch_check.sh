#!/usr/bin/env bash
# batch_check.sh NP PROGRAM [ARGS...]: run PROGRAM with OMPC_STATS=1; it must pass,
# the head must have sent its launches in at most half as many messages
# (the program makes many tasks ready at once), and the workers must have
# reported completions in fewer messages than completions (kernels with
# more launched behind them), and no kernel may have left the executor
# its policy chose: the stencil writes each buffer every other step, and a
# kernel sent ahead meets the pin of the one before it (which will be done
# first), so moving it would undo the placement.  With MIN_PER_MSG set, the
# completions must average at least that many per message.  With
# MIN_REQ_PER_MSG set, workers must have asked each other for inputs, one
# message per peer and launch batch: at least that many requests a message;
# with MAX_REQ_PER_MSG set, at most that many (the test hook
# OMPC_TEST_WATCHES_PER_MSG splits them).
set -u
np=$1 prog=$2
shift 2
out=$(OMPC_STATS=1 "$MPIEXEC" -n "$np" "$prog" "$@" 2>&1)
rc=$?
echo "$out" | grep -E '\[ompc stats\]|launch_batch'
[ "$rc" -eq 0 ] || { echo "$out" | tail -20; echo "batch_check: FAIL: exit $rc"; exit 1; }
line=$(echo "$out" | grep -E '\[ompc stats\] [0-9]+ kernels launched ahead in [0-9]+ messages, [0-9]+ completions in [0-9]+ messages')
[ -n "$line" ] || { echo "batch_check: FAIL: no launch counts in the stats"; exit 1; }
read -r launches msgs dones dmsgs <<<"$(echo "$line" | sed -E \
  's/.* ([0-9]+) kernels launched ahead in ([0-9]+) messages, ([0-9]+) completions in ([0-9]+) messages.*/\1 \2 \3 \4/')"
[ "$launches" -gt 0 ] && [ $((2 * msgs)) -le "$launches" ] ||
  { echo "batch_check: FAIL: $launches launches in $msgs messages"; exit 1; }
[ "$dones" -eq "$launches" ] && [ "$dmsgs" -lt "$dones" ] ||
  { echo "batch_check: FAIL: $dones completions (of $launches) in $dmsgs messages"; exit 1; }
per=${MIN_PER_MSG:-1}
[ "$dones" -ge $((per * dmsgs)) ] ||
  { echo "batch_check: FAIL: $dones completions in $dmsgs messages, not $per a message"; exit 1; }
moved=$(echo "$out" | sed -nE 's/.*\[ompc stats\] ([0-9]+) kernels ran away from their placement.*/\1/p')
[ "$moved" = 0 ] || { echo "batch_check: FAIL: ${moved:-no count of} kernels ran away from their placement"; exit 1; }
if [ -n "${MIN_REQ_PER_MSG:-}${MAX_REQ_PER_MSG:-}" ]; then
  reqs=$(echo "$out" | sed -nE 's/.*\[ompc stats\] rank [0-9]+: ([0-9]+) data requests to other workers in ([0-9]+) messages.*/\1 \2/p')
  [ -n "$reqs" ] || { echo "batch_check: FAIL: no worker reported data requests"; exit 1; }
  while read -r nreq nmsg; do
    [ "$nreq" -ge $((${MIN_REQ_PER_MSG:-0} * nmsg)) ] ||
      { echo "batch_check: FAIL: $nreq data requests in $nmsg messages, not $MIN_REQ_PER_MSG a message"; exit 1; }
    [ -z "${MAX_REQ_PER_MSG:-}" ] || [ "$nreq" -le $((MAX_REQ_PER_MSG * nmsg)) ] ||
      { echo "batch_check: FAIL: $nreq data requests in $nmsg messages, more than $MAX_REQ_PER_MSG a message"; exit 1; }
  done <<<"$reqs"
fi
echo "batch_check: ok ($launches launches in $msgs messages, completions in $dmsgs, none moved)"
