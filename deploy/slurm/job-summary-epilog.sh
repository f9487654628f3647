#!/bin/bash
# gpuscope Slurm epilog: appends `gpuscope job <id>` (the job's GPU report: use, memory, power, idle
# time, errors, grade and notes) to the end of the job's standard output file, like `seff` but written
# for the user without being asked.
#
# It runs on every node of the job and writes only on the batch host. The output file is the job's
# StdOut as `scontrol show job` names it; the report is appended with the job owner's uid and gid
# (setpriv), never root's, so a StdOut that is a symlink to a file the user may not write stays
# untouched. A job Prometheus knows no GPUs of (a CPU job) gets nothing.
#
# It never fails the job or drains the node: every error is logged (stderr, i.e. slurmd's log, and
# syslog with tag gpuscope-summary) and it exits 0; scontrol and gpuscope each run under a timeout.
# Settings (environment of slurmd, all optional):
#   GPUSCOPE_BIN              the gpuscope command (default: gpuscope on PATH, then /usr/local/bin)
#   GPUSCOPE_PROMETHEUS_URL   default http://localhost:9090
#   GPUSCOPE_SUMMARY_ARGS     more flags for gpuscope job, split on spaces (e.g. --prometheus.bearer-token-file=F)
#   GPUSCOPE_SUMMARY_TIMEOUT  seconds gpuscope may take (default 20)
#   GPUSCOPE_SYSLOG=0         no syslog
# Needs bash, coreutils (timeout, date) and util-linux (setpriv, logger).
set -u
umask 077
PATH="${PATH:+$PATH:}/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

GPUSCOPE=${GPUSCOPE_BIN:-gpuscope}
URL=${GPUSCOPE_PROMETHEUS_URL:-http://localhost:9090}
TIMEOUT=${GPUSCOPE_SUMMARY_TIMEOUT:-20}
SYSLOG=${GPUSCOPE_SYSLOG:-1}
job_id=${SLURM_JOB_ID:-${SLURM_JOBID:-}}

log() {  # log <priority> <message>
  echo "gpuscope-summary: job ${job_id:-?}: $2" >&2
  if [ "$SYSLOG" = 1 ] && command -v logger >/dev/null 2>&1; then
    logger -t gpuscope-summary -p "user.$1" -- "job ${job_id:-?}: $2" 2>/dev/null || true
  fi
}
give_up() {
  log "$1" "$2"
  exit 0
}

[[ $job_id =~ ^[0-9]+$ ]] || give_up err "SLURM_JOB_ID missing or invalid ('$job_id')"
[[ $TIMEOUT =~ ^[0-9]+$ ]] && [ "$TIMEOUT" -gt 0 ] || give_up err "GPUSCOPE_SUMMARY_TIMEOUT must be whole seconds"
command -v "$GPUSCOPE" >/dev/null 2>&1 || give_up err "gpuscope not found (GPUSCOPE_BIN=$GPUSCOPE)"

record=$(timeout -k 2 10 scontrol show job -o "$job_id" 2>&1) || give_up err "scontrol show job failed: $record"

# One field of the record: values run to the next " Key=" (JobName and paths may hold spaces).
field() {
  local rest=" $record"
  rest=${rest#* "$1"=}
  [ "$rest" != " $record" ] || return 1
  printf '%s' "$rest" | sed -E 's/ [A-Za-z][A-Za-z0-9_:/]*=.*$//'
}

batch_host=$(field BatchHost) || batch_host=
node=${SLURMD_NODENAME:-$(hostname -s)}
[ -z "$batch_host" ] || [ "$batch_host" = "$node" ] || exit 0  # the batch host writes it, once

out=$(field StdOut) || give_up warning "the job has no StdOut (interactive job): nothing to write"
[[ $out == /* ]] || give_up warning "StdOut '$out' is not an absolute path"
[ "$out" != /dev/null ] || exit 0  # output thrown away on purpose
uid=$(field UserId | sed -E 's/.*\(([0-9]+)\)$/\1/')
gid=$(field GroupId | sed -E 's/.*\(([0-9]+)\)$/\1/')
[[ $uid =~ ^[0-9]+$ && $gid =~ ^[0-9]+$ ]] || give_up err "no numeric UserId/GroupId in scontrol's record"

# Look back only over the job's life (plus five minutes), not gpuscope's default week.
lookback=604800
start=$(field StartTime) && start_s=$(date -d "$start" +%s 2>/dev/null) &&
  lookback=$(($(date +%s) - start_s + 300))
[ "$lookback" -gt 0 ] || lookback=600

read -r -a extra <<<"${GPUSCOPE_SUMMARY_ARGS:-}"
report=$(timeout -k 2 "$TIMEOUT" "$GPUSCOPE" job "$job_id" --prometheus.url="$URL" --lookback="$lookback" \
  "${extra[@]}" 2>&1)
rc=$?
case $rc in
  0) ;;
  124 | 137) give_up warning "gpuscope job timed out after ${TIMEOUT} s: no summary written" ;;
  *)
    if [[ $report == *"no gpuscope_job_info for job"* ]]; then exit 0; fi  # no GPUs seen: a CPU job
    give_up warning "gpuscope job exited $rc: ${report//$'\n'/ }"
    ;;
esac

summary=$(printf '\n==== GPU summary (gpuscope job %s) ====\n%s\n' "$job_id" "$report")
if ! printf '%s\n' "$summary" | setpriv --reuid="$uid" --regid="$gid" --clear-groups -- \
  sh -c 'test -f "$1" && test ! -L "$1" && cat >>"$1"' gpuscope-summary "$out" 2>/dev/null; then
  give_up warning "cannot append to $out as uid $uid (gone, a symlink, or not writable)"
fi
exit 0
