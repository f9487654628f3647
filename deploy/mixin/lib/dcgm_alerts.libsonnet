// DCGM and profiling-pause alerts (group gpuscope.dcgm.alerts), built with the `alert` of
// lib/alerts.libsonnet, on the families of the agent's optional DCGM backend and its profiling pause:
//   gpuscope_dcgm_health{<GPU labels>, system}  0 pass, 1 warn, 2 fail (systems pcie, memory, inforom,
//                                              thermal, power, nvlink): DCGM's background health watches
//   gpuscope_dcgm_up{mode}                      1 connected, 0 configured but not connected; absent when the
//                                              agent does not use DCGM (off, or not installed)
//   gpuscope_profiling_paused                   1 while `gpuscope profile-pause` holds (DCGM's profiling
//   gpuscope_profiling_pause_expiry_timestamp_seconds   module and the agent's GPM sampling stopped)
// Every family carries Hostname; the GPU families the GPU identity labels (and hpc_job like every GPU
// family).
//
// The health alerts are hardware findings about one GPU (category hardware, scope gpu), routed and held
// back like the other GPU hardware alerts. The DCGM connection and the pause are categories of their own
// (dcgm, profiling): neither means the node's GPUs are unwatched (NVML goes on), so neither holds back the
// node's GPU alerts the way a node-level hardware or agent alert does.
local util = import 'util.libsonnet';

function(cfg, alert)
  local s = cfg.selectors;
  local l = cfg.labels;
  local f = cfg['for'];
  local cl = l.clusterLabels;
  local sel(m, extra='') = util.sel(m, s.gpuscope, extra);
  local gpuBy = util.by(cl + l.gpu + [l.job, 'system']);
  local nodeBy = util.by(cl + ['instance']);
  local gpuDesc = '{{ $labels.Hostname }} GPU {{ $labels.gpu }} ({{ $labels.UUID }})';
  local health = sel('gpuscope_dcgm_health');
  local events = 'DCGM\'s own words are in the node\'s events of class dcgm_health';

  [
    alert(
      'GpuDcgmHealthFailure',
      'max by (%s) (%s) == 2' % [gpuBy, health],
      f.dcgmHealthFailure,
      'page',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'DCGM health check fails for a GPU ({{ $labels.system }})',
      gpuDesc + ' fails DCGM\'s {{ $labels.system }} health check: DCGM judged the GPU unfit for work in that subsystem; %s. Drain the node before more jobs land on the GPU.' % events,
    ),
    alert(
      'GpuDcgmHealthWarning',
      'max by (%s) (%s) == 1' % [gpuBy, health],
      f.dcgmHealthWarning,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'DCGM health check warns for a GPU ({{ $labels.system }})',
      gpuDesc + ' has had a DCGM {{ $labels.system }} health warning for %s: the GPU still works, but the subsystem degrades; %s.' % [f.dcgmHealthWarning, events],
    ),
    alert(
      'GpuscopeDcgmDown',
      // 0 means configured but not connected; a node where any mode is connected is fine (the agent
      // switching modes leaves the old series for a scrape or two).
      |||
        max by (%(by)s, %(node)s, mode) (%(up)s) == 0
        unless on (%(by)s)
        max by (%(by)s) (%(up)s) == 1
      ||| % { by: nodeBy, node: l.node, up: sel('gpuscope_dcgm_up') },
      f.dcgmDown,
      'ticket',
      cfg.teams.infra,
      'dcgm',
      'node',
      'gpuscope has no working DCGM connection',
      '{{ $labels.Hostname }}\'s agent is set to use DCGM ({{ $labels.mode }}) but has had no working connection for %s: DCGM\'s health checks and the profiling fields it gives (DCGM_FI_PROF_* on GPUs without GPM, such as A100) are missing. The NVML metrics go on.' % f.dcgmDown,
    ),
    alert(
      'GpuProfilingPausedTooLong',
      // The value is when the pause ends by itself.
      |||
        max by (%(by)s, %(node)s) (%(expiry)s)
          and on (%(by)s)
        max by (%(by)s) (%(paused)s) == 1
      ||| % {
        by: nodeBy,
        node: l.node,
        expiry: sel('gpuscope_profiling_pause_expiry_timestamp_seconds'),
        paused: sel('gpuscope_profiling_paused'),
      },
      f.profilingPausedTooLong,
      'info',
      cfg.teams.infra,
      'profiling',
      'node',
      'GPU profiling paused on a node for more than %s' % f.profilingPausedTooLong,
      'Profiling on {{ $labels.Hostname }} has been paused (gpuscope profile-pause) for more than %s; it resumes by itself at {{ $value | humanizeTimestamp }}. Meanwhile DCGM\'s profiling fields and the agent\'s GPM sampling are stopped: SM, tensor and DRAM activity are missing, and while they are the mixin\'s utilisation is NVML\'s GPU utilisation. A forgotten pause ends with `gpuscope profile-resume` on the node.' % f.profilingPausedTooLong,
    ),
  ]
