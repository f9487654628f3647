// Alerting rules. Every alert carries severity (page | ticket | info), team (infra | ml-platform | the
// owning service | a namespace's team), category (hardware | agent | application | utilisation | capacity |
// inference | events | kubernetes | security | dcgm | profiling; inhibitions match on it), scope (gpu | node | job | cluster |
// service | pod | namespace), and the annotations summary, description and
// runbook_url (docs/runbooks/<AlertName>.md). Alerts about a job's GPUs add owner (the job's user, from
// gpuscope_job_info) so that Alertmanager sends them to the job's owner.
local util = import 'util.libsonnet';

function(cfg)
  local s = cfg.selectors;
  local l = cfg.labels;
  local t = cfg.thresholds;
  local w = cfg.windows;
  local f = cfg['for'];
  local cl = l.clusterLabels;
  local gpuSel(m, extra='') = util.sel(m, s.gpuscope, extra);
  // The labels a GPU-level alert keeps: cluster, the GPU's identity and the job holding it.
  local gpuBy = util.by(cl + l.gpu + [l.job]);
  local serviceTeam = '{{ with $labels.team }}{{ . }}{{ else }}%s{{ end }}' % cfg.teams.serviceDefault;

  // An alert rule with the labels and annotations every alert must have.
  local alert(name, expr, forDuration, severity, team, category, scope, summary, description, labels={}) = {
    alert: name,
    expr: expr,
    'for': forDuration,
    labels: {
      severity: severity,
      team: team,
      category: category,
      scope: scope,
    } + labels,
    annotations: {
      summary: summary,
      description: description,
      runbook_url: cfg.runbookUrlBase + name + '.md',
    },
  };

  // Adds the job's user and account to a GPU-level expression (by hpc_job), keeping the series whose job
  // has no gpuscope_job_info. `owner` (the user) is then set by the alert's labels.
  local withOwner(expr) = |||
    (
      %(expr)s
    )
      * on (%(on)s) group_left (user, account)
    max by (%(on)s, user, account) (%(info)s)
    or ignoring (user, account)
    (
      %(expr)s
    )
  ||| % { expr: expr, on: util.by(cl + [l.job]), info: gpuSel('gpuscope_job_info') };
  local ownerLabels = { owner: '{{ $labels.user }}' };

  // Counters that are created at their first event (XIDs, gpuscope_events_total): an increase within the
  // window, or a series that exists now and did not exist one window ago (more than `above` either way).
  local newEvents(metric, by, window, above=0) = |||
    sum by (%(by)s) (increase(%(m)s[%(w)s])) > %(above)s
    or
    sum by (%(by)s) (%(m)s unless %(m)s offset %(w)s) > %(above)s
  ||| % { by: by, m: metric, w: window, above: util.num(above) };

  local gpuDesc = '{{ $labels.Hostname }} GPU {{ $labels.gpu }} ({{ $labels.UUID }})';

  local hardware = [
    alert(
      'GpuEccDoubleBitError',
      // newEvents: also a GPU whose count is already above zero when it is first scraped (an agent or a
      // Prometheus that starts after the error), which increase() alone never sees.
      newEvents(gpuSel('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL'), gpuBy, w.eccDbe),
      f.eccDbe,
      'page',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'Uncorrectable (double-bit) ECC error on a GPU',
      gpuDesc + ' reported double-bit ECC errors in the last %s; the running job may have read corrupt memory and the GPU may need a reset or RMA.' % w.eccDbe,
    ),
    alert(
      'GpuEccSingleBitErrorSpike',
      'sum by (%s) (increase(%s[%s])) > %g' % [gpuBy, gpuSel('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL'), w.eccSbe, t.eccSbeErrors],
      f.eccSbe,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'Burst of correctable (single-bit) ECC errors on a GPU',
      gpuDesc + ' corrected {{ $value | humanize }} single-bit ECC errors in the last %s (threshold %g); a rising SBE rate often precedes uncorrectable errors.' % [w.eccSbe, t.eccSbeErrors],
    ),
    alert(
      'GpuRowRemapFailure',
      'max by (%s) (%s) > 0' % [gpuBy, gpuSel('DCGM_FI_DEV_ROW_REMAP_FAILURE')],
      f.rowRemapFailure,
      'page',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU memory row remapping failed',
      gpuDesc + ' could not remap a failing memory row: it has no spare rows left. Drain the node and open an RMA.',
    ),
    alert(
      'GpuRowRemapPending',
      |||
        max by (%(by)s) (%(remap)s) > 0
        or
        max by (%(by)s) (%(retire)s) > 0
      ||| % { by: gpuBy, remap: gpuSel('DCGM_FI_DEV_ROW_REMAP_PENDING'), retire: gpuSel('DCGM_FI_DEV_RETIRED_PENDING') },
      f.rowRemapPending,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU memory repair waits for a GPU reset',
      gpuDesc + ' has a row remapping or page retirement pending; it takes effect at the next GPU reset. Reset the GPU when its job ends.',
    ),
    alert(
      'GpuXidCritical',
      newEvents(gpuSel('gpuscope_xid_errors_total', 'action=~"%s"' % std.join('|', cfg.xid.pageActions)), util.by(cl + l.gpu + [l.job, 'xid', 'action']), w.xid),
      f.xidCritical,
      'page',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU reported XID {{ $labels.xid }} (action: {{ $labels.action }})',
      gpuDesc + ' reported XID {{ $labels.xid }} in the last %s; the XID catalog recommends {{ $labels.action }}.' % w.xid,
    ),
    alert(
      'GpuTemperatureHigh',
      'max by (%s) (%s) > %g' % [gpuBy, gpuSel('DCGM_FI_DEV_GPU_TEMP'), t.gpuTempCelsius],
      f.gpuTempHigh,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU hotter than %g °C' % t.gpuTempCelsius,
      gpuDesc + ' has run above %g °C for %s (now {{ $value }} °C).' % [t.gpuTempCelsius, f.gpuTempHigh],
    ),
    alert(
      'GpuPowerThrottling',
      'max by (%s) (rate(%s[%s])) > %g' % [gpuBy, gpuSel('gpuscope_gpu_clock_event_seconds_total', 'reason="power"'), w.throttle, t.powerThrottleRatio],
      f.powerThrottling,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU clocks held down by the power limit',
      gpuDesc + ' spent {{ $value | humanizePercentage }} of the last %s power-throttled (threshold %g).' % [w.throttle, t.powerThrottleRatio],
    ),
    alert(
      'GpuThermalThrottling',
      'max by (%s) (rate(%s[%s])) > %g' % [gpuBy, gpuSel('gpuscope_gpu_clock_event_seconds_total', 'reason="thermal"'), w.throttle, t.thermalThrottleRatio],
      f.thermalThrottling,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU clocks held down by temperature',
      gpuDesc + ' spent {{ $value | humanizePercentage }} of the last %s thermally throttled (threshold %g).' % [w.throttle, t.thermalThrottleRatio],
    ),
    alert(
      'GpuLost',
      'max by (%s) (%s) == 0' % [gpuBy, gpuSel('gpuscope_gpu_up')],
      f.gpuLost,
      'page',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU stopped answering while its agent runs',
      gpuDesc + ' no longer answers NVML (fell off the bus or hangs); the agent on the node is up.',
    ),
    alert(
      'GpuNodeGpusMissing',
      |||
        count by (%(by)s) (count by (%(by)s, UUID) (max_over_time(%(info)s[%(w)s])))
          > (
            count by (%(by)s) (count by (%(by)s, UUID) (%(info)s))
            or
            count by (%(by)s) (count by (%(by)s, UUID) (max_over_time(%(info)s[%(w)s]))) * 0
          )
        and on (instance) %(up)s == 1
      ||| % { by: util.by(cl + ['instance', l.node]), info: gpuSel('gpuscope_gpu_info'), w: w.gpuCountMemory, up: gpuSel('up') },
      f.gpusMissing,
      'page',
      cfg.teams.infra,
      'hardware',
      'node',
      'GPUs disappeared from a node whose agent is up',
      '{{ $labels.Hostname }} shows fewer GPUs than in the last %s ({{ $value }} before); the agent is up, so the driver no longer lists them.' % w.gpuCountMemory,
    ),
    alert(
      'GpuNvlinkErrorsRising',
      // Only the counters that rise are summed (rates are never negative, so the sums over the threshold
      // are the same): the sum groups a few series instead of every link of the fleet.
      'sum by (%s, link) (rate(%s[%s]) > 0) > %g' % [gpuBy, gpuSel('gpuscope_nvlink_errors_total', 'counter=~"crc_flit|crc_data|replay|recovery"'), w.nvlink, t.nvlinkErrorsPerSecond],
      f.nvlinkErrors,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'NVLink errors on a link',
      gpuDesc + ' NVLink link {{ $labels.link }} takes {{ $value | humanize }} CRC/replay/recovery errors per second (threshold %g); collective operations of the job slow down.' % t.nvlinkErrorsPerSecond,
    ),
    alert(
      'GpuPcieLinkDegraded',
      |||
        max by (%(by)s) (%(width)s < %(maxWidth)s)
        or on (instance, pci_bus_id)
        max by (%(byNoJob)s) (
          (%(degraded)s == 1)
            * on (instance, pci_bus_id) group_left (%(node)s, gpu, UUID, modelName)
          max by (instance, pci_bus_id, %(node)s, gpu, UUID, modelName) (%(info)s)
        )
      ||| % {
        by: gpuBy,
        byNoJob: util.by(cl + l.gpu),
        node: l.node,
        width: gpuSel('DCGM_FI_DEV_PCIE_LINK_WIDTH'),
        maxWidth: gpuSel('gpuscope_gpu_pcie_link_max_width'),
        degraded: gpuSel('gpuscope_gpu_pcie_link_degraded'),
        info: gpuSel('gpuscope_gpu_info'),
      },
      f.pcieDegraded,
      'ticket',
      cfg.teams.infra,
      'hardware',
      'gpu',
      'GPU PCIe link narrower than it should be',
      gpuDesc + ' (PCI {{ $labels.pci_bus_id }}) runs its PCIe link, or a link above it, with fewer lanes than both ends support; host-device copies are slower.',
    ),
  ];

  local agent = [
    alert(
      'GpuscopeAgentDown',
      |||
        (%(up)s == 0)
          * on (instance) group_left (%(node)s)
        max by (instance, %(node)s) (max_over_time(%(info)s[%(w)s]))
        or ignoring (%(node)s)
        %(up)s == 0
      ||| % { up: gpuSel('up'), node: l.node, info: gpuSel('gpuscope_gpu_info'), w: w.gpuCountMemory },
      f.agentDown,
      'ticket',
      cfg.teams.infra,
      'agent',
      'node',
      'gpuscope agent unreachable',
      'Prometheus cannot scrape the gpuscope agent at {{ $labels.instance }}{{ with $labels.Hostname }} ({{ . }}){{ end }}: the node is down or the agent stopped. Its GPUs are not monitored.',
    ),
    alert(
      'GpuNodeDraining',
      'label_replace(max by (%s) (%s == 1), "%s", "$1", "%s", "(.*)")' % [
        util.by(cl + [l.slurmNode, 'reason']),
        util.sel('gpuscope_slurm_node_draining', s.slurm),
        l.node,
        l.slurmNode,
      ],
      f.nodeDraining,
      'info',
      cfg.teams.infra,
      'capacity',
      'node',
      'Slurm node draining or drained',
      'Slurm node {{ $labels.node }} is draining or drained (reason: {{ $labels.reason }}); utilisation alerts of its GPUs are inhibited.',
    ),
  ];

  local gpuUtil = 'max by (%s) (gpuscope:gpu_utilisation:ratio{%s!=""})' % [gpuBy, l.job];
  local utilisation = [
    alert(
      'GpuAllocatedIdle',
      withOwner('%s < %g' % [gpuUtil, t.idleUtilisation]),
      f.allocatedIdle,
      'ticket',
      cfg.teams.mlPlatform,
      'utilisation',
      'gpu',
      'GPU allocated to a job but idle',
      '{{ $labels.Hostname }} GPU {{ $labels.gpu }} is allocated to job {{ $labels.hpc_job }}{{ with $labels.user }} of {{ . }}{{ end }} but has run below %g%% utilisation for %s. Release it or fix the job.' % [t.idleUtilisation * 100, f.allocatedIdle],
      ownerLabels,
    ),
    alert(
      'GpuXidApplicationError',
      withOwner(newEvents(gpuSel('gpuscope_xid_errors_total', 'action=~"%s"' % std.join('|', cfg.xid.applicationActions)), util.by(cl + l.gpu + [l.job, 'xid', 'action']), w.xid)),
      f.xidApplication,
      'ticket',
      cfg.teams.mlPlatform,
      'application',
      'gpu',
      'Application-class XID {{ $labels.xid }} on a job GPU',
      gpuDesc + ' reported XID {{ $labels.xid }}{{ with $labels.hpc_job }} while job {{ . }} ran{{ end }}; the XID catalog recommends restarting the application (its code or its memory use is at fault, not the GPU).',
      ownerLabels,
    ),
    alert(
      'GpuTrainingStraggler',
      withOwner(|||
        %(util)s
          < on (%(on)s) group_left ()
        (%(ratio)g * hpc_job:gpu_utilisation:median)
        and on (%(on)s) hpc_job:gpu_utilisation:median >= %(minMedian)g
        and on (%(on)s) count by (%(on)s) (gpuscope:gpu_utilisation:ratio{%(job)s!=""}) >= %(minGpus)d
        unless on (%(on)s) hpc_job:training_compute_seconds_median:min
      ||| % {
        util: gpuUtil,
        on: util.by(cl + [l.job]),
        ratio: t.stragglerRatio,
        minMedian: t.stragglerMinMedian,
        minGpus: t.stragglerMinGpus,
        job: l.job,
      }),
      f.straggler,
      'ticket',
      cfg.teams.mlPlatform,
      'utilisation',
      'gpu',
      'One GPU of a job far below the job median',
      '{{ $labels.Hostname }} GPU {{ $labels.gpu }} of job {{ $labels.hpc_job }} runs at {{ $value | humanizePercentage }} utilisation, below %g of the job median; the whole job waits on it.' % t.stragglerRatio,
      ownerLabels,
    ),
    // The same alert for jobs whose ranks report their own timing: in synchronous training every rank's
    // step takes as long as the slowest one's, so the score compares the time each rank spends outside
    // collectives. The description names the causes found on the rank's GPU and node.
    alert(
      'GpuTrainingStraggler',
      withOwner('rank:training_relative_score:ratio < %g' % t.trainingScore),
      f.trainingStraggler,
      'ticket',
      cfg.teams.mlPlatform,
      'utilisation',
      'gpu',
      'One rank of a job slow on its own work',
      ('Rank {{ $labels.rank }} of job {{ $labels.hpc_job }} on {{ $labels.Hostname }} GPU {{ $labels.gpu }} scores {{ $value | printf "%%.2f" }} (the job\'s fastest rank 1): it spends longer on its own work than the others, who wait for it in every collective. Likely cause:{{ $found := false }}' +
       '{{ with printf `sum(rate(gpuscope_nvlink_errors_total{Hostname="%%s",gpu="%%s"}[%(w)s])) > 0` $labels.Hostname $labels.gpu | query }}{{ $found = true }} NVLink errors on this GPU;{{ end }}' +
       '{{ with printf `max by (reason) (gpuscope_gpu_clock_event_active{Hostname="%%s",gpu="%%s",reason=~"sw_power_cap|hw_slowdown|sw_thermal_slowdown|hw_thermal_slowdown|hw_power_brake_slowdown"} > 0)` $labels.Hostname $labels.gpu | query }}{{ $found = true }} clocks held down ({{ range . }}{{ .Labels.reason }} {{ end }});{{ end }}' +
       '{{ with printf `sum(increase(gpuscope_xid_errors_total{Hostname="%%s",gpu="%%s"}[30m])) > 0` $labels.Hostname $labels.gpu | query }}{{ $found = true }} XID errors on this GPU;{{ end }}' +
       '{{ with printf `sum(rate(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{Hostname="%%s",gpu="%%s"}[%(w)s])) > 0` $labels.Hostname $labels.gpu | query }}{{ $found = true }} PCIe replays on this GPU;{{ end }}' +
       '{{ with printf `sum(rate(gpuscope_training_dataloader_wait_seconds_total{hpc_job="%%s",rank="%%s"}[%(w)s])) / sum(rate(gpuscope_training_step_duration_seconds_sum{hpc_job="%%s",rank="%%s"}[%(w)s])) > %(loader)g` $labels.hpc_job $labels.rank $labels.hpc_job $labels.rank | query }}{{ $found = true }} waits on its data loader;{{ end }}' +
       '{{ if not $found }} none on the GPU (NVLink, clocks, XID, PCIe) or in the data loader: see the runbook for CPU/NUMA placement and InfiniBand.{{ end }}') % {
        w: w.rate,
        loader: t.trainingLoaderWaitRatio,
      },
      ownerLabels,
    ),
    alert(
      'GpuTrainingHang',
      withOwner(|||
        (
          %(seq)s
            < on (%(on)s) group_left ()
          max by (%(on)s) (%(seq)s)
        )
        and
        (time() - %(progress)s > %(hang)d)
      ||| % {
        seq: gpuSel('gpuscope_training_collective_seq'),
        progress: gpuSel('gpuscope_training_collective_progress_timestamp_seconds'),
        on: util.by(cl + [l.job, 'comm']),
        hang: t.trainingHangSeconds,
      }),
      f.trainingHang,
      'ticket',
      cfg.teams.mlPlatform,
      'application',
      'job',
      'A rank of a job stopped entering collectives',
      'Rank {{ $labels.rank }} of job {{ $labels.hpc_job }} on {{ $labels.Hostname }}{{ with $labels.gpu }} GPU {{ . }}{{ end }} is stuck after collective {{ $value }} on communicator {{ $labels.comm }} for more than %ds while other ranks moved on; the job will hang until NCCL\'s or PyTorch\'s timeout kills it.' % t.trainingHangSeconds,
      ownerLabels,
    ),
  ];

  local capacity = [
    alert(
      'GpuClusterAllocationHigh',
      '(cluster:slurm_gpu_allocated:ratio or cluster:gpu_allocated:ratio) > %g' % t.allocationRatio,
      f.allocationHigh,
      'ticket',
      cfg.teams.mlPlatform,
      'capacity',
      'cluster',
      'Cluster GPUs nearly all allocated',
      '{{ $value | humanizePercentage }} of the cluster{{ with $labels.cluster }} {{ . }}{{ end }} GPUs are allocated (threshold %g); new jobs will queue.' % t.allocationRatio,
    ),
    alert(
      'GpuPartitionAllocationHigh',
      'partition:slurm_gpu_allocated:ratio > %g' % t.allocationRatio,
      f.allocationHigh,
      'info',
      cfg.teams.mlPlatform,
      'capacity',
      'cluster',
      'Partition GPUs nearly all allocated',
      '{{ $value | humanizePercentage }} of the GPUs of partition {{ $labels.partition }} are allocated (threshold %g).' % t.allocationRatio,
    ),
  ];

  local vllmBy = util.by(cl + ['team'] + l.vllmService);
  local tritonBy = util.by(cl + ['team'] + l.tritonService);
  local drop(metric, by, minBaseline) = |||
    sum by (%(by)s) (rate(%(m)s[%(w)s]))
      < %(keep)g * sum by (%(by)s) (rate(%(m)s[%(w)s] offset %(off)s))
    and sum by (%(by)s) (rate(%(m)s[%(w)s] offset %(off)s)) >= %(min)g
  ||| % { by: by, m: metric, w: w.throughput, off: w.throughputBaselineOffset, keep: 1 - t.throughputDropRatio, min: minBaseline };
  local inference = [
    alert(
      'VllmP99LatencyHigh',
      'histogram_quantile(0.99, sum by (%s, le) (rate(%s[%s]))) > %g' % [vllmBy, util.sel('vllm:e2e_request_latency_seconds_bucket', s.vllm), w.inferenceLatency, t.vllmP99LatencySeconds],
      f.inferenceLatency,
      'page',
      serviceTeam,
      'inference',
      'service',
      'vLLM p99 request latency above %gs' % t.vllmP99LatencySeconds,
      'vLLM {{ $labels.job }} model {{ $labels.model_name }}: p99 end-to-end request latency is {{ $value | humanizeDuration }} over %s (SLO threshold %gs).' % [w.inferenceLatency, t.vllmP99LatencySeconds],
    ),
    alert(
      'VllmTokenThroughputDrop',
      drop(util.sel('vllm:generation_tokens_total', s.vllm), vllmBy, t.vllmMinBaselineTokensPerSecond),
      f.throughputDrop,
      'ticket',
      serviceTeam,
      'inference',
      'service',
      'vLLM generated-token throughput dropped',
      'vLLM {{ $labels.job }} model {{ $labels.model_name }} generates {{ $value | humanize }} tokens/s, more than %g%% below the rate %s earlier.' % [t.throughputDropRatio * 100, w.throughputBaselineOffset],
    ),
    alert(
      'TritonP99LatencyHigh',
      'max by (%s) (%s) / 1e6 > %g' % [tritonBy, util.sel('nv_inference_request_summary_us', s.triton, 'quantile="0.99"'), t.tritonP99LatencySeconds],
      f.inferenceLatency,
      'page',
      serviceTeam,
      'inference',
      'service',
      'Triton p99 request latency above %gs' % t.tritonP99LatencySeconds,
      'Triton {{ $labels.job }} model {{ $labels.model }} (version {{ $labels.version }}): p99 request latency is {{ $value | humanizeDuration }} (SLO threshold %gs). Needs --metrics-config summary_latencies=true.' % t.tritonP99LatencySeconds,
    ),
    alert(
      'TritonInferenceThroughputDrop',
      drop(util.sel('nv_inference_count', s.triton), tritonBy, t.tritonMinBaselineInferencesPerSecond),
      f.throughputDrop,
      'ticket',
      serviceTeam,
      'inference',
      'service',
      'Triton inference throughput dropped',
      'Triton {{ $labels.job }} model {{ $labels.model }} (version {{ $labels.version }}) performs {{ $value | humanize }} inferences/s, more than %g%% below the rate %s earlier.' % [t.throughputDropRatio * 100, w.throughputBaselineOffset],
    ),
  ];

  // The agent's own series (the event path) name the node by instance only: add the node's Hostname from
  // gpuscope_gpu_info, keeping the series of agents that list no GPU.
  local nodeOf = cl + ['instance'];
  local nodeBy = util.by(nodeOf);
  // A multi-line expression as a block `pad` deeper than its first line.
  local indent(expr, pad='  ') = std.join('\n' + pad, std.split(std.rstripChars(expr, '\n'), '\n'));
  local withNode(expr) = |||
    (
      %(expr)s
    )
      * on (%(on)s) group_left (%(node)s)
    max by (%(on)s, %(node)s) (%(info)s)
    or ignoring (%(node)s)
    (
      %(expr)s
    )
  ||| % { expr: indent(expr), on: nodeBy, node: l.node, info: gpuSel('gpuscope_gpu_info') };
  local nodeDesc = '{{ with $labels.Hostname }}{{ . }}{{ else }}{{ $labels.instance }}{{ end }}';
  local ev = cfg.events;
  local eventsOf(classes, extra='') =
    gpuSel('gpuscope_events_total', std.join(', ', std.filter(function(x) x != '', ['class=~"%s"' % std.join('|', classes), extra])));
  local sxid(severityMatch) = newEvents(eventsOf([ev.sxidClass], 'severity%s"%s"' % [severityMatch, std.join('|', ev.sxidPageSeverities)]), nodeBy, w.sxid);
  local shippingSeconds = util.seconds(w.eventShipping);
  local perSink = util.by(nodeOf + ['sink']);
  local consumerAsSink(m) = 'label_replace(%s, "sink", "$1", "consumer", "(.+)")' % m;
  local lostAt(stage, expr) = 'label_replace(%s > %s, "stage", "%s", "", "")' % [expr, util.num(t.eventsLost), stage];
  local events = [
    alert(
      'GpuNodeCollectiveErrors',
      withNode(newEvents(eventsOf(ev.collectiveClasses), util.by(nodeOf + ['class']), w.collectiveErrors, t.collectiveErrorEvents)),
      f.collectiveErrors,
      'ticket',
      cfg.teams.mlPlatform,
      'events',
      'node',
      'NCCL collective timeouts or InfiniBand completion errors on a node',
      nodeDesc + ' logged %sevents ({{ $labels.class }}) in the last %s: an NCCL collective timed out (nccl_watchdog) or InfiniBand work requests completed with an error (ib_completion). Distributed jobs on the node hang or fail; the fabric or a peer node is often the cause.' % [if t.collectiveErrorEvents > 0 then 'more than %s ' % util.num(t.collectiveErrorEvents) else '', w.collectiveErrors],
    ),
    alert(
      'GpuNodeOomKills',
      withNode(newEvents(eventsOf(ev.oomClasses), util.by(nodeOf + ['class']), w.oomKills, t.oomEvents)),
      f.oomKills,
      'ticket',
      cfg.teams.mlPlatform,
      'events',
      'node',
      'Out-of-memory kills or CUDA out-of-memory errors on a GPU node',
      nodeDesc + ' logged %sevents ({{ $labels.class }}) in the last %s: the kernel or a memory cgroup killed a process (oom) or a process ran out of GPU memory (cuda_oom). The jobs concerned failed.' % [if t.oomEvents > 0 then 'more than %s ' % util.num(t.oomEvents) else '', w.oomKills],
    ),
    alert(
      'GpuNvswitchFatalError',
      withNode(sxid('=~')),
      f.sxidFatal,
      'page',
      cfg.teams.infra,
      'events',
      'node',
      'Fatal NVSwitch (SXid) error on a node',
      nodeDesc + ' reported a fatal NVSwitch SXid error in the last %s: NVLink traffic through the switch is broken, the jobs using it have failed, and the GPUs need a reset (usually a node reboot).' % w.sxid,
    ),
    alert(
      'GpuNvswitchError',
      withNode(|||
        (
          %s
        )
        unless on (%s)
        (
          %s
        )
      ||| % [indent(sxid('!~')), nodeBy, indent(sxid('=~'))]),
      f.sxid,
      'ticket',
      cfg.teams.infra,
      'events',
      'node',
      'Non-fatal NVSwitch (SXid) errors on a node',
      nodeDesc + ' reported non-fatal NVSwitch SXid errors in the last %s: NVLink traffic was corrected or retried. Repeated errors on one switch port point at a link or switch to service.' % w.sxid,
    ),
    alert(
      'GpuscopeEventShippingFailing',
      withNode(|||
        (
          min by (%(perSink)s) (min_over_time(%(backoff)s[%(w)s])) > 0
          or
          (
            (time() - max by (%(perSink)s) (%(last)s)) > %(secs)d
            and on (%(perSink)s)
            max by (%(perSink)s) (%(queued)s) > 0
          )
        )
        and on (%(by)s)
        (time() - max by (%(by)s) (%(start)s)) > %(secs)d
      ||| % {
        perSink: perSink,
        by: nodeBy,
        w: w.eventShipping,
        secs: shippingSeconds,
        backoff: gpuSel('gpuscope_sink_retry_backoff_seconds'),
        last: gpuSel('gpuscope_sink_last_success_timestamp_seconds'),
        queued: consumerAsSink(gpuSel('gpuscope_queue_records', 'queue="%s"' % ev.queue)),
        start: gpuSel('process_start_time_seconds'),
      }),
      f.eventShipping,
      'ticket',
      cfg.teams.infra,
      'events',
      'node',
      'gpuscope cannot ship events to {{ $labels.sink }}',
      nodeDesc + ' has delivered no events to its {{ $labels.sink }} sink for %s: the sink kept retrying (the receiver is down, refuses or cannot be reached) or records waited in the queue without a delivery. Events pile up in the durable queue on the node, and the oldest are dropped when it is full.' % w.eventShipping,
    ),
    alert(
      'GpuscopeEventsLost',
      withNode(|||
        %(queue)s
        or
        %(sink)s
        or
        %(pipeline)s
        or
        %(kmsg)s
      ||| % {
        queue: lostAt('queue', 'sum by (%s) (%s)' % [
          perSink + ', reason',
          consumerAsSink('increase(%s[%s])' % [gpuSel('gpuscope_queue_dropped_total', 'queue="%s"' % ev.queue), w.eventsLost]),
        ]),
        sink: lostAt('sink', 'sum by (%s, reason) (increase(%s[%s]))' % [perSink, gpuSel('gpuscope_sink_dropped_records_total'), w.eventsLost]),
        pipeline: lostAt('pipeline', 'sum by (%s, reason) (increase(%s[%s]))' % [nodeBy, gpuSel('gpuscope_events_not_shipped_total'), w.eventsLost]),
        kmsg: lostAt('kmsg', 'sum by (%s) (increase(%s[%s]))' % [nodeBy, gpuSel('gpuscope_kmsg_missed_records_total'), w.eventsLost]),
      }),
      f.eventsLost,
      'ticket',
      cfg.teams.infra,
      'events',
      'node',
      'gpuscope lost events ({{ $labels.stage }})',
      nodeDesc + ' lost events in the last %s at stage {{ $labels.stage }}{{ with $labels.sink }}, sink {{ . }}{{ end }}{{ with $labels.reason }}, reason {{ . }}{{ end }}: they will not reach Loki/OTLP (kmsg: the kernel overwrote them before the agent read them, so the event counters miss them too).' % w.eventsLost,
    ),
  ];

  [
    { name: 'gpuscope.hardware.alerts', rules: hardware },
    { name: 'gpuscope.agent.alerts', rules: agent },
    { name: 'gpuscope.utilisation.alerts', rules: utilisation },
    { name: 'gpuscope.capacity.alerts', rules: capacity },
    { name: 'gpuscope.inference.alerts', rules: inference },
    { name: 'gpuscope.events.alerts', rules: events },
    { name: 'gpuscope.kubernetes.alerts', rules: (import 'kubernetes_alerts.libsonnet')(cfg, alert) },
    { name: 'gpuscope.dcgm.alerts', rules: (import 'dcgm_alerts.libsonnet')(cfg, alert) },
    {
      name: 'gpuscope.security.alerts',
      rules: (import 'security_alerts.libsonnet')(cfg, alert, { newEvents: newEvents, withNode: withNode }),
    },
  ]
