// Training (stack document): every training job's efficiency side by side (utilisation, the slowest GPU
// against the job's median, idle allocated GPUs, energy), the ranks' own timing where jobs report it
// (straggler score, step time, own work vs waiting, data-loader wait, checkpoints, hung ranks), and the
// events that interrupt jobs (NCCL, CUDA, out-of-memory, Slurm). Each job links to its L4 view.
local lib = import 'lib.libsonnet';

function(c)
  local j = c.jobLabel;
  local cl = c.clusterLabel;
  local jobs = c.sel.jobInfo + ', %s=~"$job"' % j;
  local s = c.sel.job;
  local owned = s + ', account=~"$account", user=~"$user"';
  local agg = c.sel.aggOwner + ', %s=~"$job"' % j;
  local row = '%s, %s, user, account, partition' % [cl, j];
  local straggler(by) = 'min by (%s) (%s) / on (%s, %s) group_left () %s{%s}' % [by, c.utilOwned(owned), cl, j, c.rec.jobUtilMedian, c.sel.agg + ', %s=~"$job"' % j];
  c.dashboard(
    c.uids.training,
    'gpuscope / Training',
    'Training jobs: efficiency, stragglers, memory, energy, and the events that interrupt them. Down: L4 Job.',
    ['training', 'job'],
    [c.variables.cluster, c.variables.account, c.variables.user, c.variables.job],
    [
      lib.row('Jobs'),
      lib.table('Training jobs',
                [
                  lib.target('%s{%s}' % [c.rec.jobGpus, agg]),
                  lib.target('%s{%s}' % [c.rec.jobUtilAvg, agg]),
                  lib.target(straggler(row)),
                  lib.target('sum by (%s) (%s{%s})' % [row, c.rec.idleBool, owned]),
                  lib.target('sum by (%s) (%s) / 3.6e6' % [row, c.withOwner('increase(gpuscope_gpu_energy_joules_total{%s}[$__range])' % s, jobs)]),
                ],
                hide=['Time', cl],
                renames={ 'Value #A': 'GPUs', 'Value #B': 'Utilisation', 'Value #C': 'Slowest / median', 'Value #D': 'GPUs under the idle threshold', 'Value #E': 'Energy in range' },
                units={ Utilisation: 'percentunit', 'Slowest / median': 'percentunit', 'Energy in range': 'kwatth' },
                columnLinks={ [j]: c.cellLink(c.uids.l4, 'job', ['cluster']) },
                h=9,
                description='Click a job for its L4 view. Slowest / median below 50% is a straggler.'),

      lib.row('Efficiency'),
      lib.timeseries('Utilisation by job',
                     [lib.target('%s{%s}' % [c.rec.jobUtilAvg, agg], '{{%s}}' % j)],
                     unit='percentunit',
                     min=0,
                     max=1,
                     legendTable=true,
                     links=[{ title: 'L4 job view', url: c.seriesLink(c.uids.l4, 'job', j) }]),
      lib.timeseries('Straggler view: slowest GPU / median, by job',
                     [
                       lib.target(straggler('%s, %s' % [cl, j]), '{{%s}}' % j),
                     ],
                     unit='percentunit',
                     min=0,
                     max=1,
                     thresholds=[[0.5, 'red']],
                     description='1 when all GPUs of the job work alike; a job whose line falls under the red line waits on one GPU.'),
      lib.timeseries('Tensor-pipe activity by job', [
        lib.target('avg by (%s) (%s)' % [j, c.withOwner('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{%s, GPU_I_ID=""}' % s, jobs)], '{{%s}}' % j),
      ], unit='percentunit', min=0, max=1),
      lib.timeseries('GPU memory used by job', [
        lib.target('sum by (%s) (%s)' % [j, c.withOwner('DCGM_FI_DEV_FB_USED{%s, GPU_I_ID=""}' % s, jobs)], '{{%s}}' % j),
      ], unit='decmbytes'),
      lib.timeseries('Power by job', [
        lib.target('sum by (%s) (%s)' % [j, c.withOwner('DCGM_FI_DEV_POWER_USAGE{%s}' % s, jobs)], '{{%s}}' % j),
      ], unit='watt'),
      lib.timeseries('NVLink traffic by job', [
        lib.target('sum by (%s) (%s)' % [j, c.withOwner('rate(gpuscope_nvlink_data_bytes_total{%s}[$__rate_interval])' % s, jobs)], '{{%s}}' % j),
      ], unit='Bps'),

      lib.row('Ranks (training telemetry)'),
      lib.timeseries('Straggler score by rank',
                     [lib.target('rank:training_relative_score:ratio{%s}' % s, '{{%s}} rank {{rank}} ({{Hostname}} GPU {{gpu}})' % j)],
                     unit='percentunit',
                     min=0,
                     max=1,
                     thresholds=[[0.8, 'red']],
                     description="Jobs whose ranks report their own timing (the gpuscope Python package, the NCCL plugin): the job's fastest rank's median time outside collectives divided by each rank's. In synchronous training every step takes the slowest rank's time, so step time cannot name it; this can. Under the red line GpuTrainingStraggler fires."),
      lib.timeseries('Pace against its own history, by rank',
                     [lib.target('gpuscope_training_history_score{%s}' % s, '{{%s}} rank {{rank}} ({{Hostname}} GPU {{gpu}})' % j)],
                     unit='percentunit',
                     min=0,
                     max=1,
                     thresholds=[[0.8, 'red']],
                     description="Each rank's usual time outside collectives (median of its last 500 steps) divided by its recent one (last 20): under 1 when a rank works slower than it used to, even when it is the job's fastest (a slowed node whose ranks all slow down together, a one-rank job), which the straggler score beside cannot show."),
      lib.heatmap('Step time by rank',
                  [lib.target('histogram_quantile(0.5, sum by (%s, rank, le) (rate(gpuscope_training_step_duration_seconds_bucket{%s}[$__rate_interval])))' % [j, s], '{{%s}} rank {{rank}}' % j)],
                  unit='s',
                  min=0,
                  max=null,
                  description="Median step time of each rank over time, from the ranks' step-duration histograms: rows that stay alike are synchronous training (the straggler shows in the panels beside, not here); a row that differs is a rank of another job or one that left the job."),
      lib.heatmap('Step time distribution (every rank of the selected jobs)',
                  [lib.target('sum by (le) (rate(gpuscope_training_step_duration_seconds_bucket{%s}[$__rate_interval]))' % s, '{{le}}', format='heatmap')],
                  unit='s',
                  min=0,
                  max=null,
                  description="Steps per second in each step-time bucket (10 ms to 10 min). Slow steps stand out above the band of ordinary ones; on a Prometheus with exemplar storage, each bucket's exemplar names the trace of its latest step (trace_id).") + {
        options+: { yAxis+: { unit: 's' } },
        targets: [t { exemplar: true } for t in super.targets],
      },
      lib.timeseries('Own work share of the step, by rank',
                     [lib.target('rate(gpuscope_training_compute_seconds_total{%s}[$__rate_interval]) / rate(gpuscope_training_step_duration_seconds_sum{%s}[$__rate_interval])' % [s, s], '{{%s}} rank {{rank}}' % j)],
                     unit='percentunit',
                     min=0,
                     max=1,
                     description='Share of each step spent outside collectives (compute, data loading), the rest waiting in them: the straggler has the largest share, the ranks that wait for it the smallest.'),
      lib.timeseries('Data-loader wait share, by rank',
                     [lib.target('rate(gpuscope_training_dataloader_wait_seconds_total{%s}[$__rate_interval]) / rate(gpuscope_training_step_duration_seconds_sum{%s}[$__rate_interval])' % [s, s], '{{%s}} rank {{rank}}' % j)],
                     unit='percentunit',
                     min=0),
      lib.timeseries('Step time by job: mean and 90th percentile',
                     [lib.target('hpc_job:training_step_seconds:mean_5m{%s}' % (c.sel.agg + ', %s=~"$job"' % j), '{{%s}} mean' % j),
                      lib.target('hpc_job:training_step_seconds:p90_5m{%s}' % (c.sel.agg + ', %s=~"$job"' % j), '{{%s}} p90' % j)],
                     unit='s',
                     min=0),
      lib.timeseries('Checkpoints: duration of the latest save, by rank',
                     [lib.target('gpuscope_training_last_checkpoint_duration_seconds{%s}' % s, '{{%s}} rank {{rank}}' % j)],
                     unit='s',
                     min=0,
                     description='The sawtooth of a healthy run: flat between saves; a save that grows longer each time points at the storage.'),
      lib.timeseries('Hung ranks',
                     [lib.target('max by (%s, rank, comm) (gpuscope_training_rank_hung{%s})' % [j, s], '{{%s}} rank {{rank}} comm {{comm}}' % j)],
                     min=0,
                     max=1,
                     thresholds=[[1, 'red']],
                     description='1 while a rank is behind the others on a communicator and has not advanced for the hang threshold (GpuTrainingHang).'),

      lib.row('Interruptions'),
      lib.timeseries("Events on the jobs' nodes by class", [
        lib.target('sum by (class) (increase(gpuscope_events_total{%s, class=~"nccl|nccl_watchdog|training_hang|cuda|cuda_oom|oom|xid|sxid|ib_completion|slurm_interruption"}[$__rate_interval]) and on(instance) group by (instance) (gpuscope_job_info{%s}))' % [c.sel.cluster, jobs], '{{class}}'),
      ], bars=true, stack=true, description='Classified kernel and job-log events (NCCL errors and watchdog timeouts, CUDA errors and OOM, kernel OOM kills, XID/SXid, IB completion errors, Slurm interruptions) on the nodes running the selected jobs.'),
      lib.timeseries("XID errors on the jobs' GPUs", [
        lib.target('sum by (%s, xid) (%s)' % [j, c.withOwner(c.increase('gpuscope_xid_errors_total{%s}' % s, '$__rate_interval'), jobs)], '{{%s}} XID {{xid}}' % j),
      ], bars=true),
    ],
    annotations=[c.annotations.xid(s)],
  )
