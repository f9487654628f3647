// L5 GPU detail: one GPU, all of its counters over time: activity, clocks, thermals and power, the
// throttle-reason breakdown, the ECC/XID timeline, NVLink per link and direction, PCIe, processes.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.uuid;
  c.dashboard(
    c.uids.l5,
    'gpuscope / L5 GPU',
    'One GPU, every counter: the forensic view. Up: L3 Node, L4 Job.',
    ['gpu'],
    [c.variables.cluster, c.variables.singleNode, c.variables.singleGpu, c.variables.uuid],
    [
      lib.row('Now'),
      lib.stat('Up', [lib.target('max(gpuscope_gpu_up{%s})' % s)], thresholds=[[0, 'red'], [1, 'green']], w=3),
      lib.stat('Utilisation', [lib.target('max(%s)' % c.util(s))], unit='percentunit', w=3),
      lib.stat('Temperature',
               [lib.target('max(DCGM_FI_DEV_GPU_TEMP{%s})' % s)],
               unit='celsius',
               thresholds=[[80, 'orange'], [85, 'red']],
               w=3),
      lib.stat('Power', [lib.target('max(DCGM_FI_DEV_POWER_USAGE{%s})' % s)], unit='watt', w=3),
      lib.stat('Double-bit ECC (lifetime)', [lib.target('max(DCGM_FI_DEV_ECC_DBE_AGG_TOTAL{%s})' % s)], thresholds=[[1, 'red']], w=3),
      lib.stat('Retired pages',
               [lib.target('max(DCGM_FI_DEV_RETIRED_SBE{%s}) + max(DCGM_FI_DEV_RETIRED_DBE{%s})' % [s, s])],
               thresholds=[[1, 'orange']],
               w=3),
      lib.stat('Row remap pending', [lib.target('max(DCGM_FI_DEV_ROW_REMAP_PENDING{%s})' % s)], thresholds=[[1, 'orange']], w=3),
      c.panels.workloadOfGpu(s, c.workloads.job),
      c.panels.workloadOfGpu(s, c.workloads.pod),

      lib.row('Activity'),
      lib.timeseries('Activity', [
        lib.target('max(DCGM_FI_DEV_GPU_UTIL{%s}) / 100' % s, 'GPU utilisation (NVML)'),
        lib.target('max by (__name__) ({__name__=~"DCGM_FI_PROF_(SM_ACTIVE|SM_OCCUPANCY|PIPE_TENSOR_ACTIVE|DRAM_ACTIVE|PIPE_FP16_ACTIVE|PIPE_FP32_ACTIVE|PIPE_FP64_ACTIVE|GR_ENGINE_ACTIVE)", %s, GPU_I_ID=""})' % s, '{{__name__}}'),
      ], unit='percentunit', min=0, max=1, legendTable=true, w=24),
      lib.timeseries('Clocks', [
        lib.target('max(DCGM_FI_DEV_SM_CLOCK{%s})' % s, 'SM'),
        lib.target('max(DCGM_FI_DEV_MEM_CLOCK{%s})' % s, 'memory'),
      ], unit='MHz', w=8),
      lib.timeseries('Temperature', [
        lib.target('max(DCGM_FI_DEV_GPU_TEMP{%s})' % s, 'GPU'),
        lib.target('max(DCGM_FI_DEV_MEMORY_TEMP{%s})' % s, 'HBM'),
      ], unit='celsius', thresholds=[[85, 'red']], w=8),
      lib.timeseries('Power', [
        lib.target('max(DCGM_FI_DEV_POWER_USAGE{%s})' % s, 'draw'),
        lib.target('max(DCGM_FI_DEV_ENFORCED_POWER_LIMIT{%s})' % s, 'enforced limit'),
      ], unit='watt', w=8),
      lib.timeseries('Frame buffer', [
        lib.target('max(DCGM_FI_DEV_FB_USED{%s, GPU_I_ID=""})' % s, 'used'),
        lib.target('max(DCGM_FI_DEV_FB_FREE{%s, GPU_I_ID=""})' % s, 'free'),
      ], unit='decmbytes', stack=true, w=8),
      lib.timeseries('Memory per process', [
        lib.target('sum by (pid) (gpuscope_gpu_process_memory_bytes{%s})' % s, 'pid {{pid}}'),
      ], unit='bytes', stack=true, w=8),
      lib.timeseries('Encoder and decoder', [
        lib.target('max(DCGM_FI_DEV_ENC_UTIL{%s})' % s, 'encoder'),
        lib.target('max(DCGM_FI_DEV_DEC_UTIL{%s})' % s, 'decoder'),
      ], unit='percent', w=8),

      lib.row('Throttling'),
      lib.timeseries('Throttle-reason breakdown (share of time)',
                     [
                       lib.target('sum by (reason) (rate(gpuscope_gpu_clock_event_seconds_total{%s}[$__rate_interval]))' % s, '{{reason}}'),
                     ],
                     unit='percentunit',
                     bars=true,
                     stack=true,
                     description='Share of each interval the policy held the clocks below target, by reason (NVML violation counters).'),
      lib.timeseries('Clock-event reasons active', [
        lib.target('max by (reason) (gpuscope_gpu_clock_event_active{%s}) > 0' % s, '{{reason}}'),
      ], bars=true, stack=true, description='Reasons holding the clocks at each scrape (gpu_idle: the GPU is idle).'),

      lib.row('Errors'),
      lib.timeseries('ECC and XID timeline', [
        lib.target('sum(increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'single-bit ECC'),
        lib.target('sum(increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'double-bit ECC'),
        lib.target('sum by (xid) (%s)' % c.increase('gpuscope_xid_errors_total{%s}' % s, '$__rate_interval'), 'XID {{xid}}'),
      ], bars=true, description='Error counts per interval; the annotations mark each XID (with its recommended action) and each double-bit error.'),
      lib.timeseries('Retired pages and remapped rows', [
        lib.target('max(DCGM_FI_DEV_RETIRED_SBE{%s})' % s, 'retired (single-bit)'),
        lib.target('max(DCGM_FI_DEV_RETIRED_DBE{%s})' % s, 'retired (double-bit)'),
        lib.target('max(DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS{%s})' % s, 'remapped rows (correctable)'),
        lib.target('max(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{%s})' % s, 'remapped rows (uncorrectable)'),
        lib.target('max(DCGM_FI_DEV_ROW_REMAP_FAILURE{%s})' % s, 'remap failure'),
      ]),

      lib.row('NVLink'),
      lib.timeseries('NVLink per link (tx up, rx down)', [
        lib.target('sum by (link, direction) (rate(gpuscope_nvlink_data_bytes_total{%s}[$__rate_interval]))' % s, 'link {{link}} {{direction}}'),
      ], unit='Bps', negativeY='.* rx', legendTable=true, w=24),
      lib.timeseries('NVLink errors per link', [
        lib.target('sum by (link, counter) (rate(gpuscope_nvlink_errors_total{%s}[$__rate_interval]))' % s, 'link {{link}} {{counter}}'),
      ], unit='short', bars=true, stack=true, legendTable=true),
      lib.timeseries('NVLink links up', [
        lib.target('max by (link) (gpuscope_nvlink_up{%s})' % s, 'link {{link}}'),
      ], stack=true),

      lib.row('PCIe'),
      lib.timeseries('PCIe throughput (tx up, rx down)', [
        lib.target('max by (direction) (gpuscope_gpu_pcie_bytes_per_second{%s})' % s, '{{direction}}'),
      ], unit='Bps', negativeY='rx', w=8),
      lib.timeseries('PCIe link vs capability', [
        lib.target('max(DCGM_FI_DEV_PCIE_LINK_GEN{%s})' % s, 'generation'),
        lib.target('max(gpuscope_gpu_pcie_link_max_generation{%s})' % s, 'max generation'),
        lib.target('max(DCGM_FI_DEV_PCIE_LINK_WIDTH{%s})' % s, 'width'),
        lib.target('max(gpuscope_gpu_pcie_link_max_width{%s})' % s, 'max width'),
      ], w=8),
      lib.timeseries('PCIe replays', [
        lib.target('sum(increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[$__rate_interval]))' % s, 'replays'),
      ], bars=true, w=8),
    ],
    // The pause is the node's: its series carry no gpu label.
    annotations=[c.annotations.xid(s), c.annotations.eccDbe(s), c.annotations.profilingPaused(c.sel.node)],
  )
