// What the gpuscope dashboards share: template variables, label selectors built from them, the
// utilisation expression and the links between the levels L1 (fleet) .. L5 (one GPU). A function of the
// mixin's config object (config.libsonnet) so selectors and label names are set in one place.
local lib = import 'lib.libsonnet';

function(cfg) {
  local labels = cfg.labels,
  local cluster = labels.clusterLabels[0],
  local node = labels.node,
  local hpcJob = labels.job,

  dash:: {
    timeFrom: 'now-6h',
    refresh: '1m',
    grafanaFolder: 'gpuscope',
    dashboardsPath: '/var/lib/grafana/dashboards/gpuscope',
    prometheusUrl: 'http://127.0.0.1:9090',
  } + std.get(cfg, 'dashboards', {}),

  // The dashboards' uids, stable: links and bookmarks depend on them.
  uids:: {
    l1: 'gpuscope-l1-fleet',
    l2: 'gpuscope-l2-cluster',
    l3: 'gpuscope-l3-node',
    l4: 'gpuscope-l4-job',
    l5: 'gpuscope-l5-gpu',
    gpuCluster: 'gpuscope-gpu-cluster',
    network: 'gpuscope-network-storage',
    training: 'gpuscope-training',
    security: 'gpuscope-security',
    slurm: 'gpuscope-slurm-jobs',
    kubernetes: 'gpuscope-kubernetes',
  },

  // Template variables. The Slurm collector's series carry no Hostname: they are filtered on the cluster
  // only (and on node=~"$node" where they have a node).
  variables:: {
    cluster: lib.queryVariable('cluster',
                               'Cluster',
                               'label_values(gpuscope_gpu_up{%s}, %s)' % [cfg.selectors.gpuscope, cluster]),
    account: lib.queryVariable('account',
                               'Account',
                               'label_values(gpuscope_job_info{%s, %s=~"$cluster"}, account)' % [cfg.selectors.gpuscope, cluster]),
    user: lib.queryVariable('user',
                            'User',
                            'label_values(gpuscope_job_info{%s, %s=~"$cluster", account=~"$account"}, user)' % [cfg.selectors.gpuscope, cluster]),
    job: lib.queryVariable('job',
                           'Job',
                           'label_values(gpuscope_job_info{%s, %s=~"$cluster", account=~"$account", user=~"$user"}, %s)' % [cfg.selectors.gpuscope, cluster, hpcJob]),
    singleJob: self.job { multi: false, includeAll: false, current: {} },
    node: lib.queryVariable('node',
                            'Node',
                            'label_values(gpuscope_gpu_up{%s, %s=~"$cluster"}, %s)' % [cfg.selectors.gpuscope, cluster, node]),
    singleNode: self.node { multi: false, includeAll: false, current: {} },
    gpu: lib.queryVariable('gpu',
                           'GPU',
                           'label_values(gpuscope_gpu_up{%s, %s=~"$cluster", %s=~"$node"}, gpu)' % [cfg.selectors.gpuscope, cluster, node]),
    singleGpu: self.gpu { multi: false, includeAll: false, current: {} },
    // Kubernetes: the namespaces and teams of the GPU pods (recorded, lib/kubernetes_rules.libsonnet).
    namespace: lib.queryVariable('namespace',
                                 'Namespace',
                                 'label_values(namespace_pod:gpu_pod_team:info{%s=~"$cluster"}, namespace)' % cluster),
    team: lib.queryVariable('team',
                            'Team',
                            'label_values(namespace_pod:gpu_pod_team:info{%s=~"$cluster", namespace=~"$namespace"}, team)' % cluster),
    uuid: lib.queryVariable('uuid',
                            'GPU UUID',
                            'label_values(gpuscope_gpu_up{%s, %s=~"$cluster", %s=~"$node", gpu=~"$gpu"}, UUID)' % [cfg.selectors.gpuscope, cluster, node]),
  },

  // Label matchers (without braces) for the variables a dashboard defines.
  sel:: {
    base: cfg.selectors.gpuscope,
    cluster: '%s, %s=~"$cluster"' % [cfg.selectors.gpuscope, cluster],
    slurm: '%s, %s=~"$cluster"' % [cfg.selectors.slurm, cluster],
    node: self.cluster + ', %s=~"$node"' % node,
    gpu: self.node + ', gpu=~"$gpu"',
    uuid: self.gpu + ', UUID=~"$uuid"',
    job: self.cluster + ', %s=~"$job", %s!=""' % [hpcJob, hpcJob],
    account: self.cluster + ', account=~"$account"',
    jobInfo: self.account + ', user=~"$user"',
    // The recorded aggregates (by cluster, node, job, account, ...) keep no job="gpuscope" label.
    agg: '%s=~"$cluster"' % cluster,
    aggNode: self.agg + ', %s=~"$node"' % node,
    aggAccount: self.agg + ', account=~"$account"',
    aggOwner: self.aggAccount + ', user=~"$user"',
    // Kubernetes: recorded rows per namespace, per team, and per pod (which carry both).
    aggNamespace: self.agg + ', namespace=~"$namespace"',
    aggTeam: self.agg + ', team=~"$team"',
    aggPod: self.aggNamespace + ', team=~"$team"',
  },

  clusterLabel:: cluster,
  nodeLabel:: node,
  jobLabel:: hpcJob,

  // Series the mixin's recording rules (lib/recording.libsonnet) write; panels read them where they
  // exist so that dashboards stay fast on large fleets. The lint test checks that each is recorded.
  rec:: {
    util: 'gpuscope:gpu_utilisation:ratio',
    utilAttributed: 'gpuscope:gpu_utilisation_attributed:ratio',
    idleBool: 'gpuscope:gpu_allocated_idle:bool',
    jobUtilAvg: 'hpc_job:gpu_utilisation:avg',
    jobUtilMedian: 'hpc_job:gpu_utilisation:median',
    jobGpus: 'hpc_job:gpus_allocated:count',
    accountUtilAvg: 'account:gpu_utilisation:avg',
    accountGpus: 'account:gpus_allocated:count',
    efficiency(level): '%s:gpu_allocation_efficiency:ratio' % level,
    idleHours(level): '%s:gpu_allocated_idle_hours:sum_%s' % [level, cfg.windows.idleHours],
    clusterUtilAvg: 'cluster:gpu_utilisation:avg',
    clusterAllocated: 'cluster:gpu_allocated:ratio',
    power(level): '%s:gpu_power_watts:sum' % level,
    energy(level): '%s:gpu_energy_joules:increase_%s' % [level, cfg.windows.energy],
    clockEvent: 'gpuscope:gpu_clock_event:ratio_rate_%s' % cfg.windows.rate,
    nvlinkErrors: 'gpuscope:nvlink_errors:rate_%s' % cfg.windows.rate,
    partitionAllocated: 'partition:slurm_gpu_allocated:ratio',
    clusterSlurmAllocated: 'cluster:slurm_gpu_allocated:ratio',
    // Kubernetes (lib/kubernetes_rules.libsonnet): per namespace or team (level), per pod, per node.
    podTeam: 'namespace_pod:gpu_pod_team:info',
    k8sUtil(level): '%s:gpu_utilisation:avg' % level,
    k8sRequestedUtil(level): '%s:gpu_requested_utilisation:ratio' % level,
    k8sDevices(level): '%s:gpu_devices:count' % level,
    k8sRequested(level): '%s:gpus_requested:sum' % level,
    k8sPending(level): '%s:gpu_pods_pending:count' % level,
    k8sPendingGpus(level): '%s:gpus_pending:sum' % level,
    k8sPendingAge(level): '%s:gpu_pod_pending_age_seconds:max' % level,
    idleCost(level): '%s:gpu_allocated_idle_cost:sum_%s' % [level, cfg.windows.idleHours],
    podPendingAge: 'namespace_pod:gpu_pod_pending_age:seconds',
    podPendingGpus: 'namespace_pod:gpus_requested_pending:sum',
    nodeK8s(name): 'node_resource:k8s_%s:sum' % name,
    clusterK8s(name): 'cluster_resource:k8s_%s:sum' % name,
    nodeKube(name): 'node:kube_%s:sum' % name,
    sharedGpuPods: 'gpu_pod:k8s_gpu_shared:info',
  },
  // Grafana's unit for the cost table's currency (config kubernetes.costCurrency).
  costUnit:: { USD: 'currencyUSD', EUR: 'currencyEUR', GBP: 'currencyGBP', JPY: 'currencyJPY' }[cfg.kubernetes.costCurrency],
  idleHoursWindow:: cfg.windows.idleHours,
  energyWindow:: cfg.windows.energy,

  // Utilisation of each GPU as a ratio 0..1 (recorded): SM activity where the GPU reports it (Hopper and
  // newer, profiling metrics), else NVML's GPU utilisation; whole GPUs only.
  util(selector):: '%s{%s}' % [self.rec.util, selector],

  // The same for the GPUs jobs hold, with the job's user, account and partition (recorded).
  utilOwned(selector):: '%s{%s}' % [self.rec.utilAttributed, selector],

  // Increase of a counter over a window, counting series born within it too: the agent creates an XID
  // counter at its first error (value 1), which increase() alone never sees.
  increase(series, window):: '(increase(%s[%s]) or (%s unless %s offset %s))' % [series, window, series, series, window],

  // Joins user, account and partition onto any series with an hpc_job label, keeping only the jobs of the selected
  // account and user. gpuscope_job_info has one series per node of a job: `group by` folds them.
  withOwner(expr, selector=self.sel.jobInfo)::
    '(%s) * on(%s) group_left(user, account, partition) group by (%s, user, account, partition) (gpuscope_job_info{%s})' % [expr, hpcJob, hpcJob, selector],

  // Attaches the Hostname of the node to series that only carry the scrape's instance (InfiniBand, host,
  // agent self-metrics), keeping the selected nodes.
  onNode(expr, selector=self.sel.node)::
    '(%s) * on(instance) group_left(%s) group by (instance, %s) (gpuscope_gpu_up{%s})' % [expr, node, node, selector],

  // The dashboard links between the hierarchy levels, with the variables they carry; dashboard() keeps
  // only those the linking dashboard defines.
  links:: {
    l1: { title: 'L1 Fleet', uid: $.uids.l1, vars: ['cluster'] },
    l2: { title: 'L2 Cluster', uid: $.uids.l2, vars: ['cluster', 'account'] },
    l3: { title: 'L3 Node', uid: $.uids.l3, vars: ['cluster', 'node'] },
    l4: { title: 'L4 Job', uid: $.uids.l4, vars: ['cluster', 'account', 'user', 'job'] },
    l5: { title: 'L5 GPU', uid: $.uids.l5, vars: ['cluster', 'node', 'gpu'] },
    gpuCluster: { title: 'GPU cluster', uid: $.uids.gpuCluster, vars: ['cluster', 'node'] },
    network: { title: 'Network and storage', uid: $.uids.network, vars: ['cluster', 'node'] },
    training: { title: 'Training', uid: $.uids.training, vars: ['cluster', 'account', 'user', 'job'] },
    security: { title: 'Security', uid: $.uids.security, vars: ['cluster', 'node'] },
    slurm: { title: 'Slurm jobs', uid: $.uids.slurm, vars: ['cluster', 'account', 'user'] },
    kubernetes: { title: 'Kubernetes', uid: $.uids.kubernetes, vars: ['cluster', 'namespace', 'team'] },
    levels: [self.l1, self.l2, self.l3, self.l4, self.l5],
    stack: [self.gpuCluster, self.network, self.training, self.security, self.slurm, self.kubernetes],
  },

  // Data-link URLs of table cells: a cell's value becomes the next level's variable.
  cellLink(uid, variable, carry=['cluster']):: '/d/%s?${__url_time_range}&var-%s=${__value.raw}%s' % [
    uid,
    variable,
    std.join('', ['&var-%s=${%s}' % [v, v] for v in carry]),
  ],

  // Data-link URL of a time series: the series' label becomes the next level's variable.
  seriesLink(uid, variable, label, carry=['cluster']):: '/d/%s?${__url_time_range}&var-%s=${__field.labels.%s}%s' % [
    uid,
    variable,
    label,
    std.join('', ['&var-%s=${%s}' % [v, v] for v in carry]),
  ],

  // The dashboard with the mixin's defaults (time range, refresh) and its links to the other dashboards
  // (all of them but itself), carrying the variables both define.
  dashboard(uid, title, description, tags, variables, panels, annotations=[])::
    local defined = [v.name for v in variables];
    local links = [
      lib.link(l.title, l.uid, [v for v in l.vars if std.member(defined, v)])
      for l in $.links.levels + $.links.stack
      if l.uid != uid
    ];
    lib.dashboard(uid, title, description, tags, variables, panels, links, annotations, $.dash.timeFrom) {
      refresh: $.dash.refresh,
    },

  // The workload holding a GPU: a Slurm job (hpc_job, linking to its L4 view) or a Kubernetes pod
  // (namespace and pod, linking to the Kubernetes view of its namespace). The panels below mean the same
  // for both, so the Slurm and Kubernetes views build them from one of these.
  workloads:: {
    job: {
      title: 'Job',
      labels: [hpcJob],
      held: '%s!=""' % hpcJob,
      legend: '{{%s}}' % hpcJob,
      columnLinks: { [hpcJob]: $.cellLink($.uids.l4, 'job') },
      seriesLinks: [{ title: 'L4 job view', url: $.seriesLink($.uids.l4, 'job', hpcJob) }],
      what: 'The job',
      click: 'its L4 view',
    },
    pod: {
      title: 'Pod',
      labels: ['namespace', 'pod'],
      held: 'pod!=""',
      legend: '{{namespace}}/{{pod}}',
      columnLinks: { namespace: $.cellLink($.uids.kubernetes, 'namespace') },
      seriesLinks: [{ title: 'Kubernetes view of the namespace', url: $.seriesLink($.uids.kubernetes, 'namespace', 'namespace') }],
      what: 'The pod (a GPU shared by time-slicing or MPS shows each pod)',
      click: 'the Kubernetes view of its namespace',
    },
  },

  panels:: {
    // Each GPU of the selection with the workload holding it: up, utilisation, temperature, power,
    // memory. `by`: labels kept besides the GPU's and the workload's (e.g. the node when several show).
    gpusWithWorkload(title, selector, workload, by=[], h=9)::
      local keep = std.join(', ', by + ['gpu', 'UUID', 'modelName'] + workload.labels);
      lib.table(title,
                [
                  lib.target('max by (%s) (gpuscope_gpu_up{%s})' % [keep, selector]),
                  lib.target('max by (%s) (%s)' % [keep, $.util(selector)]),
                  lib.target('max by (%s) (DCGM_FI_DEV_GPU_TEMP{%s})' % [keep, selector]),
                  lib.target('max by (%s) (DCGM_FI_DEV_POWER_USAGE{%s})' % [keep, selector]),
                  lib.target('max by (%s) (DCGM_FI_DEV_FB_USED{%s, GPU_I_ID=""})' % [keep, selector]),
                ],
                renames={ 'Value #A': 'Up', 'Value #B': 'Utilisation', 'Value #C': 'Temperature', 'Value #D': 'Power', 'Value #E': 'Memory used' },
                units={ Utilisation: 'percentunit', Temperature: 'celsius', Power: 'watt', 'Memory used': 'decmbytes' },
                columnLinks={ gpu: $.cellLink($.uids.l5, 'gpu', ['cluster', 'node']) } + workload.columnLinks,
                h=h,
                description='Click a GPU for its L5 view, a %s for %s.' % [std.asciiLower(workload.title), workload.click]),

    // The workload holding one GPU (a stat; several when the GPU is shared).
    workloadOfGpu(selector, workload, w=3)::
      lib.stat(workload.title,
               [lib.target('count by (%s) (gpuscope_gpu_up{%s, %s})' % [std.join(', ', workload.labels), selector, workload.held], workload.legend)],
               w=w,
               links=workload.seriesLinks,
               description='%s that holds the GPU; click for %s.' % [workload.what, workload.click]),
  },

  // Annotations shared by the views that show GPU health: each XID, each double-bit ECC error, each
  // node drain, each profiling pause (gpuscope profile-pause: DCGM_FI_PROF_* stop while it lasts).
  annotations:: {
    xid(selector): lib.annotation(
      'XID errors',
      'sum by (%s, gpu, xid, action) (%s) > 0' % [node, $.increase('gpuscope_xid_errors_total{%s}' % selector, '2m')],
      'XID {{xid}} on {{%s}} GPU {{gpu}}' % node,
      'recommended action: {{action}}',
      color='red'
    ),
    eccDbe(selector): lib.annotation(
      'Double-bit ECC',
      'sum by (%s, gpu) (increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{%s}[2m])) > 0' % [node, selector],
      'Double-bit ECC error on {{%s}} GPU {{gpu}}' % node,
      color='purple'
    ),
    // `selector` matches node-level series (no gpu label): the pause is the node's.
    profilingPaused(selector): lib.annotation(
      'Profiling paused',
      'max by (%s) (gpuscope_profiling_paused{%s}) == 1' % [node, selector],
      'Profiling paused on {{%s}}' % node,
      'gpuscope profile-pause: DCGM profiling and GPM sampling stopped, DCGM_FI_PROF_* missing meanwhile',
      color='blue'
    ),
    drain(selector): lib.annotation(
      'Node drained',
      'max by (node, reason) (gpuscope_slurm_node_draining{%s}) == 1' % selector,
      'Slurm drains {{node}}',
      '{{reason}}',
      color='orange'
    ),
  },
}
