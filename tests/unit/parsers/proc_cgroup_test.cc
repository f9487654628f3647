#include "src/parsers/proc_cgroup.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscope {
namespace {

TEST(ProcCgroupTest, V1MemoryLineGivesJobStepTaskAndUid) {
  auto got = ParseProcCgroup("10:memory:/slurm/uid_1001/job_1234/step_0/task_0\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "1234");
  EXPECT_EQ(got->step_id, "0");
  EXPECT_EQ(got->task_id, "0");
  EXPECT_EQ(got->uid, "1001");
}

TEST(ProcCgroupTest, V1EveryControllerSlurmUsesIsRecognised) {
  for (const char* controller : {"freezer", "devices", "cpuset", "memory", "cpu,cpuacct"}) {
    std::string line = std::string("3:") + controller + ":/slurm/uid_7/job_99/step_12/task_4\n";
    auto got = ParseProcCgroup(line);
    ASSERT_TRUE(got.has_value()) << controller;
    EXPECT_EQ(got->job_id, "99") << controller;
    EXPECT_EQ(got->step_id, "12") << controller;
  }
}

TEST(ProcCgroupTest, V1HybridHostSkipsSystemdLinesAndFindsTheJobOnAController) {
  auto got = ParseProcCgroup(
      "12:pids:/system.slice/slurmd.service\n"
      "11:freezer:/slurm/uid_1001/job_1234/step_batch/task_0\n"
      "1:name=systemd:/system.slice/slurmd.service\n"
      "0::/system.slice/slurmd.service\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "1234");
  EXPECT_EQ(got->step_id, "batch");
}

TEST(ProcCgroupTest, V1MultipleSlurmdRootCarriesTheNodeName) {
  auto got = ParseProcCgroup("6:freezer:/slurm_node07/uid_1006/job_42/step_1/task_3\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "42");
  EXPECT_EQ(got->step_id, "1");
  EXPECT_EQ(got->task_id, "3");
  EXPECT_EQ(got->uid, "1006");
}

TEST(ProcCgroupTest, V2SlurmstepdScopeGivesJobStepTaskWithoutUid) {
  auto got = ParseProcCgroup("0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "1234");
  EXPECT_EQ(got->step_id, "0");
  EXPECT_EQ(got->task_id, "0");
  EXPECT_EQ(got->uid, "");
}

TEST(ProcCgroupTest, V2NamedStepsAreKeptByName) {
  for (const char* step : {"batch", "extern", "interactive"}) {
    std::string line = std::string("0::/system.slice/slurmstepd.scope/job_5/step_") + step + "/user/task_0";
    auto got = ParseProcCgroup(line);
    ASSERT_TRUE(got.has_value()) << step;
    EXPECT_EQ(got->step_id, step);
  }
}

TEST(ProcCgroupTest, V2NodePrefixedScopeAndSlurmRootAreRecognised) {
  auto scoped = ParseProcCgroup("0::/system.slice/node07_slurmstepd.scope/job_4444/step_2/user/task_1\n");
  ASSERT_TRUE(scoped.has_value());
  EXPECT_EQ(scoped->job_id, "4444");
  EXPECT_EQ(scoped->task_id, "1");
  auto slurm_root = ParseProcCgroup("0::/slurm/job_777/step_extern/user/task_special\n");
  ASSERT_TRUE(slurm_root.has_value());
  EXPECT_EQ(slurm_root->job_id, "777");
  EXPECT_EQ(slurm_root->step_id, "extern");
  EXPECT_EQ(slurm_root->task_id, "");  // task_special is slurmstepd's, not a numbered task
}

TEST(ProcCgroupTest, V2SlurmstepdOwnCgroupAndJobLevelPathsStillNameTheJob) {
  auto stepd = ParseProcCgroup("0::/system.slice/slurmstepd.scope/job_8/step_0/slurm\n");
  ASSERT_TRUE(stepd.has_value());
  EXPECT_EQ(stepd->job_id, "8");
  EXPECT_EQ(stepd->step_id, "0");
  EXPECT_EQ(stepd->task_id, "");
  auto job_only = ParseProcCgroup("0::/system.slice/slurmstepd.scope/job_8\n");
  ASSERT_TRUE(job_only.has_value());
  EXPECT_EQ(job_only->step_id, "");
}

TEST(ProcCgroupTest, HeterogeneousStepComponentIsKept) {
  auto got = ParseSlurmCgroupPath("/system.slice/slurmstepd.scope/job_10/step_0+1/user/task_0");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->step_id, "0+1");
}

TEST(ProcCgroupTest, UnifiedLineWinsOverLegacyLines) {
  auto got = ParseProcCgroup(
      "4:memory:/slurm/uid_1/job_111/step_0/task_0\n"
      "0::/system.slice/slurmstepd.scope/job_222/step_0/user/task_0\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "222");
}

TEST(ProcCgroupTest, NonSlurmProcessesHaveNoJob) {
  EXPECT_FALSE(ParseProcCgroup("0::/\n").has_value());
  EXPECT_FALSE(ParseProcCgroup("0::/system.slice/docker-4f1c2d3e4b5a.scope\n").has_value());
  EXPECT_FALSE(ParseProcCgroup("0::/kubepods.slice/kubepods-burstable.slice/"
                               "kubepods-burstable-pod1a2b.slice/cri-containerd-9f8e.scope\n")
                   .has_value());
  EXPECT_FALSE(ParseProcCgroup("0::/user.slice/user-1000.slice/session-3.scope\n").has_value());
  EXPECT_FALSE(ParseProcCgroup("4:memory:/process_api/8f01d0c8\n0::/\n").has_value());
}

TEST(ProcCgroupTest, JobDirectoryOutsideASlurmRootIsNotAJob) {
  EXPECT_FALSE(ParseProcCgroup("0::/user.slice/job_1234/step_0\n").has_value());
  EXPECT_FALSE(ParseProcCgroup("0::/docker/slurmish/job_1\n").has_value());
}

TEST(ProcCgroupTest, MalformedJobOrUidComponentsAreRejected) {
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm/uid_1001/job_/step_0").has_value());
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm/uid_1001/job_12a/step_0").has_value());
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm/uid_x/job_12/step_0").has_value());
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm/uid_1/job_123456789012/step_0").has_value());  // > uint32 digits
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm/job_-1").has_value());
  EXPECT_FALSE(ParseSlurmCgroupPath("/slurm").has_value());
}

TEST(ProcCgroupTest, MalformedStepIsDroppedButTheJobKept) {
  auto got = ParseSlurmCgroupPath("/slurm/uid_1/job_12/step_bogus/task_0");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "12");
  EXPECT_EQ(got->step_id, "");
  EXPECT_EQ(got->task_id, "");
}

TEST(ProcCgroupTest, GarbageAndEmptyInputGiveNoJob) {
  EXPECT_FALSE(ParseProcCgroup("").has_value());
  EXPECT_FALSE(ParseProcCgroup("\n\n\n").has_value());
  EXPECT_FALSE(ParseProcCgroup("no colons here /slurm/job_1\n").has_value());
  EXPECT_FALSE(ParseProcCgroup(std::string("0::/slurm/job_1\0", 16).substr(0, 3)).has_value());
  EXPECT_FALSE(ParseProcCgroup("\xff\xfe:\x01:/slurm/uid_/job_").has_value());
}

TEST(ProcCgroupTest, PathWithColonsAndMissingTrailingNewlineStillParses) {
  auto got = ParseProcCgroup("0::/system.slice/slurmstepd.scope/job_9/step_0/user/task_0");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->job_id, "9");
  auto colon = ParseProcCgroup("5:memory:/weird:name/slurm/uid_2/job_3/step_0/task_0\n");
  ASSERT_TRUE(colon.has_value());
  EXPECT_EQ(colon->job_id, "3");
}

// ---- Kubernetes pods: the pod UID and container id in each cgroup driver's and QoS class's layout ----

constexpr const char* kUid = "1b2c3d4e-5f60-4718-93a4-b5c6d7e8f901";
constexpr const char* kSystemdUid = "1b2c3d4e_5f60_4718_93a4_b5c6d7e8f901";
const std::string kContainer(64, 'a');

TEST(ProcCgroupPodTest, SystemdDriverBurstablePodGivesTheDashedUidAndTheContainerdId) {
  auto got =
      ParseProcCgroupPod(std::string("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod") +
                         kSystemdUid + ".slice/cri-containerd-" + kContainer + ".scope\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod_uid, kUid) << "underscores back to the API server's dashes";
  EXPECT_EQ(got->container_id, kContainer);
}

TEST(ProcCgroupPodTest, SystemdDriverGuaranteedAndBestEffortPodsAndEachRuntimesScope) {
  const std::string guaranteed = std::string("0::/kubepods.slice/kubepods-pod") + kSystemdUid + ".slice/";
  const std::string besteffort =
      std::string("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod") + kSystemdUid +
      ".slice/";
  for (const std::string& pod : {guaranteed, besteffort}) {
    for (const char* runtime : {"cri-containerd-", "crio-", "docker-"}) {
      auto got = ParseProcCgroupPod(pod + runtime + kContainer + ".scope\n");
      ASSERT_TRUE(got.has_value()) << pod << runtime;
      EXPECT_EQ(got->pod_uid, kUid);
      EXPECT_EQ(got->container_id, kContainer) << runtime;
    }
  }
}

TEST(ProcCgroupPodTest, SystemdDriverUnderAParentSliceAsKindRunsTheKubelet) {
  auto got = ParseProcCgroupPod(
      std::string("0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
                  "kubelet-kubepods-besteffort-pod") +
      kSystemdUid + ".slice/cri-containerd-" + kContainer + ".scope\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod_uid, kUid);
  EXPECT_EQ(got->container_id, kContainer);
}

TEST(ProcCgroupPodTest, CgroupfsDriverEachQosClassOnV1AndV2) {
  for (const char* qos : {"burstable/", "besteffort/", ""}) {
    for (const char* line : {"0::", "7:memory:", "3:cpu,cpuacct:"}) {
      auto got =
          ParseProcCgroupPod(std::string(line) + "/kubepods/" + qos + "pod" + kUid + "/" + kContainer + "\n");
      ASSERT_TRUE(got.has_value()) << line << qos;
      EXPECT_EQ(got->pod_uid, kUid);
      EXPECT_EQ(got->container_id, kContainer);
    }
  }
}

TEST(ProcCgroupPodTest, CgroupfsDriverInsideANestedNodeAndDockersShortIds) {
  auto got = ParseProcCgroupPod(std::string("0::/docker/") + kContainer + "/kubepods/besteffort/pod" + kUid +
                                "/4f1c2d3e4b5a\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod_uid, kUid);
  EXPECT_EQ(got->container_id, "4f1c2d3e4b5a");
}

TEST(ProcCgroupPodTest, AProcessInThePodsOwnCgroupHasTheUidAndNoContainer) {
  auto cgroupfs = ParseProcCgroupPod(std::string("0::/kubepods/pod") + kUid + "\n");
  ASSERT_TRUE(cgroupfs.has_value());
  EXPECT_EQ(cgroupfs->pod_uid, kUid);
  EXPECT_EQ(cgroupfs->container_id, "");
  auto conmon = ParseProcCgroupPod(std::string("0::/kubepods.slice/kubepods-pod") + kSystemdUid +
                                   ".slice/crio-conmon-" + kContainer + ".scope\n");
  ASSERT_TRUE(conmon.has_value());
  EXPECT_EQ(conmon->pod_uid, kUid);
  EXPECT_EQ(conmon->container_id, "") << "CRI-O's monitor is no container";
}

TEST(ProcCgroupPodTest, UpperCaseHexIsLoweredAsTheApiServerWritesUids) {
  auto got = ParseProcCgroupPod("0::/kubepods/podABCDEF01-2345-6789-ABCD-EF0123456789/" + kContainer + "\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod_uid, "abcdef01-2345-6789-abcd-ef0123456789");
}

TEST(ProcCgroupPodTest, OnAHybridHostTheUnifiedLineWinsThenTheFirstV1Line) {
  auto got =
      ParseProcCgroupPod(std::string("12:memory:/kubepods/pod") + kUid + "/" + kContainer +
                         "\n0::/kubepods/pod" + "00000000-0000-0000-0000-000000000001/" + kContainer + "\n");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->pod_uid, "00000000-0000-0000-0000-000000000001");
  auto v1 = ParseProcCgroupPod(std::string("0::/system.slice/containerd.service\n12:memory:/kubepods/pod") +
                               kUid + "/" + kContainer + "\n");
  ASSERT_TRUE(v1.has_value()) << "systemd's unified placement names no pod: the v1 controllers do";
  EXPECT_EQ(v1->pod_uid, kUid);
}

TEST(ProcCgroupPodTest, SlurmDockerAndUserCgroupsAreNoPod) {
  EXPECT_FALSE(
      ParseProcCgroupPod("0::/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0\n").has_value());
  EXPECT_FALSE(ParseProcCgroupPod("0::/system.slice/docker-" + kContainer + ".scope\n").has_value());
  EXPECT_FALSE(ParseProcCgroupPod(std::string("0::/user.slice/pod") + kUid + "/x\n").has_value())
      << "a pod directory outside a kubepods root";
  EXPECT_FALSE(ParseProcCgroupPod("0::/kubepods.slice\n0::/kubepods\n0::/kubepods/burstable\n").has_value());
  EXPECT_FALSE(ParseProcCgroup(std::string("0::/kubepods/pod") + kUid + "/" + kContainer + "\n").has_value())
      << "and a pod is no Slurm job";
}

TEST(ProcCgroupPodTest, MalformedUidsAndMisnestedSlicesAreRejected) {
  EXPECT_FALSE(ParsePodCgroupPath("/kubepods/pod1a2b/abc").has_value()) << "too short";
  EXPECT_FALSE(ParsePodCgroupPath(std::string("/kubepods/pod") + kSystemdUid + "/x").has_value())
      << "systemd's underscores in a cgroupfs name";
  EXPECT_FALSE(ParsePodCgroupPath(std::string("/kubepods.slice/kubepods-pod") + kUid + ".slice").has_value())
      << "dashes in a systemd name";
  EXPECT_FALSE(ParsePodCgroupPath("/kubepods/podg1b2c3d4-5f60-4718-93a4-b5c6d7e8f901").has_value());
  EXPECT_FALSE(ParsePodCgroupPath("/kubepods/pod1b2c3d4e-5f60-4718-93a4-b5c6d7e8f9012").has_value());
  EXPECT_FALSE(
      ParsePodCgroupPath(std::string("/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod") +
                         kSystemdUid + ".slice")
          .has_value())
      << "a pod slice must repeat its parent's name";
  EXPECT_FALSE(
      ParsePodCgroupPath(std::string("/kubepods.slice/kubepods-pod") + kSystemdUid + ".scope").has_value());
  EXPECT_FALSE(ParsePodCgroupPath(std::string("/kubepods/guaranteed/pod") + kUid).has_value())
      << "no such QoS directory";
}

TEST(ProcCgroupPodTest, ContainerComponentsThatAreNoRuntimeIdAreDropped) {
  const std::string pod = std::string("/kubepods.slice/kubepods-pod") + kSystemdUid + ".slice/";
  EXPECT_EQ(ParsePodCgroupPath(pod + "cri-containerd-xyz.scope")->container_id, "");
  EXPECT_EQ(ParsePodCgroupPath(pod + "cri-containerd-" + kContainer)->container_id, "") << "no .scope";
  EXPECT_EQ(ParsePodCgroupPath(pod + "podman-" + kContainer + ".scope")->container_id, "");
  EXPECT_EQ(
      ParsePodCgroupPath(std::string("/kubepods/pod") + kUid + "/" + std::string(65, 'a'))->container_id, "");
}

TEST(ProcCgroupPodTest, GarbageAndEmptyInputGiveNoPod) {
  EXPECT_FALSE(ParseProcCgroupPod("").has_value());
  EXPECT_FALSE(ParseProcCgroupPod("\n\n").has_value());
  EXPECT_FALSE(ParseProcCgroupPod(std::string("no colons /kubepods/pod") + kUid).has_value());
  EXPECT_FALSE(ParseProcCgroupPod("\xff:\x01:/kubepods/pod\xff\xfe").has_value());
  EXPECT_FALSE(ParseProcCgroupPod(std::string("0::/kubepods/pod\0", 18)).has_value());
}

}  // namespace
}  // namespace gpuscope
