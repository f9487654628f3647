// Kubernetes alerts (group gpuscope.kubernetes.alerts), built with the `alert` of lib/alerts.libsonnet.
// Alerts about a namespace's pods or quota carry `tenant` (the namespace) and `team`, the team of the pod
// (namespace_pod:gpu_pod_team:info) or of the namespace (kubernetes.namespaceTeams, else its GPU pods'
// team label, else kubernetes.defaultTeam): Alertmanager sends them to the namespace-team receiver,
// grouped by team and tenant, unless the team is infra or ml-platform (then their routes take them).
local util = import 'util.libsonnet';

function(cfg, alert)
  local k8s = (import 'kubernetes.libsonnet')(cfg);
  local k = cfg.kubernetes;
  local l = cfg.labels;
  local t = cfg.thresholds;
  local f = cfg['for'];
  local cl = l.clusterLabels;
  local by = k8s.by;
  local gpuOn = by(['instance', 'UUID']);
  local nsTeam = '{{ $labels.team }}';
  local tenantLabels = { tenant: '{{ $labels.namespace }}' };

  // A pod-level expression with its pod's team, else the default team.
  local withPodTeam(expr) = |||
    %(joined)s
    or ignoring (team)
    label_replace(%(expr)s, "team", "%(default)s", "", "")
  ||| % { joined: k8s.withTeam(std.rstripChars(expr, '\n')), expr: std.rstripChars(expr, '\n'), default: k.defaultTeam };
  // A namespace-level expression with the namespace's team: the configured one, else its GPU pods' (one
  // series per team when pods of several teams share the namespace), else the default team.
  local withNamespaceTeam(expr) = |||
    (%(expr)s) * on (namespace) group_left (team) %(config)s
    or ignoring (team)
    (%(expr)s) * on (%(ns)s) group_left (team) group by (%(ns)s, team) (%(teamInfo)s)
    or ignoring (team)
    label_replace(%(expr)s, "team", "%(default)s", "", "")
  ||| % {
    expr: std.rstripChars(expr, '\n'),
    config: k8s.namespaceTeamConfig,
    ns: k8s.namespace,
    teamInfo: k8s.teamInfo,
    default: k.defaultTeam,
  };
  // An agent-level expression (by instance) with the node's Hostname where the agent sees GPUs.
  local withNode(expr) = |||
    (%(expr)s) * on (instance) group_left (%(node)s) max by (instance, %(node)s) (%(info)s)
    or ignoring (%(node)s)
    (%(expr)s)
  ||| % { expr: std.rstripChars(expr, '\n'), node: l.node, info: k8s.gpuSel('gpuscope_gpu_info') };

  // Framebuffer used by each pod's processes on each GPU (bytes).
  local podMemory = 'sum by (%s) (%s)' % [
    by(l.gpu + ['namespace', 'pod']),
    k8s.gpuSel('gpuscope_gpu_process_memory_bytes', 'pod!=""'),
  ];
  // GPUs shared (time-slicing or MPS replicas) by at least two pods.
  local sharedGpus = 'count by (%s) (group by (%s, namespace, pod) (%s)) >= 2' % [
    gpuOn,
    gpuOn,
    k8s.gpuSel('gpuscope_k8s_gpu_allocation_info', 'shared="true"'),
  ];
  // GPUs whose memory is saturated: memory interface busy (profiling metrics, else NVML's memory
  // utilisation on GPUs without them) or framebuffer nearly full.
  local saturated = |||
    max by (%(on)s) (%(dram)s) >= %(dramActive)s
    or
    (max by (%(on)s) (%(copy)s) / 100 unless on (%(on)s) %(dram)s) >= %(dramActive)s
    or
    max by (%(on)s) (%(fbUsed)s) / (max by (%(on)s) (%(fbUsed)s) + max by (%(on)s) (%(fbFree)s)) >= %(fbRatio)s
  ||| % {
    on: gpuOn,
    dram: k8s.gpuSel('DCGM_FI_PROF_DRAM_ACTIVE', 'GPU_I_ID=""'),
    copy: k8s.gpuSel('DCGM_FI_DEV_MEM_COPY_UTIL'),
    fbUsed: k8s.gpuSel('DCGM_FI_DEV_FB_USED', 'GPU_I_ID=""'),
    fbFree: k8s.gpuSel('DCGM_FI_DEV_FB_FREE', 'GPU_I_ID=""'),
    dramActive: util.num(t.noisyDramActive),
    fbRatio: util.num(t.noisyFbUsedRatio),
  };
  local apiRequests = k8s.gpuSel('gpuscope_k8s_api_requests_total');
  local apiFailed = k8s.gpuSel('gpuscope_k8s_api_requests_total', 'result!~"ok|not_found"');

  [
    alert(
      'GpuPodAllocatedIdle',
      withPodTeam('max by (%s) (%s) == 1' % [
        by(l.gpu + ['GPU_I_ID', 'namespace', 'pod']),
        k8s.gpuSel('gpuscope_k8s_gpu_allocated_idle', 'pod!=""'),
      ]),
      f.podAllocatedIdle,
      'ticket',
      nsTeam,
      'utilisation',
      'gpu',
      'GPU held by a pod but idle',
      '{{ $labels.Hostname }} GPU {{ $labels.gpu }}{{ with $labels.GPU_I_ID }} (MIG instance {{ . }}){{ end }} is allocated to pod {{ $labels.namespace }}/{{ $labels.pod }} but has run below %g%% utilisation for %s. Scale the workload down or release the GPU.' % [t.idleUtilisation * 100, f.podAllocatedIdle],
      tenantLabels,
    ),
    alert(
      'GpuPodPendingTooLong',
      'namespace_pod:gpu_pod_pending_age:seconds > %d' % (t.podPendingMinutes * 60),
      f.podPending,
      'ticket',
      cfg.teams.mlPlatform,
      'capacity',
      'pod',
      'GPU pod pending for more than %d minutes' % t.podPendingMinutes,
      std.format('Pod {{ $labels.namespace }}/{{ $labels.pod }} (team {{ $labels.team }}) requests GPUs and has been pending for more than %d minutes: no node has the GPUs free, or its node selector, tolerations or affinity match none that has.', [t.podPendingMinutes]),
    ),
    alert(
      'GpuNamespaceQuotaExhausted',
      withNamespaceTeam(|||
        (
          max by (%(q)s) (%(used)s)
            >= on (%(q)s)
          max by (%(q)s) (%(hard)s)
          or
          max by (%(q)s) (%(used)s) + on (%(ns)s) group_left () namespace:gpus_pending:sum
            > on (%(q)s)
          max by (%(q)s) (%(hard)s)
        )
        and on (%(q)s) max by (%(q)s) (%(hard)s) > 0
      ||| % {
        q: by(['namespace', 'resourcequota']),
        ns: k8s.namespace,
        used: k8s.ksmSel('kube_resourcequota', 'resource="requests.nvidia.com/gpu", type="used"'),
        hard: k8s.ksmSel('kube_resourcequota', 'resource="requests.nvidia.com/gpu", type="hard"'),
      }),
      f.namespaceQuota,
      'ticket',
      nsTeam,
      'capacity',
      'namespace',
      'Namespace at its GPU quota',
      'Namespace {{ $labels.namespace }} uses or waits for {{ $value }} GPUs under resource quota {{ $labels.resourcequota }}, at or above its hard limit (requests.nvidia.com/gpu): the API server refuses its new GPU pods.',
      tenantLabels,
    ),
    alert(
      'GpuSharedNoisyNeighbour',
      withPodTeam(|||
        %(podMemory)s
          / on (%(on)s) group_left ()
        sum by (%(on)s) (%(podMemory)s)
          >= %(share)s
        and on (%(on)s) (%(shared)s)
        and on (%(on)s) (
          %(saturated)s
        )
      ||| % {
        podMemory: podMemory,
        on: gpuOn,
        share: util.num(t.noisyMemoryShare),
        shared: sharedGpus,
        saturated: std.rstripChars(saturated, '\n'),
      }),
      f.noisyNeighbour,
      'ticket',
      nsTeam,
      'utilisation',
      'gpu',
      'Pod starving its neighbours on a shared GPU',
      'Pod {{ $labels.namespace }}/{{ $labels.pod }} holds {{ $value | humanizePercentage }} of the framebuffer used on {{ $labels.Hostname }} GPU {{ $labels.gpu }}, which it shares (time-slicing or MPS) with other pods, while the GPU\'s memory is saturated (memory interface busy at least %g%% of the time, or framebuffer at least %g%% full): the other pods wait for memory bandwidth or fail to allocate.' % [t.noisyDramActive * 100, t.noisyFbUsedRatio * 100],
      tenantLabels,
    ),
    alert(
      'GpuscopeKubeletPodResourcesDown',
      withNode('max by (%s) (%s) == 0' % [by(['instance']), k8s.gpuSel('gpuscope_k8s_pod_resources_up')]),
      f.podResourcesDown,
      'ticket',
      cfg.teams.infra,
      'kubernetes',
      'node',
      'gpuscope cannot read the kubelet pod-resources API',
      'The agent at {{ $labels.instance }}{{ with $labels.Hostname }} ({{ . }}){{ end }} has not reached the kubelet pod-resources socket for %s: its GPU series carry no pod, namespace or container, and the node\'s allocation counts are missing.' % f.podResourcesDown,
    ),
    alert(
      'GpuscopeKubernetesApiFailing',
      withNode(|||
        max by (%(by)s) (%(up)s) == 0
        or
        sum by (%(by)s) (rate(%(failed)s[%(w)s])) / (sum by (%(by)s) (rate(%(all)s[%(w)s])) > 0) > %(ratio)s
      ||| % {
        by: by(['instance']),
        up: k8s.gpuSel('gpuscope_k8s_api_up'),
        failed: apiFailed,
        all: apiRequests,
        w: cfg.windows.rate,
        ratio: util.num(t.k8sApiFailureRatio),
      }),
      f.apiServerFailing,
      'ticket',
      cfg.teams.infra,
      'kubernetes',
      'node',
      'gpuscope cannot look pods up in the Kubernetes API server',
      'The agent at {{ $labels.instance }}{{ with $labels.Hostname }} ({{ . }}){{ end }} reaches no API server, or more than %g%% of its pod, ReplicaSet and Job lookups failed over %s: gpuscope_k8s_pod_info lacks owners and team labels, so its pods fall back to their namespace\'s team.' % [t.k8sApiFailureRatio * 100, cfg.windows.rate],
    ),
  ]
