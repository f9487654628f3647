// What the Kubernetes rules and alerts share: selectors of kube-state-metrics' and the agent's
// gpuscope_k8s_* series, the GPU pods (those holding a device on an agent's node, or requesting
// nvidia.com/gpu in kube-state-metrics), and the join that gives a pod-level expression its team.
// Everything is keyed by (cluster labels, namespace, pod): one series per GPU pod at most, so the joins stay
// at the cardinality of the GPU pods, never of the GPU series.
local util = import 'util.libsonnet';

function(cfg)
  local s = cfg.selectors;
  local cl = cfg.labels.clusterLabels;
  local k = cfg.kubernetes;
  local pod = util.by(cl + ['namespace', 'pod']);
  {
    gpuSel(m, extra=''):: util.sel(m, s.gpuscope, extra),
    ksmSel(m, extra=''):: util.sel(m, s.kubeStateMetrics, extra),
    // by/on clause of one pod, of one namespace.
    pod:: pod,
    namespace:: util.by(cl + ['namespace']),
    by(extra):: util.by(cl + extra),

    // kube-state-metrics' GPU requests (whole GPUs; kube-state-metrics writes nvidia.com/gpu as nvidia_com_gpu).
    requests:: self.ksmSel('kube_pod_container_resource_requests', 'resource="nvidia_com_gpu"'),
    // 1 for each pod in phase p.
    inPhase(p):: '(max by (%s) (%s) == 1)' % [self.pod, self.ksmSel('kube_pod_status_phase', 'phase="%s"' % p)],

    // The GPU pods, one series each.
    gpuPods:: '(group by (%(pod)s) (%(info)s) or group by (%(pod)s) (%(requests)s > 0))' % {
      pod: pod,
      info: $.gpuSel('gpuscope_k8s_pod_info'),
      requests: $.requests,
    },

    // Recorded: the team of every GPU pod (lib/recording.libsonnet), and the static table behind it.
    teamInfo:: 'namespace_pod:gpu_pod_team:info',
    namespaceTeamConfig:: 'gpuscope:k8s_namespace_team:config',
    costConfig:: 'gpuscope:gpu_cost_per_hour:config',
    teamLabel:: k.teamLabel,

    // A pod-level expression (its labels include the pod's) with the pod's team added.
    withTeam(expr):: '(%s) * on (%s) group_left (team) %s' % [expr, self.pod, self.teamInfo],
  }
