#!/bin/bash
# gpuscope Slurm epilog: removes this job from the mapping directory written by prolog.sh.
#
# Every GPU file (named by a GPU key, "3" or "3.1") that lists this job is rewritten without it
# (temporary file + rename, under the same flock as the prolog) and deleted when no job is left; the
# job's gpuscope record is deleted. It looks at every GPU file rather than recomputing the prolog's GPU
# list, so a device map that changed in between cannot leave a stale line behind.
#
# Errors are logged (stderr and syslog) and the script exits 0: a failing epilog drains the node. Set
# GPUSCOPE_PROLOG_STRICT=1 to exit 1 instead. Needs bash, coreutils and flock.
set -u
umask 022
PATH="${PATH:+$PATH:}/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

MAP_DIR=${GPUSCOPE_MAPPING_DIR:-/run/gpuscope/jobs}
STRICT=${GPUSCOPE_PROLOG_STRICT:-0}
SYSLOG=${GPUSCOPE_SYSLOG:-1}
LOCK_TIMEOUT=${GPUSCOPE_LOCK_TIMEOUT:-30}

job_id=${SLURM_JOB_ID:-${SLURM_JOBID:-}}

log() {  # log <priority> <message>
  echo "gpuscope-epilog: job ${job_id:-?}: $2" >&2
  if [ "$SYSLOG" = 1 ] && command -v logger >/dev/null 2>&1; then
    logger -t gpuscope-epilog -p "user.$1" -- "job ${job_id:-?}: $2" 2>/dev/null || true
  fi
}
give_up() {
  log err "$1"
  if [ "$STRICT" = 1 ]; then exit 1; fi
  exit 0
}

[[ $job_id =~ ^[0-9]+$ ]] || give_up "SLURM_JOB_ID missing or invalid ('$job_id')"
[ -d "$MAP_DIR" ] || exit 0  # nothing was ever written here
exec 9>>"$MAP_DIR/.gpuscope.lock" || give_up "cannot open the lock file in $MAP_DIR"
flock -w "$LOCK_TIMEOUT" 9 || give_up "timed out waiting for the lock on $MAP_DIR"

status=0
for file in "$MAP_DIR"/*; do
  name=${file##*/}
  [[ $name =~ ^[0-9]+(\.[0-9]+)?$ ]] || continue
  if [ ! -f "$file" ] || [ -L "$file" ]; then continue; fi
  found=0
  kept=()
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line//[[:space:]]/}
    if [ "$line" = "$job_id" ]; then
      found=1
    elif [[ $line =~ ^[0-9]+(_[0-9]+)?$ ]]; then
      kept+=("$line")
    fi
  done < "$file"
  [ "$found" = 1 ] || continue
  if [ "${#kept[@]}" -eq 0 ]; then
    rm -f "$file" || { log err "cannot remove $file"; status=1; }
    continue
  fi
  tmp=$(mktemp "$MAP_DIR/.gpuscope-tmp.XXXXXX") || { log err "cannot create a temporary file"; status=1; continue; }
  if printf '%s\n' "${kept[@]}" > "$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$file"; then
    :
  else
    rm -f "$tmp"
    log err "cannot rewrite $file"
    status=1
  fi
done
rm -f "$MAP_DIR/gpuscope-job.$job_id" || { log err "cannot remove the job record"; status=1; }

[ "$status" = 0 ] || give_up "some mapping files could not be cleaned up"
exit 0
