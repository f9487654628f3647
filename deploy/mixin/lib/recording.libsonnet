// Recording rules: per-GPU utilisation (SM active where the GPU reports it, else GPU utilisation), its
// attribution to jobs, users, accounts and partitions, allocation and its efficiency, idle allocated
// GPU-hours, power and energy, throttling and NVLink error rates, and the Kubernetes views per GPU pod,
// namespace, team and node (kubernetes_rules.libsonnet). Dashboards read these, so they stay
// fast on large fleets; the alerts read some of them.
local util = import 'util.libsonnet';

function(cfg)
  local s = cfg.selectors;
  local l = cfg.labels;
  local cl = l.clusterLabels;
  local by(extra) = util.by(cl + extra);
  local gpuSel(m, extra='') = util.sel(m, s.gpuscope, extra);
  local slurmSel(m, extra='') = util.sel(m, s.slurm, extra);
  local jobInfo(keep) =
    'max by (%s) (%s)' % [by([l.job] + keep), gpuSel('gpuscope_job_info')];
  local attributed = 'gpuscope:gpu_utilisation_attributed:ratio';
  local intervalSeconds = cfg.recordingIntervalSeconds;
  local idleHours(level) = {
    record: '%s:gpu_allocated_idle_hours:sum_%s' % [level, cfg.windows.idleHours],
    expr: 'sum by (%s) (sum_over_time(gpuscope:gpu_allocated_idle:bool[%s])) * %d / 3600' % [
      by(if level == 'cluster' then [] else [level]),
      cfg.windows.idleHours,
      intervalSeconds,
    ],
  };
  local kubernetesRules = (import 'kubernetes_rules.libsonnet')(cfg);
  [
    {
      name: 'gpuscope.gpu.rules',
      interval: '%ds' % intervalSeconds,
      rules: [
        {
          // Whole GPUs only (MIG instances report SM active per instance; GPU_I_ID is empty on the GPU).
          record: 'gpuscope:gpu_utilisation:ratio',
          expr: |||
            %s
            or on (instance, UUID)
            %s / 100
          ||| % [gpuSel('DCGM_FI_PROF_SM_ACTIVE', 'GPU_I_ID=""'), gpuSel('DCGM_FI_DEV_GPU_UTIL')],
        },
        {
          // Allocated GPUs with the job's user, account and partition (GPUs whose job has no
          // gpuscope_job_info keep only hpc_job).
          record: attributed,
          expr: |||
            gpuscope:gpu_utilisation:ratio{%(job)s!=""}
              * on (%(on)s) group_left (user, account, partition)
            %(info)s
            or ignoring (user, account, partition)
            gpuscope:gpu_utilisation:ratio{%(job)s!=""}
          ||| % { job: l.job, on: by([l.job]), info: jobInfo(['user', 'account', 'partition']) },
        },
        {
          record: 'gpuscope:gpu_allocated_idle:bool',
          expr: '%s < bool %g' % [attributed, cfg.thresholds.idleUtilisation],
        },
        {
          record: 'hpc_job:gpu_utilisation:avg',
          expr: 'avg by (%s) (%s)' % [by([l.job, 'user', 'account', 'partition']), attributed],
        },
        {
          record: 'hpc_job:gpu_utilisation:median',
          expr: 'quantile by (%s) (0.5, %s)' % [by([l.job]), attributed],
        },
        {
          record: 'hpc_job:gpus_allocated:count',
          expr: 'count by (%s) (%s)' % [by([l.job, 'user', 'account', 'partition']), attributed],
        },
      ] + [
        {
          record: '%s:gpu_utilisation:avg' % level,
          expr: 'avg by (%s) (%s)' % [by([level]), attributed],
        }
        for level in ['user', 'account', 'partition']
      ] + [
        {
          record: '%s:gpus_allocated:count' % level,
          expr: 'count by (%s) (%s)' % [by([level]), attributed],
        }
        for level in ['user', 'account', 'partition']
      ] + [
        {
          // Allocation efficiency: the share of allocated GPUs doing work (utilisation at or above the
          // idle threshold).
          record: '%s:gpu_allocation_efficiency:ratio' % level,
          expr: '1 - avg by (%s) (gpuscope:gpu_allocated_idle:bool)' % by(if level == 'cluster' then [] else [level]),
        }
        for level in ['cluster', 'account', 'user', 'partition']
      ] + [
        // GPU-hours allocated but idle over the window (samples of the idle indicator times the
        // interval); in this group so that they read the indicator of the same evaluation.
        idleHours(level)
        for level in ['cluster', 'account', 'user', 'partition', l.job]
      ] + [
        {
          record: 'cluster:gpu_utilisation:avg',
          expr: 'avg by (%s) (gpuscope:gpu_utilisation:ratio)' % by([]),
        },
        {
          // Share of the GPUs the agents see that a job holds (from gpuscope_gpu_info, which every GPU
          // has, MIG-enabled ones included; one GPU counts once while its job label changes).
          record: 'cluster:gpu_allocated:ratio',
          expr: |||
            count by (%(by)s) (count by (%(byGpu)s) (%(allocated)s))
              / count by (%(by)s) (count by (%(byGpu)s) (%(all)s))
            or count by (%(by)s) (count by (%(byGpu)s) (%(all)s)) * 0
          ||| % {
            by: by([]),
            byGpu: by(['instance', 'UUID']),
            allocated: gpuSel('gpuscope_gpu_info', '%s!=""' % l.job),
            all: gpuSel('gpuscope_gpu_info'),
          },
        },
      ],
    },
    {
      name: 'gpuscope.power.rules',
      interval: '%ds' % intervalSeconds,
      rules: [
        {
          record: 'node:gpu_power_watts:sum',
          expr: 'sum by (%s) (%s)' % [by([l.node]), gpuSel('DCGM_FI_DEV_POWER_USAGE')],
        },
        {
          record: 'cluster:gpu_power_watts:sum',
          expr: 'sum by (%s) (%s)' % [by([]), gpuSel('DCGM_FI_DEV_POWER_USAGE')],
        },
        {
          record: 'account:gpu_power_watts:sum',
          expr: |||
            sum by (%(byAccount)s) (
              %(power)s * on (%(on)s) group_left (account) %(info)s
            )
          ||| % {
            byAccount: by(['account']),
            power: gpuSel('DCGM_FI_DEV_POWER_USAGE', '%s!=""' % l.job),
            on: by([l.job]),
            info: jobInfo(['account']),
          },
        },
        {
          record: 'node:gpu_energy_joules:increase_%s' % cfg.windows.energy,
          expr: 'sum by (%s) (increase(%s[%s]))' % [by([l.node]), gpuSel('gpuscope_gpu_energy_joules_total'), cfg.windows.energy],
        },
        {
          // From the node rule above (evaluated first in this group): the same sum without reading an hour
          // of every GPU's counter a second time.
          record: 'cluster:gpu_energy_joules:increase_%s' % cfg.windows.energy,
          expr: 'sum by (%s) (node:gpu_energy_joules:increase_%s)' % [by([]), cfg.windows.energy],
        },
        {
          // The job's account as it was at any time in the window (max_over_time), not only at the
          // evaluation: a job that ended within the window keeps its last energy.
          record: 'account:gpu_energy_joules:increase_%s' % cfg.windows.energy,
          expr: |||
            sum by (%(byAccount)s) (
              increase(%(energy)s[%(w)s]) * on (%(on)s) group_left (account) max by (%(infoBy)s) (max_over_time(%(info)s[%(w)s]))
            )
          ||| % {
            byAccount: by(['account']),
            energy: gpuSel('gpuscope_gpu_energy_joules_total', '%s!=""' % l.job),
            w: cfg.windows.energy,
            on: by([l.job]),
            infoBy: by([l.job, 'account']),
            info: gpuSel('gpuscope_job_info'),
          },
        },
        {
          // Share of time clocks were held down, per GPU and reason (power, thermal, ...).
          record: 'gpuscope:gpu_clock_event:ratio_rate_%s' % cfg.windows.rate,
          expr: 'rate(%s[%s])' % [gpuSel('gpuscope_gpu_clock_event_seconds_total'), cfg.windows.rate],
        },
        {
          // Links and counters with errors only: the agent exposes every counter of every link (720
          // series on an 8-GPU H100 node, two fifths of its series, nearly all zero); a copy of them all
          // doubled the fleet's NVLink series every evaluation (0 for a link without errors reads as
          // absent: the dashboards show links with errors). Rates are never negative, so filtering
          // before the sum gives the same rows and leaves the sum only the links with errors to group.
          record: 'gpuscope:nvlink_errors:rate_%s' % cfg.windows.rate,
          expr: 'sum by (%s) (rate(%s[%s]) > 0)' % [
            by(l.gpu + ['link', 'counter']),
            gpuSel('gpuscope_nvlink_errors_total'),
            cfg.windows.rate,
          ],
        },
      ],
    },
    {
      name: 'gpuscope.slurm.rules',
      interval: '%ds' % intervalSeconds,
      rules: [
        {
          record: 'partition:slurm_gpu_allocated:ratio',
          expr: 'sum by (%s) (%s) / (sum by (%s) (%s) > 0)' % [
            by(['partition']),
            slurmSel('gpuscope_slurm_partition_gpus_allocated'),
            by(['partition']),
            slurmSel('gpuscope_slurm_partition_gpus'),
          ],
        },
        {
          // From the nodes, so that nodes in several partitions count once.
          record: 'cluster:slurm_gpu_allocated:ratio',
          expr: 'sum by (%s) (%s) / (sum by (%s) (%s) > 0)' % [
            by([]),
            slurmSel('gpuscope_slurm_node_gpus_allocated'),
            by([]),
            slurmSel('gpuscope_slurm_node_gpus'),
          ],
        },
      ],
    },
  {
      // Training telemetry (the agent's training collector): the job-wide straggler score across nodes,
      // from each rank's median time outside collectives, and the job's mean and 90th-percentile step
      // time from the step-duration histogram.
      name: 'gpuscope.training.rules',
      interval: '%ds' % intervalSeconds,
      rules: [
        {
          record: 'hpc_job:training_compute_seconds_median:min',
          expr: 'min by (%s) (%s)' % [by([l.job]), gpuSel('gpuscope_training_compute_seconds_median')],
        },
        {
          // In (0, 1]: 1 for the job's fastest rank anywhere, lower is slower.
          record: 'rank:training_relative_score:ratio',
          expr: |||
            hpc_job:training_compute_seconds_median:min
              / on (%(on)s) group_right ()
            (%(median)s > 0)
          ||| % { on: by([l.job]), median: gpuSel('gpuscope_training_compute_seconds_median') },
        },
        {
          // From the step-duration histogram: its _sum over its _count, every rank of the job together.
          record: 'hpc_job:training_step_seconds:mean_%s' % cfg.windows.rate,
          expr: |||
            sum by (%(by)s) (rate(%(sum)s[%(w)s]))
              /
            (sum by (%(by)s) (rate(%(count)s[%(w)s])) > 0)
          ||| % {
            by: by([l.job]),
            sum: gpuSel('gpuscope_training_step_duration_seconds_sum'),
            count: gpuSel('gpuscope_training_step_duration_seconds_count'),
            w: cfg.windows.rate,
          },
        },
        {
          // The job's 90th-percentile step time over every rank's steps, from the histogram's buckets
          // (accurate to the bucket, interpolated linearly within it).
          record: 'hpc_job:training_step_seconds:p90_%s' % cfg.windows.rate,
          expr: |||
            histogram_quantile(0.9, sum by (%(by)s) (rate(%(buckets)s[%(w)s])))
          ||| % {
            by: by([l.job, 'le']),
            buckets: gpuSel('gpuscope_training_step_duration_seconds_bucket'),
            w: cfg.windows.rate,
          },
        },
      ],
    },
    {
      // Kubernetes (the agent's --kubernetes series and kube-state-metrics'): per GPU pod first (its team,
      // utilisation, devices, requests, idle GPUs, pending age), then per namespace and per team from
      // those rows, so that no join reads more series than there are GPU pods.
      name: 'gpuscope.kubernetes.rules',
      interval: '%ds' % intervalSeconds,
      rules: kubernetesRules,
    },
  ]
