// Security (stack document): what the agent sees that a security team wants: GPU work running outside
// any job, process attribution that was refused or contradicted, mapping files rejected, who reads the
// metrics endpoint (and is refused), and the drift of agent, driver and MIG configuration across nodes.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.node;
  local n = c.nodeLabel;
  local j = c.jobLabel;
  local cs = c.sel.cluster;
  c.dashboard(
    c.uids.security,
    'gpuscope / Security',
    'GPU use outside jobs, attribution anomalies, endpoint access, and configuration drift across nodes.',
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
    ],
  )
