#!/bin/bash
# gpuscope Slurm prolog: records which job holds which GPU, for gpuscope-agent and dcgm-exporter.
#
# For each GPU allocated to the job on this node it writes, in $GPUSCOPE_MAPPING_DIR:
#   <nvml index>             dcgm-exporter's mapping file: one job id per line (a GPU shared by several
#                            jobs lists them all); read unchanged by dcgm-exporter --hpc-job-mapping-dir.
#   gpuscope-job.<job id>    gpuscope's record: job, user, uid, account, partition, name, array ids, the
#                            GPUs as NVML indices and as /dev/nvidiaN minors (see deploy/slurm/README.md).
# Every file is written to a temporary name in the same directory and renamed (atomic: a reader sees the
# old or the new file, never half of one); changes to the shared per-GPU files are made under flock.
#
# Slurm gives GPU *indices* (SLURM_JOB_GPUS): positions in gres.conf's File= list, i.e. /dev/nvidiaN
# minors with the usual File=/dev/nvidia[0-N]. NVML numbers GPUs in PCI bus order, which can differ from
# the minors, so each minor is mapped to its NVML index through the agent's device map
# ($GPUSCOPE_DEVICE_MAP), else /proc/driver/nvidia/gpus/*/information + nvidia-smi, else identity (with
# a warning).
#
# A prolog that fails drains the node, so mapping errors are logged (stderr and syslog) and the script
# exits 0; set GPUSCOPE_PROLOG_STRICT=1 to exit 1 instead (sites where unattributed GPUs are worse).
# Needs bash, coreutils and flock (util-linux); logger and iconv are used when present.
set -u
umask 022
PATH="${PATH:+$PATH:}/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

MAP_DIR=${GPUSCOPE_MAPPING_DIR:-/run/gpuscope/jobs}
DEVICE_MAP=${GPUSCOPE_DEVICE_MAP:-/run/gpuscope/devices}
PROC_GPUS=${GPUSCOPE_PROC_NVIDIA_GPUS:-/proc/driver/nvidia/gpus}
NVIDIA_SMI=${GPUSCOPE_NVIDIA_SMI:-nvidia-smi}
STRICT=${GPUSCOPE_PROLOG_STRICT:-0}
SYSLOG=${GPUSCOPE_SYSLOG:-1}
LOCK_TIMEOUT=${GPUSCOPE_LOCK_TIMEOUT:-30}

job_id=${SLURM_JOB_ID:-${SLURM_JOBID:-}}

log() {  # log <priority> <message>
  echo "gpuscope-prolog: job ${job_id:-?}: $2" >&2
  if [ "$SYSLOG" = 1 ] && command -v logger >/dev/null 2>&1; then
    logger -t gpuscope-prolog -p "user.$1" -- "job ${job_id:-?}: $2" 2>/dev/null || true
  fi
}
give_up() {
  log err "$1; GPU attribution for this job is incomplete"
  if [ "$STRICT" = 1 ]; then exit 1; fi
  exit 0
}

# One value for the key=value record: no control bytes (a newline would forge a key), valid UTF-8,
# at most 1024 bytes (the agent rejects lines over 4096 bytes).
clean() {
  local v=$1
  v=${v//[$'\001'-$'\037'$'\177']/ }
  if command -v iconv >/dev/null 2>&1; then
    v=$(printf '%s' "$v" | iconv -f UTF-8 -t UTF-8 -c 2>/dev/null) || v=""
  else
    v=${v//[$'\200'-$'\377']/?}
  fi
  if [ "${#v}" -gt 1024 ]; then v=""; fi
  printf '%s' "$v"
}

# "0,2-3" -> "0 2 3"; returns 1 on anything that is not a list of numbers and ranges.
expand_list() {
  local item out="" i lo hi
  local IFS=,
  for item in $1; do
    if [[ $item =~ ^[0-9]+$ ]]; then
      out+="$((10#$item)) "
    elif [[ $item =~ ^([0-9]+)-([0-9]+)$ ]]; then
      lo=$((10#${BASH_REMATCH[1]})); hi=$((10#${BASH_REMATCH[2]}))
      [ "$hi" -ge "$lo" ] && [ $((hi - lo)) -le 1024 ] || return 1
      for ((i = lo; i <= hi; i++)); do out+="$i "; done
    elif [ -n "$item" ]; then
      return 1
    fi
  done
  printf '%s' "${out% }"
}

# "00000000:3B:00.0" (nvidia-smi) and "0000:3b:00.0" (/proc) -> "0000:3b:00.0".
normalize_bus_id() {
  local b=${1,,} domain
  b=${b//[[:space:]]/}
  [[ $b =~ ^([0-9a-f]+):([0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f])$ ]] || return 1
  domain=${BASH_REMATCH[1]}
  domain=${domain: -4}
  printf '%04x:%s' "$((16#$domain))" "${BASH_REMATCH[2]}"
}

declare -A MINOR_TO_INDEX=()
MAP_SOURCE=""

load_device_map() {  # lines: nvml_index minor pci_bus_id uuid
  local idx minor rest
  [ -r "$DEVICE_MAP" ] && [ -f "$DEVICE_MAP" ] || return 1
  while read -r idx minor rest; do
    [[ $idx =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || continue
    MINOR_TO_INDEX[$((10#$minor))]=$((10#$idx))
  done < "$DEVICE_MAP"
  [ "${#MINOR_TO_INDEX[@]}" -gt 0 ] || return 1
  MAP_SOURCE="device map $DEVICE_MAP"
}

load_proc_and_nvidia_smi() {
  local info dir bus key value minor idx line
  declare -A bus_to_minor=()
  [ -d "$PROC_GPUS" ] || return 1
  command -v "$NVIDIA_SMI" >/dev/null 2>&1 || return 1
  for info in "$PROC_GPUS"/*/information; do
    [ -r "$info" ] || continue
    dir=${info%/information}
    bus=$(normalize_bus_id "${dir##*/}") || continue
    while IFS=: read -r key value; do
      if [ "$key" = "Device Minor" ]; then
        value=${value//[[:space:]]/}
        [[ $value =~ ^[0-9]+$ ]] && bus_to_minor[$bus]=$((10#$value))
      fi
    done < "$info"
  done
  [ "${#bus_to_minor[@]}" -gt 0 ] || return 1
  while IFS=, read -r idx bus; do
    idx=${idx//[[:space:]]/}
    [[ $idx =~ ^[0-9]+$ ]] || continue
    bus=$(normalize_bus_id "$bus") || continue
    minor=${bus_to_minor[$bus]:-}
    [ -n "$minor" ] && MINOR_TO_INDEX[$minor]=$((10#$idx))
  done < <("$NVIDIA_SMI" --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null)
  [ "${#MINOR_TO_INDEX[@]}" -gt 0 ] || return 1
  MAP_SOURCE="$PROC_GPUS and nvidia-smi"
}

# Rewrites $MAP_DIR/<gpu key> with this job's id added (atomically; caller holds the lock).
add_job_to_gpu_file() {
  local file="$MAP_DIR/$1" tmp line
  tmp=$(mktemp "$MAP_DIR/.gpuscope-tmp.XXXXXX") || return 1
  {
    if [ -f "$file" ] && [ ! -L "$file" ]; then
      while IFS= read -r line || [ -n "$line" ]; do
        line=${line//[[:space:]]/}
        [[ $line =~ ^[0-9]+(_[0-9]+)?$ ]] && [ "$line" != "$job_id" ] && printf '%s\n' "$line"
      done < "$file"
    fi
    printf '%s\n' "$job_id"
  } > "$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$file" && return 0
  rm -f "$tmp"
  return 1
}

# --- main --------------------------------------------------------------------------------------------
[[ $job_id =~ ^[0-9]+$ ]] || give_up "SLURM_JOB_ID missing or invalid ('$job_id')"

# SLURM_JOB_GPUS: Prolog and Epilog environment (slurm.conf(5) of Slurm 22.05). CUDA_VISIBLE_DEVICES and
# GPU_DEVICE_ORDINAL (reported for older releases' prologs) are fallbacks, read as the same Slurm indices.
raw_gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-${GPU_DEVICE_ORDINAL:-}}}
if [ -z "$raw_gpus" ] || [ "$raw_gpus" = "NoDevFiles" ]; then
  exit 0  # no GPUs on this node for this job: nothing to record
fi
slurm_indices=$(expand_list "$raw_gpus") || give_up "cannot parse the GPU list '$raw_gpus'"

# Slurm index -> minor: identity with gres.conf File=/dev/nvidia[0-N]; otherwise list the minors of
# gres.conf's File= entries, in order, in GPUSCOPE_GRES_MINORS (e.g. "0,1,3,2").
declare -a gres_minors=()
if [ -n "${GPUSCOPE_GRES_MINORS:-}" ]; then
  read -r -a gres_minors <<< "$(expand_list "$GPUSCOPE_GRES_MINORS")" ||
    give_up "cannot parse GPUSCOPE_GRES_MINORS"
fi

load_device_map || load_proc_and_nvidia_smi || {
  MAP_SOURCE="identity"
  log warning "no device map ($DEVICE_MAP) and no /proc + nvidia-smi: assuming NVML index = minor"
}

gpus=()
minors=()
for slurm_index in $slurm_indices; do
  minor=$slurm_index
  if [ "${#gres_minors[@]}" -gt 0 ]; then
    minor=${gres_minors[$slurm_index]:-}
    [ -n "$minor" ] || { log err "Slurm GPU index $slurm_index is not in GPUSCOPE_GRES_MINORS"; continue; }
  fi
  if [ "$MAP_SOURCE" = "identity" ]; then
    index=$minor
  else
    index=${MINOR_TO_INDEX[$minor]:-}
    [ -n "$index" ] || { log err "minor $minor is not in the $MAP_SOURCE; GPU skipped"; continue; }
  fi
  gpus+=("$index")
  minors+=("$minor")
done
[ "${#gpus[@]}" -gt 0 ] || give_up "none of the GPUs '$raw_gpus' could be mapped to an NVML index"

mkdir -p "$MAP_DIR" 2>/dev/null  # 0755 through the umask
if [ ! -d "$MAP_DIR" ] || [ ! -w "$MAP_DIR" ]; then give_up "mapping directory $MAP_DIR is missing or not writable"; fi
exec 9>>"$MAP_DIR/.gpuscope.lock" || give_up "cannot open the lock file in $MAP_DIR"
flock -w "$LOCK_TIMEOUT" 9 || give_up "timed out waiting for the lock on $MAP_DIR"

status=0
for index in "${gpus[@]}"; do
  add_job_to_gpu_file "$index" || { log err "cannot update $MAP_DIR/$index"; status=1; }
done

record_tmp=$(mktemp "$MAP_DIR/.gpuscope-tmp.XXXXXX") || give_up "cannot create a temporary file in $MAP_DIR"
gpu_list=$(IFS=,; printf '%s' "${gpus[*]}")
minor_list=$(IFS=,; printf '%s' "${minors[*]}")
array_job_id=${SLURM_ARRAY_JOB_ID:-}
array_task_id=${SLURM_ARRAY_TASK_ID:-}
[[ $array_job_id =~ ^[0-9]*$ ]] || array_job_id=""
[[ $array_task_id =~ ^[0-9]*$ ]] || array_task_id=""
uid=${SLURM_JOB_UID:-}
[[ $uid =~ ^[0-9]*$ ]] || uid=""
if {
  printf '# gpuscope job record, written by deploy/slurm/prolog.sh (%s)\n' "$MAP_SOURCE"
  printf 'version=1\n'
  printf 'job_id=%s\n' "$job_id"
  printf 'user=%s\n' "$(clean "${SLURM_JOB_USER:-}")"
  printf 'uid=%s\n' "$uid"
  printf 'account=%s\n' "$(clean "${SLURM_JOB_ACCOUNT:-}")"
  printf 'partition=%s\n' "$(clean "${SLURM_JOB_PARTITION:-}")"
  printf 'job_name=%s\n' "$(clean "${SLURM_JOB_NAME:-}")"
  printf 'array_job_id=%s\n' "$array_job_id"
  printf 'array_task_id=%s\n' "$array_task_id"
  printf 'step_id=\n'
  printf 'gpus=%s\n' "$gpu_list"
  printf 'minors=%s\n' "$minor_list"
} > "$record_tmp" && chmod 0644 "$record_tmp" && mv -f "$record_tmp" "$MAP_DIR/gpuscope-job.$job_id"; then
  :
else
  rm -f "$record_tmp"
  log err "cannot write $MAP_DIR/gpuscope-job.$job_id"
  status=1
fi

[ "$status" = 0 ] || give_up "some mapping files could not be written"
exit 0
