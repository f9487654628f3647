// L2 Cluster view: one cluster's GPUs node by node (the node x GPU x time heatmap), allocation by
// partition and account, and the nodes that need attention; each node links to its L3 view.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.cluster;
  local n = c.nodeLabel;
  local util = c.util(s);
  c.dashboard(
    c.uids.l2,
    'gpuscope / L2 Cluster',
    'One cluster: utilisation per node and GPU, allocation by partition and account, health. Up: L1 Fleet; down: L3 Node.',
    ['gpu', 'cluster'],
    [c.variables.cluster, c.variables.account],
    [
      lib.row('Utilisation'),
      lib.heatmap('GPU utilisation heatmap (node x GPU)',
                  [lib.target('100 * max by (%s, gpu) (%s)' % [n, util], '{{%s}} GPU {{gpu}}' % n)],
                  h=12,
                  description='One row per GPU, grouped by node: a dark row is an idle GPU, a dark block an idle node.'),
      lib.timeseries('Utilisation by node',
                     [lib.target('avg by (%s) (%s)' % [n, util], '{{%s}}' % n)],
                     unit='percentunit',
                     min=0,
                     max=1,
                     legendTable=true,
                     links=[{ title: 'L3 node view', url: c.seriesLink(c.uids.l3, 'node', n) }]),
      lib.timeseries('Tensor and memory activity', [
        lib.target('avg(DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{%s, GPU_I_ID=""})' % s, 'tensor pipes'),
        lib.target('avg(DCGM_FI_PROF_DRAM_ACTIVE{%s, GPU_I_ID=""})' % s, 'HBM bandwidth'),
        lib.target('avg(DCGM_FI_DEV_MEM_COPY_UTIL{%s}) / 100' % s, 'memory copy (NVML)'),
      ], unit='percentunit', min=0, max=1),

      lib.row('Allocation'),
      lib.bargauge('Allocation efficiency by account',
                   [
                     lib.target('%s{%s}' % [c.rec.efficiency('account'), c.sel.aggAccount], '{{account}}'),
                   ],
                   thresholds=[[0.5, 'orange'], [0.8, 'green']],
                   w=8,
                   description="Share of the GPUs each account's jobs hold that do work (utilisation at or above the idle threshold)."),
      lib.timeseries('GPUs allocated by partition (Slurm)', [
        lib.target('%s{%s}' % [c.rec.partitionAllocated, c.sel.agg], '{{partition}}'),
      ], unit='percentunit', min=0, max=1, thresholds=[[0.95, 'red']], w=8),
      lib.timeseries('Allocated but idle GPUs by account', [
        lib.target('sum by (account) (%s)' % c.withOwner('gpuscope_gpu_allocated_idle{%s}' % s, c.sel.account), '{{account}}'),
      ], stack=true, w=8),

      lib.row('Nodes'),
      lib.table('Nodes',
                [
                  lib.target('count by (%s) (gpuscope_gpu_up{%s})' % [n, s]),
                  lib.target('avg by (%s) (%s)' % [n, util]),
                  lib.target('count by (%s) (DCGM_FI_DEV_GPU_UTIL{%s, %s!=""}) or count by (%s) (gpuscope_gpu_up{%s}) * 0' % [n, s, c.jobLabel, n, s]),
                  lib.target('max by (%s) (DCGM_FI_DEV_GPU_TEMP{%s})' % [n, s]),
                  lib.target('sum by (%s) (%s{%s})' % [n, c.rec.power('node'), c.sel.agg]),
                  lib.target('sum by (%s) (%s) or count by (%s) (gpuscope_gpu_up{%s}) * 0' % [n, c.increase('gpuscope_xid_errors_total{%s}' % s, '$__range'), n, s]),
                ],
                renames={ 'Value #A': 'GPUs', 'Value #B': 'Utilisation', 'Value #C': 'Allocated', 'Value #D': 'Max temperature', 'Value #E': 'Power', 'Value #F': 'XIDs in range' },
                units={ Utilisation: 'percentunit', 'Max temperature': 'celsius', Power: 'watt' },
                columnLinks={ [n]: c.cellLink(c.uids.l3, 'node') },
                h=10,
                description='Click a node for its L3 view.'),
      lib.table('Nodes draining or down (Slurm)', [
        lib.target('gpuscope_slurm_node_draining{%s} == 1 or gpuscope_slurm_node_down{%s} == 1' % [c.sel.slurm, c.sel.slurm]),
      ], hide=['Time', 'Value', '__name__', 'instance', 'job'], columnLinks={ node: c.cellLink(c.uids.l3, 'node') }, w=12),
      lib.timeseries('GPUs lost per node', [
        lib.target('count by (%s) (gpuscope_gpu_up{%s} == 0)' % [n, s], '{{%s}}' % n),
      ], bars=true, w=12),
    ],
    annotations=[c.annotations.xid(s), c.annotations.drain(c.sel.slurm)],
  )
