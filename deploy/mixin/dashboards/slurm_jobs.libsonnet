// Slurm jobs (stack document): the scheduler's view from the Slurm collector (jobs, pending reasons,
// partitions, nodes, slurmctld health, fairshare) beside what the GPUs say about the jobs (allocation
// efficiency by account, idle allocated GPUs by user).
local lib = import 'lib.libsonnet';

function(c)
  local sl = c.sel.slurm;
  local own = sl + ', account=~"$account", user=~"$user"';
  c.dashboard(
    c.uids.slurm,
    'gpuscope / Slurm jobs',
    'Slurm: jobs, queue, partitions, nodes, scheduler health, fairshare, and allocation efficiency by account.',
    ['slurm', 'job'],
    [c.variables.cluster, c.variables.account, c.variables.user],
    [
      lib.row('Now'),
      lib.stat('slurmctld reachable', [lib.target('min(gpuscope_slurm_up{%s})' % sl)], thresholds=[[0, 'red'], [1, 'green']]),
      lib.stat('Running jobs', [lib.target('sum(gpuscope_slurm_jobs{%s, state="RUNNING"}) or vector(0)' % own)]),
      lib.stat('Pending jobs', [lib.target('sum(gpuscope_slurm_jobs{%s, state="PENDING"}) or vector(0)' % own)]),
      lib.stat('GPUs allocated',
               [lib.target('max(%s{%s})' % [c.rec.clusterSlurmAllocated, c.sel.agg])],
               unit='percentunit',
               thresholds=[[0.95, 'orange']]),
      lib.stat('Nodes draining', [lib.target('sum(gpuscope_slurm_node_draining{%s}) or vector(0)' % sl)], thresholds=[[1, 'orange']]),
      lib.stat('Nodes down', [lib.target('sum(gpuscope_slurm_node_down{%s}) or vector(0)' % sl)], thresholds=[[1, 'red']]),

      lib.row('Jobs and queue'),
      lib.timeseries('Jobs by state', [lib.target('sum by (state) (gpuscope_slurm_jobs{%s})' % own, '{{state}}')], stack=true),
      lib.timeseries('Pending jobs by reason', [lib.target('sum by (reason) (gpuscope_slurm_jobs_pending{%s})' % sl, '{{reason}}')], stack=true),
      lib.timeseries('Running jobs by account', [lib.target('sum by (account) (gpuscope_slurm_jobs{%s, state="RUNNING"})' % own, '{{account}}')], stack=true),
      lib.timeseries('GPUs requested by state and partition', [
        lib.target('sum by (state, partition) (gpuscope_slurm_job_gpus{%s})' % sl, '{{partition}} {{state}}'),
      ]),

      lib.row('Allocation efficiency'),
      lib.table('Allocation-efficiency scoreboard by account',
                [
                  lib.target('%s{%s}' % [c.rec.efficiency('account'), c.sel.aggAccount]),
                  lib.target('%s{%s}' % [c.rec.accountUtilAvg, c.sel.aggAccount]),
                  lib.target('%s{%s}' % [c.rec.accountGpus, c.sel.aggAccount]),
                  lib.target('%s{%s}' % [c.rec.idleHours('account'), c.sel.aggAccount]),
                  lib.target('%s{%s}' % [c.rec.power('account'), c.sel.aggAccount]),
                  lib.target('%s{%s} / 3.6e6' % [c.rec.energy('account'), c.sel.aggAccount]),
                ],
                hide=['Time', '__name__'],
                renames={
                  'Value #A': 'Efficiency',
                  'Value #B': 'Mean utilisation',
                  'Value #C': 'GPUs allocated',
                  'Value #D': 'Idle GPU-hours (%s)' % c.idleHoursWindow,
                  'Value #E': 'Power',
                  'Value #F': 'Energy (%s)' % c.energyWindow,
                },
                units={ Efficiency: 'percentunit', 'Mean utilisation': 'percentunit', Power: 'watt', ['Energy (%s)' % c.energyWindow]: 'kwatth' },
                description="Efficiency: share of the account's allocated GPUs doing work (utilisation at or above the idle threshold); mean utilisation: SM active where available, else GPU utilisation.",
                w=14),
      lib.bargauge('Idle allocated GPU-hours by user (last %s)' % c.idleHoursWindow,
                   [
                     lib.target('%s{%s, user=~"$user"}' % [c.rec.idleHours('user'), c.sel.agg], '{{user}}'),
                   ],
                   unit='short',
                   min=0,
                   max=null,
                   thresholds=[[1, 'orange'], [8, 'red']],
                   w=10,
                   description='GPU-hours jobs held GPUs below the idle utilisation threshold.'),
      lib.timeseries('GPU allocation by partition', [
        lib.target('%s{%s}' % [c.rec.partitionAllocated, c.sel.agg], '{{partition}}'),
      ], unit='percentunit', min=0, max=1, thresholds=[[0.95, 'red']]),
      lib.timeseries('Fairshare by account', [
        lib.target('max by (account) (gpuscope_slurm_fairshare{%s, account=~"$account", user=""})' % sl, '{{account}}'),
      ], unit='percentunit', min=0, max=1),

      lib.row('Nodes'),
      lib.timeseries('Nodes by state', [lib.target('count by (state) (gpuscope_slurm_node_state{%s} == 1)' % sl, '{{state}}')], stack=true),
      lib.table('Nodes draining or down', [
        lib.target('gpuscope_slurm_node_draining{%s} == 1 or gpuscope_slurm_node_down{%s} == 1' % [sl, sl]),
      ], hide=['Time', 'Value', 'instance', 'job'], columnLinks={ node: c.cellLink(c.uids.l3, 'node') }, w=12),

      lib.row('Scheduler'),
      lib.timeseries('Scheduling cycles', [
        lib.target('max(gpuscope_slurm_scheduler_main_cycle_last_seconds{%s})' % sl, 'main, last'),
        lib.target('max(gpuscope_slurm_scheduler_backfill_cycle_last_seconds{%s})' % sl, 'backfill, last'),
      ], unit='s', w=8),
      lib.timeseries('Queues', [
        lib.target('max(gpuscope_slurm_scheduler_main_queue_length{%s})' % sl, 'main queue'),
        lib.target('max(gpuscope_slurm_scheduler_agent_queue_size{%s})' % sl, 'agent queue'),
        lib.target('max(gpuscope_slurm_scheduler_dbd_agent_queue_size{%s})' % sl, 'slurmdbd queue'),
      ], w=8),
      lib.timeseries('slurmctld RPC load (top 5 types)', [
        lib.target('topk(5, sum by (type) (rate(gpuscope_slurm_scheduler_rpc_time_seconds_total{%s}[$__rate_interval])))' % sl, '{{type}}'),
      ], unit='percentunit', w=8, description='Share of time slurmctld spends serving each RPC type.'),
    ],
    annotations=[c.annotations.drain(sl)],
  )
