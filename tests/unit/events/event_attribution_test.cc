#include "src/events/event_attribution.h"

#include <gtest/gtest.h>

#include <memory>
#include <tuple>

#include "tests/unit/node/test_inventory.h"

namespace gpuscope {
namespace {

using testing::Job;
using testing::OpenedGpus;

TEST(JobIdFromPathTest, FindsSlurmOutputAndJobDirectories) {
  EXPECT_EQ(JobIdFromPath("/home/alice/run/slurm-4242.out"), "4242");
  EXPECT_EQ(JobIdFromPath("slurm-4242.err"), "4242");
  EXPECT_EQ(JobIdFromPath("/scratch/slurm-100_7.out"), "100_7");
  EXPECT_EQ(JobIdFromPath("/var/log/jobs/job_555/rank0.log"), "555");
  EXPECT_EQ(JobIdFromPath("/var/log/jobs/job-556.log"), "556");
  EXPECT_EQ(JobIdFromPath("/logs/job557/out.txt"), "557");
  // The file name wins over a directory.
  EXPECT_EQ(JobIdFromPath("/logs/job_1/slurm-2.out"), "2");
}

TEST(JobIdFromPathTest, IgnoresLookalikes) {
  EXPECT_EQ(JobIdFromPath("/var/log/slurm/slurmd.log"), "");
  EXPECT_EQ(JobIdFromPath("/var/log/kern.log"), "");
  EXPECT_EQ(JobIdFromPath("/home/jobs/jobber12x/out"), "");
  EXPECT_EQ(JobIdFromPath("/logs/job12abc/out"), "");
  EXPECT_EQ(JobIdFromPath("slurm-.out"), "");
  EXPECT_EQ(JobIdFromPath(""), "");
}

// An inventory of opened GPUs, as the GPU collector publishes it: (NVML index, PCI bus id, UUID).
class AttributeEventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    AttributionUpdate update;
    update.allocations = {{"3", "4242", "0", ""}, {"5", "77", "", ""}, {"5", "78", "", ""}};
    update.jobs = {Job("4242", "alice", "ml-research"), Job("900", "bob", "infra")};
    jobs_.Update(AttributionSource::kMapping, update);
    gpus_.Publish(OpenedGpus({{3, "00000000:18:00.0", "GPU-three"}, {5, "00000000:2A:00.0", "GPU-five"}}));
  }
  JobTable jobs_;
  GpuDirectory gpus_;
};

TEST_F(AttributeEventTest, XidFindsItsGpuAndTheJobHoldingIt) {
  Event xid;
  xid.event_class = "xid";
  xid.fields = {{"pci_bus_id", "0000:18:00.0"}, {"xid", "13"}};
  EventAttribution who = AttributeEvent(xid, "", jobs_.Current().get(), &gpus_);
  EXPECT_EQ(who.gpu, "3");
  EXPECT_EQ(who.uuid, "GPU-three");
  EXPECT_EQ(who.job_id, "4242");
  EXPECT_EQ(who.user, "alice");
  EXPECT_EQ(who.account, "ml-research");
}

TEST_F(AttributeEventTest, ASharedGpuNamesNoSingleJob) {
  Event xid;
  xid.fields = {{"pci_bus_id", "00000000:2a:00.0"}};
  EventAttribution who = AttributeEvent(xid, "", jobs_.Current().get(), &gpus_);
  EXPECT_EQ(who.gpu, "5");
  EXPECT_EQ(who.job_id, "");
}

TEST_F(AttributeEventTest, TheLineThenThePathNameTheJob) {
  Event oom;
  oom.fields = {{"job_id", "900"}};
  EventAttribution who = AttributeEvent(oom, "/x/slurm-4242.out", jobs_.Current().get(), &gpus_);
  EXPECT_EQ(who.job_id, "900");
  EXPECT_EQ(who.user, "bob");
  Event nccl;
  who = AttributeEvent(nccl, "/x/slurm-4242.out", jobs_.Current().get(), &gpus_);
  EXPECT_EQ(who.job_id, "4242");
  EXPECT_EQ(who.account, "ml-research");
  // Unknown to the JobTable: the id stays, user and account stay empty.
  who = AttributeEvent(nccl, "/x/slurm-31337.out", jobs_.Current().get(), nullptr);
  EXPECT_EQ(who.job_id, "31337");
  EXPECT_EQ(who.user, "");
}

TEST_F(AttributeEventTest, NvswitchEventsAndUnknownBusesNameNoGpu) {
  Event sxid;
  sxid.fields = {{"nvswitch", "nvidia-nvswitch0"}, {"pci_bus_id", "0000:18:00.0"}};
  EXPECT_EQ(AttributeEvent(sxid, "", jobs_.Current().get(), &gpus_).gpu, "");
  Event xid;
  xid.fields = {{"pci_bus_id", "0000:99:00.0"}};
  EventAttribution who = AttributeEvent(xid, "", jobs_.Current().get(), &gpus_);
  EXPECT_EQ(who.gpu, "");
  EXPECT_EQ(who.job_id, "");
}

}  // namespace
}  // namespace gpuscope
