#!/bin/sh
# gpuscope Slurm HealthCheckProgram: runs `gpuscope check` against the node's own agent, drains the node
# when a check fails (reason "gpuscope: <finding>") and resumes it when nothing fails any more, but only a
# drain gpuscope set itself (someone else's drain is left alone). Findings other than PASS, the verdict and
# what was done in Slurm go to syslog (tag gpuscope-check) and to stdout.
#
# slurmd runs this as root every HealthCheckInterval seconds with an almost empty environment (only
# SLURMD_NODENAME), so settings come from a file of shell variables, GPUSCOPE_CHECK_DEFAULTS (default
# /etc/default/gpuscope-check), all optional:
#   GPUSCOPE=/usr/local/bin/gpuscope          the command
#   GPUSCOPE_AGENT_URL=http://127.0.0.1:9400  the node's agent
#   GPUSCOPE_CHECK_ARGS="--expect-gpus=8 --expect-driver=550"   more flags (see docs/cli/check.md)
#   GPUSCOPE_CHECK_TIMEOUT=50                 seconds before the check is killed (slurmd kills at 60)
#   GPUSCOPE_SYSLOG=0                         not to log to syslog
# Exit status: gpuscope check's (0 pass, 1 warn, 2 fail); slurmd ignores it, the drain is the action.
set -u
PATH="${PATH:+$PATH:}/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export LC_ALL=C

DEFAULTS=${GPUSCOPE_CHECK_DEFAULTS:-/etc/default/gpuscope-check}
# shellcheck disable=SC1090
[ -r "$DEFAULTS" ] && . "$DEFAULTS"
GPUSCOPE=${GPUSCOPE:-gpuscope}
AGENT_URL=${GPUSCOPE_AGENT_URL:-http://127.0.0.1:9400}
TIMEOUT=${GPUSCOPE_CHECK_TIMEOUT:-50}
SYSLOG=${GPUSCOPE_SYSLOG:-1}

set -- check --agent.url="$AGENT_URL" --slurm-drain --slurm-resume-if-clean
[ -n "${SLURMD_NODENAME:-}" ] && set -- "$@" --node-name="$SLURMD_NODENAME"
# GPUSCOPE_CHECK_ARGS is split on blanks on purpose: flags without spaces in their values.
# shellcheck disable=SC2086
output=$(timeout "$TIMEOUT" "$GPUSCOPE" "$@" ${GPUSCOPE_CHECK_ARGS:-} 2>&1)
status=$?
[ "$status" -eq 124 ] && output="${output}
FAIL  gpuscope check did not finish within ${TIMEOUT} s"
printf '%s\n' "$output"
if [ "$SYSLOG" = 1 ] && command -v logger >/dev/null 2>&1; then
  printf '%s\n' "$output" | grep -v '^PASS ' | logger -t gpuscope-check || true
fi
exit "$status"
