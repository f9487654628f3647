// Security alerts (group gpuscope.security.alerts), built with the `alert` and helpers of
// lib/alerts.libsonnet, on the families of the agent's `ebpf` collector (gpuscope_ebpf_*) and its Falco and
// Tetragon source (gpuscope_security_events_total); docs/design/ebpf.md has the families and labels.
// Every one has team security (Alertmanager's `security` receiver) and category security, which no
// inhibition holds back: what a job did on a node stays visible when that node's agent goes down or its
// GPUs misbehave, and a probe that fails to load says nothing about the GPUs.
//
// The agent's own series name the node by instance only: withNode adds Hostname where the node lists
// GPUs. The counters are created at their first event (value 1), so newEvents counts series born within
// the window as well as increases.
local util = import 'util.libsonnet';

function(cfg, alert, h)
  local s = cfg.selectors;
  local l = cfg.labels;
  local f = cfg['for'];
  local w = cfg.windows.security;
  local sec = cfg.security;
  local cl = l.clusterLabels;
  local team = cfg.teams.security;
  local sel(m, extra='') = util.sel(m, s.gpuscope, extra);
  local by(labels) = util.by(cl + ['instance'] + labels);
  local nodeDesc = '{{ with $labels.Hostname }}{{ . }}{{ else }}{{ $labels.instance }}{{ end }}';
  local jobDesc = '{{ with $labels.hpc_job }}job {{ . }}{{ with $labels.user }} of {{ . }}{{ end }}{{ else }}a process in no job{{ end }}';
  // A multi-line expression as a block two deeper than its first line.
  local indent(expr) = std.join('\n  ', std.split(std.rstripChars(expr, '\n'), '\n'));
  // A regex matching any of the values, without regard to case.
  local anyOf(values) = '(?i)%s' % std.join('|', values);

  // Adds the job's user and account (gpuscope_job_info) to an expression by hpc_job, keeping the series
  // of processes in no job or in a job the agent has no mapping for. No `owner` label: a security alert
  // goes to the security team, never to the owner of the job it is about.
  local withJobUser(expr) = |||
    (
      %(expr)s
    )
      * on (%(on)s) group_left (user, account)
    max by (%(on)s, user, account) (%(info)s)
    or ignoring (user, account)
    (
      %(expr)s
    )
  ||| % { expr: indent(expr), on: util.by(cl + [l.job]), info: sel('gpuscope_job_info') };

  // The family's `owner` (the file's owner) becomes `file_owner`: elsewhere in the mixin `owner` is the
  // job's user, whom Alertmanager's job-owner route notifies.
  local ownerAsFileOwner(expr) =
    'label_replace(label_replace(\n  %s\n, "file_owner", "$1", "owner", "(.*)"), "owner", "", "", "")' %
    indent(expr);

  local ignoredUsers = if sec.foreignOpenIgnoredUsers == [] then '' else 'user!~"%s"' % std.join('|', sec.foreignOpenIgnoredUsers);

  [
    alert(
      'GpuJobUnexpectedConnection',
      h.withNode(withJobUser(h.newEvents(sel('gpuscope_ebpf_unexpected_connections_total'), by([l.job, 'destination']), w))),
      f.unexpectedConnection,
      'ticket',
      team,
      'security',
      'job',
      'A job connected outside the allow-list',
      'On %s, %s opened outbound TCP connections to {{ $labels.destination }} in the last %s, a destination outside the agent\'s allow-list (--ebpf.allow). Data may be leaving the cluster, or the job needs a service the list does not name.' % [nodeDesc, jobDesc, w],
    ),
    alert(
      'GpuJobCheckpointForeignAccess',
      h.withNode(ownerAsFileOwner(h.newEvents(sel('gpuscope_ebpf_file_foreign_opens_total', ignoredUsers), by([l.job, 'dir', 'user', 'owner']), w))),
      f.foreignFileAccess,
      'ticket',
      team,
      'security',
      'job',
      'A process of another user opened files in a checkpoint or dataset directory',
      'On %s, user {{ $labels.user }} ({{ with $labels.hpc_job }}job {{ . }}{{ else }}a process in no job{{ end }}) opened files of {{ $labels.file_owner }} below the watched directory {{ $labels.dir }} in the last %s. Checkpoints and datasets are read by their owner\'s jobs; another user reading them may be copying a model or data.' % [nodeDesc, w],
    ),
    alert(
      'FalcoCriticalEvent',
      h.withNode(h.newEvents(sel('gpuscope_security_events_total', 'source="falco", priority=~"%s"' % anyOf(sec.falcoCriticalPriorities)), by([l.job, 'rule', 'priority']), w)),
      f.falcoCritical,
      'page',
      team,
      'security',
      'node',
      'Falco event at priority {{ $labels.priority }}: {{ $labels.rule }}',
      'Falco on %s reported events of rule "{{ $labels.rule }}" at priority {{ $labels.priority }} in the last %s{{ with $labels.hpc_job }} from a process of job {{ . }}{{ end }}. The events, with their output fields, are in Loki under class="falco".' % [nodeDesc, w],
    ),
    alert(
      'TetragonPolicyEnforced',
      h.withNode(h.newEvents(sel('gpuscope_security_events_total', 'source="tetragon", priority=~"%s"' % anyOf(sec.tetragonEnforcedPriorities)), by([l.job, 'rule']), w)),
      f.tetragonEnforced,
      'ticket',
      team,
      'security',
      'node',
      'Tetragon policy {{ $labels.rule }} enforced',
      'Tetragon on %s took an enforcing action (killed the process, overrode or signalled a call) under policy "{{ $labels.rule }}" in the last %s{{ with $labels.hpc_job }} against a process of job {{ . }}{{ end }}. The attempt was stopped; what attempted it is the question. The events are in Loki under class="tetragon".' % [nodeDesc, w],
    ),
    alert(
      'GpuscopeEbpfProgramNotLoaded',
      h.withNode('max by (%s) (%s) == 0' % [by(['program']), sel('gpuscope_ebpf_program_loaded')]),
      f.ebpfProgramNotLoaded,
      'ticket',
      team,
      'security',
      'node',
      'gpuscope eBPF program {{ $labels.program }} is not loaded',
      'The agent at {{ $labels.instance }}{{ with $labels.Hostname }} ({{ . }}){{ end }} runs with --ebpf but its {{ $labels.program }} program has not been loaded and attached for %s: %s The agent\'s log says why; gpuscope_ebpf_program_errors_total counts the failures by stage (load, attach).' % [
        f.ebpfProgramNotLoaded,
        '{{ if eq $labels.program "connect" }}outbound connections of jobs are not seen, so none is flagged as unexpected.{{ else if eq $labels.program "files" }}opens, reads and writes below the watched directories are not seen, so no foreign access is flagged.{{ else if eq $labels.program "cuda" }}CUDA memory per job is not measured.{{ else }}its records are missing.{{ end }}',
      ],
    ),
  ]
