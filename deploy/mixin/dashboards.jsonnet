// The gpuscope Grafana dashboards: one JSON file per dashboard, written with
//   jsonnet -m generated/dashboards deploy/mixin/dashboards.jsonnet
// (generate.sh does it). The L1..L5 hierarchy of the deep dive (fleet, cluster, node, job, GPU) and the
// five views of the stack document (GPU cluster, network and storage, training, security, Slurm jobs),
// and the Kubernetes view.
// `overrides` is deep-merged over config.libsonnet (see README.md).
function(overrides={})
  local cfg = std.mergePatch(import 'config.libsonnet', overrides);
  local c = (import 'dashboards/common.libsonnet')(cfg);
  local boards = [
    (import 'dashboards/l1_fleet.libsonnet')(c),
    (import 'dashboards/l2_cluster.libsonnet')(c),
    (import 'dashboards/l3_node.libsonnet')(c),
    (import 'dashboards/l4_job.libsonnet')(c),
    (import 'dashboards/l5_gpu.libsonnet')(c),
    (import 'dashboards/gpu_cluster.libsonnet')(c),
    (import 'dashboards/network_storage.libsonnet')(c),
    (import 'dashboards/training.libsonnet')(c),
    (import 'dashboards/security.libsonnet')(c),
    (import 'dashboards/slurm_jobs.libsonnet')(c),
    (import 'dashboards/kubernetes.libsonnet')(c),
  ];
  { [b.uid + '.json']: b for b in boards }
