// Parses /proc/<pid>/cgroup into the Slurm job (and step, task, uid) whose cgroup holds the process, or
// into the Kubernetes pod (its UID, and the container's runtime id) whose cgroup holds it.
// Slurm's cgroup plugins place every task of a job under a directory named after it; the layouts known
// (Slurm 20.11 to 24.x) are:
//   cgroup v1 (one line per hierarchy: freezer, memory, devices, cpuset, cpuacct, ...):
//     "4:memory:/slurm/uid_1001/job_1234/step_0/task_0"
//     "4:memory:/slurm_node7/uid_1001/job_1234/step_0/task_0"        (MultipleSlurmd: slurm_<nodename>)
//   cgroup v2 (one "0::" line):
//     "0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0"
//     "0::/system.slice/node7_slurmstepd.scope/job_1234/step_batch/user/task_0"  (<nodename>_slurmstepd)
//     "0::/slurm/job_1234/step_0/user/task_0"                      (IgnoreSystemd=yes, custom roots)
// Steps are numbers ("0", het components "0+1") or the named steps batch, extern, interactive.
// A job directory counts only under a Slurm root component (slurm, slurm_<node>, slurmstepd.scope,
// <node>_slurmstepd.scope), so a docker/k8s/user cgroup that happens to contain "job_1" is not a job.
//
// The kubelet places every container under its pod's cgroup, named after the pod's UID
// (metadata.uid), below a QoS class directory (none for Guaranteed pods). With the systemd cgroup driver
// the names are systemd slices and scopes, the UID's dashes written as underscores; with the cgroupfs
// driver plain directories. The same paths appear in cgroup v1 (on each controller's line) and v2:
//   systemd:
//   "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<u_i_d>.slice/cri-containerd-<id>.scope"
//             "0::/kubepods.slice/kubepods-pod<u_i_d>.slice/crio-<id>.scope"                     (Guaranteed)
//             ".../kubepods-besteffort.slice/kubepods-besteffort-pod<u_i_d>.slice/docker-<id>.scope"
//             "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod<u_i_d>.slice/..."  (kind and
//             other kubelets started with a parent slice)
//   cgroupfs: "4:memory:/kubepods/burstable/pod<uid>/<id>", "0::/kubepods/pod<uid>/<id>",
//             "0::/docker/<node id>/kubepods/besteffort/pod<uid>/<id>"                       (nested nodes)
// A pod component counts only directly under a kubepods root or its QoS class, so a user cgroup that
// happens to contain "pod..." is not a pod. A process in the pod's own cgroup (no container below it) has
// a pod UID and no container id; a "crio-conmon-<id>.scope" (CRI-O's monitor) names no container.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gpuscope {

struct SlurmCgroup {
  std::string job_id;   // digits, never empty
  std::string step_id;  // "0", "0+1", "batch", "extern", "interactive"; empty when the path stops at the job
  std::string task_id;  // digits; empty when unknown
  std::string uid;      // digits from v1's uid_<n>; empty for v2 (its paths carry no uid)
};

struct PodCgroup {
  std::string pod_uid;       // lower-case, dashed as the API server writes metadata.uid; never empty
  std::string container_id;  // the runtime's container id (hex); empty when the path stops at the pod
};

// The Slurm job of one cgroup path ("/slurm/uid_1/job_2/step_0"). Returns nullopt for a path that is not
// inside a Slurm job cgroup, or whose job component is malformed.
std::optional<SlurmCgroup> ParseSlurmCgroupPath(std::string_view path);

// The Slurm job of the whole file. The unified line ("0::...") is tried first, then the v1 lines in file
// order; the first that names a job wins (on a hybrid host the unified line shows systemd's placement,
// e.g. "/system.slice/slurmd.service", while the v1 controllers hold the job). Malformed lines are
// skipped. Returns nullopt when no line names a Slurm job.
std::optional<SlurmCgroup> ParseProcCgroup(std::string_view content);

// The Kubernetes pod of one cgroup path ("/kubepods/burstable/pod<uid>/<id>"). Returns nullopt for a path
// that is not inside a pod's cgroup, or whose pod component is malformed (not a UID).
std::optional<PodCgroup> ParsePodCgroupPath(std::string_view path);

// The Kubernetes pod of the whole file, with the same line order as ParseProcCgroup: the unified line
// first, then the v1 lines in file order; the first that names a pod wins. Returns nullopt when no line
// names a pod.
std::optional<PodCgroup> ParseProcCgroupPod(std::string_view content);

}  // namespace gpuscope
