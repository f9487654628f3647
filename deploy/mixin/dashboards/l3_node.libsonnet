// L3 Node view: one host's GPUs side by side, their NVLink and PCIe links, the jobs on them; each GPU
// links to its L5 view, each job to its L4 view.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.node;
  local n = c.nodeLabel;
  local j = c.jobLabel;
  c.dashboard(
    c.uids.l3,
    'gpuscope / L3 Node',
    'One node: per-GPU utilisation, memory, temperature, power, throttling, NVLink, PCIe, jobs. Up: L2 Cluster; down: L4 Job, L5 GPU.',
    ['gpu', 'node'],
    [c.variables.cluster, c.variables.singleNode],
    [
      lib.row('GPUs'),
      c.panels.gpusWithWorkload('GPUs of the node', s, c.workloads.job),
      lib.timeseries('Utilisation per GPU',
                     [lib.target('max by (gpu) (%s)' % c.util(s), 'GPU {{gpu}}')],
                     unit='percentunit',
                     min=0,
                     max=1),
      lib.timeseries('Memory used per GPU',
                     [lib.target('max by (gpu) (DCGM_FI_DEV_FB_USED{%s, GPU_I_ID=""})' % s, 'GPU {{gpu}}')],
                     unit='decmbytes'),
      lib.timeseries('Temperature per GPU', [
        lib.target('max by (gpu) (DCGM_FI_DEV_GPU_TEMP{%s})' % s, 'GPU {{gpu}}'),
        lib.target('max by (gpu) (DCGM_FI_DEV_MEMORY_TEMP{%s})' % s, 'GPU {{gpu}} HBM'),
      ], unit='celsius', thresholds=[[85, 'red']], w=8),
      lib.timeseries('Power per GPU', [
        lib.target('max by (gpu) (DCGM_FI_DEV_POWER_USAGE{%s})' % s, 'GPU {{gpu}}'),
      ], unit='watt', w=8),
      lib.timeseries('Throttle reasons (share of time, node)',
                     [
                       lib.target('avg by (reason) (%s{%s})' % [c.rec.clockEvent, s], '{{reason}}'),
                     ],
                     unit='percentunit',
                     bars=true,
                     stack=true,
                     w=8,
                     description='Mean share of time each policy held the GPUs of the node below their target clocks.'),

      lib.row('NVLink and PCIe'),
      lib.timeseries('NVLink bandwidth per GPU (tx up, rx down)', [
        lib.target('sum by (gpu, direction) (rate(gpuscope_nvlink_data_bytes_total{%s}[$__rate_interval]))' % s, 'GPU {{gpu}} {{direction}}'),
      ], unit='Bps', negativeY='.* rx'),
      lib.timeseries('NVLink errors per GPU and link', [
        lib.target('sum by (gpu, link, counter) (%s{%s}) > 0' % [c.rec.nvlinkErrors, c.sel.aggNode], 'GPU {{gpu}} link {{link}} {{counter}}'),
      ], unit='short', bars=true, description='Errors per second over the last 5 minutes; only links with errors appear.'),
      lib.timeseries('PCIe throughput per GPU (tx up, rx down)', [
        lib.target('max by (gpu, direction) (gpuscope_gpu_pcie_bytes_per_second{%s})' % s, 'GPU {{gpu}} {{direction}}'),
      ], unit='Bps', negativeY='.* rx'),
      lib.table('PCIe links: negotiated vs capable', [
        lib.target('max by (gpu, pci_bus_id) (DCGM_FI_DEV_PCIE_LINK_GEN{%s})' % s),
        lib.target('max by (gpu, pci_bus_id) (gpuscope_gpu_pcie_link_max_generation{%s})' % s),
        lib.target('max by (gpu, pci_bus_id) (DCGM_FI_DEV_PCIE_LINK_WIDTH{%s})' % s),
        lib.target('max by (gpu, pci_bus_id) (gpuscope_gpu_pcie_link_max_width{%s})' % s),
        lib.target('max by (gpu, pci_bus_id) (increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER{%s}[$__range]))' % s),
      ], renames={ 'Value #A': 'Generation', 'Value #B': 'Max generation', 'Value #C': 'Width', 'Value #D': 'Max width', 'Value #E': 'Replays in range' }, w=12),

      lib.row('DCGM health and profiling'),
      lib.statusMatrix('DCGM health per GPU and system',
                       lib.target('max by (gpu, system) (gpuscope_dcgm_health{%s})' % s),
                       'gpu',
                       'system',
                       [[0, 'pass', 'green'], [1, 'warn', 'orange'], [2, 'fail', 'red']],
                       w=16,
                       description="DCGM's background health watches per GPU and subsystem, now (only where the agent uses DCGM). DCGM's message for a warning or failure is in the node's events of class dcgm_health."),
      lib.table('Profiling source per GPU',
                [lib.target('max by (gpu, modelName, source) (gpuscope_gpu_profiling_info{%s})' % s)],
                hide=['Time', 'Value'],
                w=8,
                description='Where each GPU\'s DCGM_FI_PROF_* fields come from: gpm (the agent\'s own NVML GPM sampling, Hopper and newer) or dcgm (DCGM\'s profiling module, e.g. A100). A GPU has no row while profiling is paused (gpuscope profile-pause; the blue annotation) or has no source.'),

      lib.row('Jobs'),
      lib.table('Jobs on the node',
                [
                  lib.target('max by (%s, user, account, partition, job_name) (gpuscope_job_info{%s})' % [j, s]),
                  lib.target('count by (%s) (DCGM_FI_DEV_GPU_UTIL{%s, %s!=""})' % [j, s, j]),
                ],
                hide=['Time', 'Value #A'],
                renames={ 'Value #B': 'GPUs here' },
                columnLinks={ [j]: c.cellLink(c.uids.l4, 'job') },
                w=12),
      lib.timeseries('Allocated GPUs without a process', [
        lib.target('max by (gpu, %s) (gpuscope_gpu_allocated_without_process{%s})' % [j, s], 'GPU {{gpu}} job {{%s}}' % j),
      ], w=12),
    ],
    annotations=[c.annotations.xid(s), c.annotations.eccDbe(s), c.annotations.profilingPaused(s)],
  )
