// Recording rules of the Kubernetes views (group gpuscope.kubernetes.rules in recording_rules.yaml):
//  - the team of each GPU pod: its team label (gpuscope_k8s_pod_info from the agent, else kube_pod_labels
//    from kube-state-metrics), else its namespace's team (config kubernetes.namespaceTeams), else
//    kubernetes.defaultTeam;
//  - per GPU pod (namespace, pod, team): utilisation summed over its devices, its devices, its busy devices
//    (utilisation at or above the idle threshold), its requested GPUs while running, its idle whole GPUs
//    per GPU model, its pending age;
//  - per namespace and per team, from those rows: mean utilisation, allocation efficiency (busy devices
//    over requested GPUs), idle GPU-hours and their cost per GPU model, pending GPU pods and their age;
//  - the pods of each shared GPU (time-slicing or MPS);
//  - per node and resource: allocatable, allocated, free, idle and in use from the agents, and per node
//    allocatable, requested and free from kube-state-metrics.
local util = import 'util.libsonnet';

function(cfg)
  local k8s = (import 'kubernetes.libsonnet')(cfg);
  local k = cfg.kubernetes;
  local l = cfg.labels;
  local cl = l.clusterLabels;
  local by = k8s.by;
  local pod = k8s.pod;
  local interval = cfg.recordingIntervalSeconds;
  local idleWindow = cfg.windows.idleHours;
  local threshold = util.num(cfg.thresholds.idleUtilisation);
  local teamLabel = k8s.teamLabel;

  // The devices a pod holds, one series each (a GPU shared by several containers of one pod counts once):
  // whole GPUs' utilisation (recorded, SM active or GPU utilisation) and MIG instances' SM activity.
  local deviceUtil = |||
    max by (%(device)s) (
      gpuscope:gpu_utilisation:ratio{pod!=""}
      or
      %(mig)s
    )
  ||| % {
    device: by(['instance', 'UUID', 'GPU_I_ID', 'namespace', 'pod']),
    mig: k8s.gpuSel('DCGM_FI_PROF_SM_ACTIVE', 'GPU_I_ID!="", pod!=""'),
  };
  local perPod(record, expr) = { record: record, expr: k8s.withTeam(expr) };
  // namespace:<name> and team:<name> from a per-pod record.
  local rollup(name, from) = [
    { record: '%s:%s' % [level, name], expr: 'sum by (%s) (%s)' % [by([level]), from] }
    for level in ['namespace', 'team']
  ];
  local ratio(name, num, den) = [
    {
      record: '%s:%s' % [level, name],
      expr: '(sum by (%(by)s) (%(num)s) or sum by (%(by)s) (%(den)s) * 0) / (sum by (%(by)s) (%(den)s) > 0)' % {
        by: by([level]),
        num: num,
        den: den,
      },
    }
    for level in ['namespace', 'team']
  ];
  local idleHours = 'namespace_model:gpu_allocated_idle_hours:sum_%s' % idleWindow;
  local idleCost = 'namespace_model:gpu_allocated_idle_cost:sum_%s' % idleWindow;
  local nodeAgent(name) = {
    record: 'node_resource:k8s_%s:sum' % name,
    expr: |||
      sum by (%(by)s) (%(series)s)
        * on (instance) group_left (%(node)s)
      max by (instance, %(node)s) (%(info)s)
    ||| % {
      by: by(['instance', 'resource']),
      series: k8s.gpuSel('gpuscope_k8s_%s' % name),
      node: l.node,
      info: k8s.gpuSel('gpuscope_gpu_info'),
    },
  };
  local agentCounts = ['gpus_allocatable', 'gpus_allocated', 'gpus_allocated_idle', 'gpus_in_use'];

  // The namespace -> team table, one constant series per entry. (The team of a pod is one series even
  // while its label changes: topk keeps one, so the joins never fail on a duplicate.)
  [
    {
      record: k8s.namespaceTeamConfig,
      expr: 'vector(1)',
      labels: { namespace: ns, team: k.namespaceTeams[ns] },
    }
    for ns in std.objectFields(k.namespaceTeams)
  ] + [
    // The cost table: cost of a whole GPU-hour per modelName.
    {
      record: k8s.costConfig,
      expr: 'vector(%s)' % util.num(k.costPerGpuHour[model]),
      labels: { modelName: model },
    }
    for model in std.objectFields(k.costPerGpuHour)
  ] + [
    {
      record: k8s.teamInfo,
      expr: |||
        topk by (%(pod)s) (1, group by (%(pod)s, team) (
          label_replace(%(podInfo)s, "team", "$1", "%(label)s", "(.+)")
          or on (%(pod)s)
          (label_replace(%(podLabels)s, "team", "$1", "%(label)s", "(.+)") and on (%(pod)s) %(gpuPods)s)
          or on (%(pod)s)
          (%(gpuPods)s * on (namespace) group_left (team) %(config)s)
          or on (%(pod)s)
          label_replace(%(gpuPods)s, "team", "%(default)s", "", "")
        ))
      ||| % {
        pod: pod,
        label: teamLabel,
        podInfo: k8s.gpuSel('gpuscope_k8s_pod_info', '%s!=""' % teamLabel),
        podLabels: k8s.ksmSel('kube_pod_labels', '%s!=""' % teamLabel),
        gpuPods: k8s.gpuPods,
        config: k8s.namespaceTeamConfig,
        default: k.defaultTeam,
      },
    },
    perPod('namespace_pod:gpu_utilisation:sum', 'sum by (%s) (%s)' % [pod, deviceUtil]),
    perPod('namespace_pod:gpu_devices:count', 'count by (%s) (%s)' % [pod, deviceUtil]),
    perPod('namespace_pod:gpu_devices_busy:count', 'sum by (%s) (%s >= bool %s)' % [pod, deviceUtil, threshold]),
    perPod('namespace_pod:gpus_requested_running:sum',
           'sum by (%s) (%s) and on (%s) %s' % [pod, k8s.requests, pod, k8s.inPhase('Running')]),
    perPod('namespace_pod_model:gpus_allocated_idle:sum', |||
      sum by (%(pod)s, modelName) (
        max by (%(device)s) (%(idle)s)
      )
    ||| % {
      pod: pod,
      device: by(['instance', 'UUID', 'namespace', 'pod', 'modelName']),
      idle: k8s.gpuSel('gpuscope_k8s_gpu_allocated_idle', 'GPU_I_ID="", pod!=""'),
    }),
    perPod('namespace_pod:gpu_pod_pending_age:seconds', |||
      (time() - max by (%(pod)s) (%(created)s))
        and on (%(pod)s) %(pending)s
        and on (%(pod)s) (sum by (%(pod)s) (%(requests)s) > 0)
    ||| % {
      pod: pod,
      created: k8s.ksmSel('kube_pod_created'),
      pending: k8s.inPhase('Pending'),
      requests: k8s.requests,
    }),
    perPod('namespace_pod:gpus_requested_pending:sum',
           'sum by (%s) (%s) and on (%s) %s' % [pod, k8s.requests, pod, k8s.inPhase('Pending')]),
  ] + [
    {
      record: '%s:gpu_utilisation:avg' % level,
      expr: 'sum by (%(by)s) (namespace_pod:gpu_utilisation:sum) / sum by (%(by)s) (namespace_pod:gpu_devices:count)' % {
        by: by([level]),
      },
    }
    for level in ['namespace', 'team']
  ]
  + rollup('gpu_devices:count', 'namespace_pod:gpu_devices:count')
  + rollup('gpus_requested:sum', 'namespace_pod:gpus_requested_running:sum')
  // Allocation efficiency: busy devices over the GPUs the namespace's running pods request.
  + ratio('gpu_allocation_efficiency:ratio', 'namespace_pod:gpu_devices_busy:count', 'namespace_pod:gpus_requested_running:sum')
  // Used vs requested: the utilisation summed over the devices, over the GPUs requested.
  + ratio('gpu_requested_utilisation:ratio', 'namespace_pod:gpu_utilisation:sum', 'namespace_pod:gpus_requested_running:sum')
  + [
    {
      record: idleHours,
      expr: 'sum by (%s) (sum_over_time(namespace_pod_model:gpus_allocated_idle:sum[%s])) * %d / 3600' % [
        by(['namespace', 'team', 'modelName']),
        idleWindow,
        interval,
      ],
    },
    {
      record: idleCost,
      expr: |||
        %(hours)s * on (modelName) group_left () %(cost)s
        or
        (%(hours)s unless on (modelName) %(cost)s) * %(default)s
      ||| % { hours: idleHours, cost: k8s.costConfig, default: util.num(k.defaultCostPerGpuHour) },
    },
  ]
  + rollup('gpu_allocated_idle_hours:sum_%s' % idleWindow, idleHours)
  + rollup('gpu_allocated_idle_cost:sum_%s' % idleWindow, idleCost)
  + rollup('gpu_pods_pending:count', 'count by (%s) (namespace_pod:gpu_pod_pending_age:seconds)' % by(['namespace', 'team']))
  + rollup('gpus_pending:sum', 'namespace_pod:gpus_requested_pending:sum')
  + [
    {
      record: '%s:gpu_pod_pending_age_seconds:max' % level,
      expr: 'max by (%s) (namespace_pod:gpu_pod_pending_age:seconds)' % by([level]),
    }
    for level in ['namespace', 'team']
  ]
  + [nodeAgent(name) for name in agentCounts]
  + [
    {
      record: 'node_resource:k8s_gpus_free:sum',
      expr: 'node_resource:k8s_gpus_allocatable:sum - node_resource:k8s_gpus_allocated:sum',
    },
  ] + [
    {
      record: 'cluster_resource:k8s_%s:sum' % name,
      expr: 'sum by (%s) (node_resource:k8s_%s:sum)' % [by(['resource']), name],
    }
    for name in agentCounts + ['gpus_free']
  ] + [
    {
      // The pods of each GPU shared by time-slicing or MPS replicas, with their team.
      record: 'gpu_pod:k8s_gpu_shared:info',
      expr: k8s.withTeam('group by (%s) (%s)' % [
        by(l.gpu + ['namespace', 'pod']),
        k8s.gpuSel('gpuscope_k8s_gpu_allocation_info', 'shared="true", pod!=""'),
      ]),
    },
    {
      record: 'node:kube_gpus_allocatable:sum',
      expr: 'sum by (%s) (%s)' % [by(['node']), k8s.ksmSel('kube_node_status_allocatable', 'resource="nvidia_com_gpu"')],
    },
    {
      // GPUs requested by the running pods of each node.
      record: 'node:kube_gpus_requested:sum',
      expr: 'sum by (%s) (%s * on (%s) group_left () %s)' % [by(['node']), k8s.requests, pod, k8s.inPhase('Running')],
    },
    {
      record: 'node:kube_gpus_free:sum',
      expr: 'node:kube_gpus_allocatable:sum - (node:kube_gpus_requested:sum or node:kube_gpus_allocatable:sum * 0)',
    },
  ]
