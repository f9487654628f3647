// GPU cluster (stack document): the health and load of a cluster's GPUs at a glance: what is lost,
// hot, throttled or failing, and how busy the rest is.
local lib = import 'lib.libsonnet';

function(c)
  local s = c.sel.node;
  local n = c.nodeLabel;
  local util = c.util(s);
  c.dashboard(
    c.uids.gpuCluster,
    'gpuscope / GPU cluster',
    'GPU health and load of a cluster: lost GPUs, temperatures, power, throttling, ECC and XID errors.',
    ['gpu', 'cluster', 'health'],
    [c.variables.cluster, c.variables.node],
    [
      lib.row('Health now'),
      lib.stat('GPUs up', [lib.target('sum(gpuscope_gpu_up{%s})' % s)], w=3),
      lib.stat('GPUs lost', [lib.target('count(gpuscope_gpu_up{%s} == 0) or vector(0)' % s)], thresholds=[[1, 'red']], w=3),
      lib.stat('GPUs above 85 °C', [lib.target('count(DCGM_FI_DEV_GPU_TEMP{%s} > 85) or vector(0)' % s)], thresholds=[[1, 'red']], w=3),
      lib.stat('GPUs throttled (power or thermal)',
               [lib.target('count(max by (%s, gpu) (gpuscope_gpu_clock_event_active{%s, reason=~"sw_power_cap|hw_power_brake_slowdown|sw_thermal_slowdown|hw_thermal_slowdown|hw_slowdown"}) > 0) or vector(0)' % [n, s])],
               thresholds=[[1, 'orange']],
               w=3),
      lib.stat('Row remaps pending', [lib.target('sum(DCGM_FI_DEV_ROW_REMAP_PENDING{%s}) or vector(0)' % s)], thresholds=[[1, 'orange']], w=3),
      lib.stat('NVLink links down', [lib.target('count(gpuscope_nvlink_up{%s} == 0) or vector(0)' % s)], thresholds=[[1, 'red']], w=3),
      lib.stat('GPUs failing DCGM health',
               [lib.target('count(max by (%s, gpu) (gpuscope_dcgm_health{%s}) == 2) or vector(0)' % [n, s])],
               thresholds=[[1, 'red']],
               w=3,
               description='GPUs with a subsystem DCGM judges failed (nodes whose agent uses DCGM); L3 shows each GPU and subsystem.'),
      lib.stat('Nodes with profiling paused',
               [lib.target('count(max by (%s) (gpuscope_profiling_paused{%s}) == 1) or vector(0)' % [n, s])],
               thresholds=[[1, 'blue']],
               w=3,
               description='Nodes where gpuscope profile-pause holds (Nsight at work): their DCGM_FI_PROF_* fields are missing meanwhile; the blue annotation marks each pause.'),

      lib.row('Load'),
      lib.heatmap('GPU utilisation heatmap (node x GPU)', [lib.target('100 * max by (%s, gpu) (%s)' % [n, util], '{{%s}} GPU {{gpu}}' % n)], h=10),
      lib.timeseries('Temperature (hottest GPU per node)',
                     [lib.target('max by (%s) (DCGM_FI_DEV_GPU_TEMP{%s})' % [n, s], '{{%s}}' % n)],
                     unit='celsius',
                     thresholds=[[85, 'red']]),
      lib.timeseries('Power per node vs limit', [
        lib.target('sum by (%s) (DCGM_FI_DEV_POWER_USAGE{%s}) / sum by (%s) (DCGM_FI_DEV_ENFORCED_POWER_LIMIT{%s})' % [n, s, n, s], '{{%s}}' % n),
      ], unit='percentunit', min=0, max=1),

      lib.row('Throttling and errors'),
      lib.timeseries('Throttle-reason breakdown (GPUs held down)', [
        lib.target('sum by (reason) (gpuscope_gpu_clock_event_active{%s, reason!~"gpu_idle|applications_clocks_setting|display_clock_setting"})' % s, '{{reason}}'),
      ], bars=true, stack=true, description='Number of GPUs each reason holds below their target clocks at each scrape.'),
      lib.timeseries('Throttled share of time by reason', [
        lib.target('avg by (reason) (%s{%s})' % [c.rec.clockEvent, s], '{{reason}}'),
      ], unit='percentunit', bars=true, stack=true),
      lib.timeseries('ECC and XID timeline', [
        lib.target('sum(increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'single-bit ECC'),
        lib.target('sum(increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[$__rate_interval]))' % s, 'double-bit ECC'),
        lib.target('sum by (xid) (%s)' % c.increase('gpuscope_xid_errors_total{%s}' % s, '$__rate_interval'), 'XID {{xid}}'),
      ], bars=true, w=24, description='Annotations mark each XID and double-bit error with the node and GPU.'),
      lib.table('GPUs with errors in range',
                [
                  lib.target('sum by (%s, gpu, xid, action) (%s) > 0' % [n, c.increase('gpuscope_xid_errors_total{%s}' % s, '$__range')]),
                ],
                hide=['Time'],
                renames={ Value: 'XIDs' },
                columnLinks={ gpu: '/d/%s?${__url_time_range}&var-cluster=${cluster}&var-node=${__data.fields.%s}&var-gpu=${__value.raw}' % [c.uids.l5, n] },
                w=12,
                description='Click a GPU for its L5 view.'),
      lib.table('NVLink links with errors in range', [
        lib.target('sum by (%s, gpu, link, counter) (increase(gpuscope_nvlink_errors_total{%s}[$__range])) > 0' % [n, s]),
      ], hide=['Time'], renames={ Value: 'Errors' }, w=12),
    ],
    annotations=[c.annotations.xid(s), c.annotations.eccDbe(s), c.annotations.profilingPaused(s)],
  )
