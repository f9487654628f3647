// L1 Fleet overview: every cluster, every GPU. How busy is the fleet, how much of it is allocated and
// used, where is it unhealthy; each cluster links to its L2 view.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.cluster;
  local cl = c.clusterLabel;
  c.dashboard(
    c.uids.l1,
    'gpuscope / L1 Fleet',
    'All clusters and GPUs: utilisation, allocation, health. Drill down: L2 Cluster.',
    ['gpu', 'fleet'],
    [c.variables.cluster],
    [
      lib.row('Fleet'),
      lib.stat('GPUs reporting', [lib.target('sum(gpuscope_gpu_up{%s})' % s)]),
      lib.stat('GPUs lost',
               [lib.target('count(gpuscope_gpu_up{%s} == 0) or vector(0)' % s)],
               thresholds=[[1, 'red']],
               description='GPUs the agent still knows but that stopped answering (fell off the bus, NVML hung).'),
      lib.stat('Agents down', [lib.target('count(up{%s} == 0) or vector(0)' % s)], thresholds=[[1, 'red']]),
      lib.stat('Fleet utilisation',
               [lib.target('avg(%s)' % c.util(s))],
               unit='percentunit',
               decimals=1,
               thresholds=[[0.3, 'yellow'], [0.6, 'green']]),
      lib.stat('GPUs allocated to jobs', [lib.target('count(DCGM_FI_DEV_GPU_UTIL{%s, %s!=""}) or vector(0)' % [s, c.jobLabel])]),
      lib.stat('Allocated but idle',
               [lib.target('sum(gpuscope_gpu_allocated_idle{%s}) or vector(0)' % s)],
               thresholds=[[1, 'orange']],
               description='GPUs a job holds whose utilisation stayed below 5% for the last minute, whether or not a process holds them (gpuscope_gpu_allocated_idle, from the agent).'),

      lib.heatmap('Fleet utilisation heatmap',
                  [lib.target('100 * %s' % c.util(s), '{{%s}} GPU {{gpu}}' % c.nodeLabel)],
                  rows=false,
                  description='Distribution of the utilisation of every GPU over time (SM active where available, else GPU utilisation): a band at the bottom is idle capacity.'),
      lib.timeseries('Utilisation by cluster',
                     [lib.target('%s{%s}' % [c.rec.clusterUtilAvg, c.sel.agg], '{{%s}}' % cl)],
                     unit='percentunit',
                     min=0,
                     max=1),
      lib.timeseries('GPUs allocated and idle', [
        lib.target('count(DCGM_FI_DEV_GPU_UTIL{%s, %s!=""}) or vector(0)' % [s, c.jobLabel], 'allocated'),
        lib.target('sum(gpuscope_gpu_allocated_idle{%s}) or vector(0)' % s, 'allocated, idle'),
        lib.target('count(gpuscope_gpu_up{%s})' % s, 'all'),
      ]),

      lib.row('Clusters'),
      lib.table('Clusters',
                [
                  lib.target('count by (%s) (gpuscope_gpu_up{%s})' % [cl, s]),
                  lib.target('sum by (%s) (%s{%s})' % [cl, c.rec.clusterUtilAvg, c.sel.agg]),
                  lib.target('count by (%s) (DCGM_FI_DEV_GPU_UTIL{%s, %s!=""})' % [cl, s, c.jobLabel]),
                  lib.target('sum by (%s) (%s{%s})' % [cl, c.rec.power('cluster'), c.sel.agg]),
                  lib.target('count by (%s) (gpuscope_gpu_up{%s} == 0) or count by (%s) (gpuscope_gpu_up{%s}) * 0' % [cl, s, cl, s]),
                ],
                renames={ 'Value #A': 'GPUs', 'Value #B': 'Utilisation', 'Value #C': 'Allocated', 'Value #D': 'Power', 'Value #E': 'Lost' },
                units={ Utilisation: 'percentunit', Power: 'watt' },
                columnLinks={ [cl]: c.cellLink(c.uids.l2, 'cluster', []) },
                description='Click a cluster for its L2 view.'),

      lib.row('Health'),
      lib.timeseries('XID errors by recommended action', [
        lib.target('sum by (action) (%s)' % c.increase('gpuscope_xid_errors_total{%s}' % s, '$__rate_interval'), '{{action}}'),
      ], bars=true, stack=true, description='From the XID catalog: ignore, restart_app, reset_gpu, reboot, contact_support.'),
      lib.timeseries('ECC errors', [
        lib.target('sum(increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'single-bit'),
        lib.target('sum(increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'double-bit'),
      ], bars=true),
      lib.timeseries('GPUs held down by a clock event', [
        lib.target('sum by (reason) (gpuscope_gpu_clock_event_active{%s, reason!~"gpu_idle|applications_clocks_setting|display_clock_setting"})' % s, '{{reason}}'),
      ], stack=true),
      lib.timeseries('Fleet power', [lib.target('%s{%s}' % [c.rec.power('cluster'), c.sel.agg], '{{%s}}' % cl)], unit='watt'),
    ],
    annotations=[c.annotations.xid(s), c.annotations.eccDbe(s)],
  )
