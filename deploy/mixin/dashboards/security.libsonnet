// Security (stack document): what the agent sees that a security team wants: GPU work running outside
// any job, process attribution that was refused or contradicted, mapping files rejected, who reads the
// metrics endpoint (and is refused), the drift of agent, driver and MIG configuration across nodes, and,
// from the agent's eBPF programs and Falco/Tetragon (docs/design/ebpf.md): outbound connections outside
// the allow-list, who opens and reads the checkpoint and dataset directories, security events by rule,
// CUDA memory per job, and the probes' own health. The eBPF and security families name the node by
// instance only: c.onNode adds Hostname and keeps the selected nodes. The events themselves (classes
// falco, tetragon, ebpf_*) are in Loki; the mixin's Grafana has no Loki data source, so the panels'
// descriptions give the LogQL instead of a logs panel.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.node;
  local n = c.nodeLabel;
  local j = c.jobLabel;
  local cs = c.sel.cluster;
  // Counters of the eBPF collector and the security source, by node (Hostname) and the given labels:
  // increases over the range or per interval (bars), counting series born within them (the counters of
  // events start at their first event, which increase() alone never shows), or rates.
  local inRange(metric, by, extra='') =
    'sum by (%s) (%s)' % [by, c.onNode(c.increase('%s{%s%s}' % [metric, cs, if extra == '' then '' else ', ' + extra], '$__range'))];
  local perInterval(metric, by, extra='') =
    'sum by (%s) (%s)' % [by, c.onNode(c.increase('%s{%s%s}' % [metric, cs, if extra == '' then '' else ', ' + extra], '$__rate_interval'))];
  local perSecond(metric, by, extra='') =
    'sum by (%s) (%s)' % [by, c.onNode('rate(%s{%s%s}[$__rate_interval])' % [metric, cs, if extra == '' then '' else ', ' + extra])];
  local jobLinks = [{ title: 'L4 job view', url: c.seriesLink(c.uids.l4, 'job', j) }];
  local jobColumn = { [j]: c.cellLink(c.uids.l4, 'job') };
  local nodeColumn = { [n]: c.cellLink(c.uids.l3, 'node') };
  c.dashboard(
    c.uids.security,
    'gpuscope / Security',
    'GPU use outside jobs, attribution anomalies, endpoint access, configuration drift across nodes, and from eBPF and Falco/Tetragon: unexpected connections, checkpoint and dataset access, security events, CUDA memory per job.',
    ['security'],
    [c.variables.cluster, c.variables.node],
    [
      lib.row('GPU use outside jobs'),
      lib.stat('GPUs running processes outside any job',
               [lib.target('count(gpuscope_gpu_processes{%s, %s=""} > 0) or vector(0)' % [s, j])],
               thresholds=[[1, 'orange']],
               w=6,
               description='With the Slurm prolog installed, every GPU process belongs to a job; one that does not is work around the scheduler.'),
      lib.stat('Environ reads denied or contradicting the cgroup (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode('increase(gpuscope_attribution_proc_environ_total{%s, result=~"denied|mismatch"}[$__range])' % cs)),
      ], thresholds=[[1, 'orange']], w=6),
      lib.stat('Mapping files rejected (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode('increase(gpuscope_attribution_mapping_files_ignored_total{%s}[$__range])' % cs)),
      ], thresholds=[[1, 'orange']], w=6),
      lib.stat('Refused metrics requests (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode('increase(gpuscope_http_requests_total{%s, code=~"401|403"}[$__range])' % cs)),
      ], thresholds=[[1, 'orange']], w=6),
      lib.timeseries('GPU processes outside any job', [
        lib.target('sum by (%s, gpu) (gpuscope_gpu_processes{%s, %s=""}) > 0' % [n, s, j], '{{%s}} GPU {{gpu}}' % n),
      ], bars=true),
      lib.timeseries('GPU memory of processes outside any job', [
        lib.target('sum by (%s, gpu, pid) (gpuscope_gpu_process_memory_bytes{%s, %s=""})' % [n, s, j], '{{%s}} GPU {{gpu}} pid {{pid}}' % n),
      ], unit='bytes'),

      lib.row('Attribution and access'),
      lib.timeseries('/proc environ reads by result', [
        lib.target('sum by (%s, result) (%s)' % [n, c.onNode('rate(gpuscope_attribution_proc_environ_total{%s}[$__rate_interval])' % cs)], '{{%s}} {{result}}' % n),
      ], description='denied: the agent is not root and the process belongs to another user; mismatch: the environment names another job than the cgroup (ignored).', w=8),
      lib.timeseries('Mapping files ignored by reason', [
        lib.target('sum by (%s, reason) (%s)' % [n, c.onNode('increase(gpuscope_attribution_mapping_files_ignored_total{%s}[$__rate_interval])' % cs)], '{{%s}} {{reason}}' % n),
      ], bars=true, w=8),
      lib.timeseries('Metrics endpoint responses by code', [
        lib.target('sum by (code) (%s)' % c.onNode('rate(gpuscope_http_requests_total{%s}[$__rate_interval])' % cs), '{{code}}'),
      ], unit='reqps', w=8, description='401/403: scrapers without valid credentials (basic auth, TLS client certificates).'),

      lib.row('Drift'),
      lib.table('Agent versions', [
        lib.target('count by (version, revision) (%s)' % c.onNode('gpuscope_build_info{%s}' % cs)),
      ], renames={ Value: 'Agents' }, w=8),
      lib.table('Driver versions and GPU models', [
        lib.target('count by (DCGM_FI_DRIVER_VERSION, modelName) (gpuscope_gpu_up{%s})' % s),
      ], renames={ Value: 'GPUs' }, w=8),
      lib.table('MIG mode', [
        lib.target('count by (mig_mode, modelName) (gpuscope_gpu_info{%s})' % s),
      ], renames={ Value: 'GPUs' }, w=8),
      lib.timeseries('Agent collectors failing', [
        lib.target('sum by (%s) (%s)' % [n, c.onNode('1 - gpuscope_collector_success{%s}' % cs)], '{{%s}} collectors failing' % n),
        lib.target('count(up{%s} == 0) or vector(0)' % cs, 'agents down'),
      ], bars=true, w=24, description='A silent agent is a blind spot: collectors failing and agents not scraped.'),

      lib.row('Outbound connections (eBPF)'),
      lib.stat('Unexpected connections (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode(c.increase('gpuscope_ebpf_unexpected_connections_total{%s}' % cs, '$__range'))),
      ], thresholds=[[1, 'red']], w=6, description='Outbound TCP connects of job processes to destinations outside the agent\'s allow-list (--ebpf.allow). Alert: GpuJobUnexpectedConnection.'),
      lib.stat('Jobs with unexpected connections (range)', [
        lib.target('count(%s > 0) or vector(0)' % inRange('gpuscope_ebpf_unexpected_connections_total', j)),
      ], thresholds=[[1, 'red']], w=6),
      lib.timeseries('Outbound connections, allowed and not', [
        lib.target(perSecond('gpuscope_ebpf_connections_total', 'allowed, family'), 'allowed={{allowed}} {{family}}'),
      ], unit='cps', w=12, stack=true, description='Every outbound TCP connect of a job process (TCP_SYN_SENT), by whether the allow-list covers it. Without an allow-list every connect is counted and none is unexpected.'),
      lib.table('Unexpected connections by job and destination (range)', [
        lib.target('%s > 0' % inRange('gpuscope_ebpf_unexpected_connections_total', '%s, %s, destination' % [n, j])),
      ], renames={ Value: 'Connections' }, columnLinks=jobColumn + nodeColumn, w=12, description='An empty job is a process in no job. At most 64 destinations per job, then "other". Click a job for its L4 view. Loki: {class="ebpf_unexpected_connection"}.'),
      lib.timeseries('Unexpected connections by job and destination', [
        lib.target(perInterval('gpuscope_ebpf_unexpected_connections_total', '%s, destination' % j) + ' > 0', '{{%s}} → {{destination}}' % j),
      ], bars=true, w=12, links=jobLinks),

      lib.row('Checkpoint and dataset access (eBPF)'),
      lib.stat('Opens of another user\'s files (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode(c.increase('gpuscope_ebpf_file_foreign_opens_total{%s}' % cs, '$__range'))),
      ], thresholds=[[1, 'red']], w=6, description='Opens below a watched directory (--ebpf.watch-dir) of a file owned by another user than the opener. Alert: GpuJobCheckpointForeignAccess.'),
      lib.table('Foreign opens by user and owner (range)', [
        lib.target('%s > 0' % inRange('gpuscope_ebpf_file_foreign_opens_total', '%s, %s, dir, user, owner' % [n, j])),
      ], renames={ Value: 'Opens', user: 'Opened by', owner: 'File owner' }, columnLinks=jobColumn + nodeColumn, w=18, h=6, description='user opened files of owner below dir; an empty job is a process in no job. Loki: {class="ebpf_foreign_file_access"}.'),
      lib.table('Opens by job, directory and user (range)', [
        lib.target('%s > 0' % inRange('gpuscope_ebpf_file_opens_total', '%s, dir, user' % j)),
      ], renames={ Value: 'Opens' }, columnLinks=jobColumn, w=12),
      lib.timeseries('Opens by directory and user', [
        lib.target(perSecond('gpuscope_ebpf_file_opens_total', 'dir, user'), '{{dir}} {{user}}'),
      ], unit='ops', w=12),
      lib.timeseries('Bytes read and written by job and directory', [
        lib.target(perSecond('gpuscope_ebpf_file_read_bytes_total', '%s, dir' % j), '{{%s}} {{dir}} read' % j),
        lib.target(perSecond('gpuscope_ebpf_file_written_bytes_total', '%s, dir' % j), '{{%s}} {{dir}} written' % j),
      ], unit='Bps', negativeY='.* written', w=12, links=jobLinks, description='Reads and writes on files opened below a watched directory; writes below the axis.'),
      lib.timeseries('I/O time by job, directory and operation', [
        lib.target(perSecond('gpuscope_ebpf_file_io_seconds_total', '%s, dir, op' % j), '{{%s}} {{dir}} {{op}}' % j),
      ], unit='s', w=12, links=jobLinks, description='Seconds spent in those reads and writes per second: 1 is one thread busy with I/O all the time. A job waiting on its dataset or checkpoint shows here first.'),

      lib.row('Falco and Tetragon'),
      lib.stat('Critical security events (range)', [
        lib.target('sum(%s) or vector(0)' % c.onNode(c.increase('gpuscope_security_events_total{%s, %s}' % [cs, 'source="falco", priority=~"(?i)critical|alert|emergency"'], '$__range')), 'Falco'),
        lib.target('sum(%s) or vector(0)' % c.onNode(c.increase('gpuscope_security_events_total{%s, %s}' % [cs, 'source="tetragon", priority=~"(?i)critical"'], '$__range')), 'Tetragon'),
      ], thresholds=[[1, 'red']], w=6, description='Falco events at priority critical, alert or emergency (FalcoCriticalEvent) and Tetragon enforcing actions (TetragonPolicyEnforced).'),
      lib.table('Security events by rule and priority (range)', [
        lib.target('%s > 0' % inRange('gpuscope_security_events_total', '%s, source, rule, priority, %s' % [n, j])),
      ], renames={ Value: 'Events' }, columnLinks=jobColumn + nodeColumn, w=18, h=6, description='Falco: its rule and priority; Tetragon: the policy (else the event kind) and the severity the agent gives it (critical: an enforcing action).'),
      lib.timeseries('Security events by rule and priority', [
        lib.target(perInterval('gpuscope_security_events_total', 'source, rule, priority') + ' > 0', '{{source}} {{priority}}: {{rule}}'),
      ], bars=true, w=12),
      lib.timeseries('Security event classes shipped', [
        lib.target(perInterval('gpuscope_events_total', 'class, severity', 'class=~"falco|tetragon|ebpf_.*"') + ' > 0', '{{class}} {{severity}}'),
      ], bars=true, w=12, description='The events the agent ships to Loki and OTLP logs (once per job, destination or file and minute for the eBPF classes). Loki: {class=~"falco|tetragon|ebpf_.*", host=~"$node"}.'),

      lib.row('CUDA memory per job (eBPF)'),
      lib.timeseries('CUDA memory per job', [
        lib.target('sum by (%s) (%s)' % [j, c.onNode('gpuscope_ebpf_cuda_memory_bytes{%s}' % cs)], '{{%s}}' % j),
      ], unit='bytes', w=12, links=jobLinks, description='Device memory the job\'s live processes hold through the probed CUDA allocation entry points (cuMemAlloc*, freed by cuMemFree*); an empty job is a process in no job.'),
      lib.timeseries('CUDA allocation rate per job', [
        lib.target(perSecond('gpuscope_ebpf_cuda_allocated_bytes_total', j), '{{%s}}' % j),
      ], unit='Bps', w=12, links=jobLinks),
      lib.timeseries('CUDA allocations and frees per job', [
        lib.target(perSecond('gpuscope_ebpf_cuda_allocations_total', j), '{{%s}} allocations' % j),
        lib.target(perSecond('gpuscope_ebpf_cuda_frees_total', j), '{{%s}} frees' % j),
      ], unit='ops', negativeY='.* frees', w=12, links=jobLinks),
      lib.timeseries('CUDA allocation failures by job and result', [
        lib.target(perInterval('gpuscope_ebpf_cuda_allocation_failures_total', '%s, result' % j) + ' > 0', '{{%s}} {{result}}' % j),
      ], bars=true, w=12, links=jobLinks, description='CUresult of each failed allocation (CUDA_ERROR_OUT_OF_MEMORY: the job asked for more than the GPU had free).'),

      lib.row('eBPF probes'),
      lib.stat('eBPF programs not loaded', [
        lib.target('count(%s == 0) or vector(0)' % c.onNode('gpuscope_ebpf_program_loaded{%s}' % cs)),
      ], thresholds=[[1, 'orange']], w=6, description='On nodes whose agent runs with --ebpf. A program not loaded is a blind spot (GpuscopeEbpfProgramNotLoaded).'),
      lib.stat('CUDA libraries probed', [
        lib.target('sum(%s) or vector(0)' % c.onNode('gpuscope_ebpf_cuda_libraries{%s}' % cs)),
      ], w=6),
      lib.table('eBPF programs by node', [
        lib.target('min by (%s, program) (%s)' % [n, c.onNode('gpuscope_ebpf_program_loaded{%s}' % cs)]),
      ], renames={ Value: 'Loaded' }, columnLinks=nodeColumn, w=12, h=6),
      lib.timeseries('Records lost and load or attach failures', [
        lib.target(perInterval('gpuscope_ebpf_records_lost_total', '%s, program' % n), '{{%s}} {{program}} lost' % n),
        lib.target(perInterval('gpuscope_ebpf_program_errors_total', '%s, program, stage' % n), '{{%s}} {{program}} {{stage}} failed' % n),
      ], bars=true, w=24, description='Records the kernel dropped because the ring buffer was full: connections, opens or allocations the counters miss.'),
    ],
  )
