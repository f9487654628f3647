#include "src/cli/check_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscope {
namespace {

using ::testing::HasSubstr;

const std::vector<CheckFinding> kClean = {
    {"ecc", CheckStatus::kPass, "", "no volatile double-bit ECC error", ""},
    {"pcie", CheckStatus::kWarn, "GPU 0 (GPU-0)", "PCIe link x8 of x16", ""}};
const std::vector<CheckFinding> kFailing = {
    {"ecc", CheckStatus::kFail, "GPU 5 (GPU-5)", "1 volatile double-bit ECC error since the driver loaded",
     ""},
    {"xid", CheckStatus::kFail, "GPU 1 (GPU-1)", "XID 79 x1 (catalog action: reboot)", ""}};

SlurmNodeState State(bool drained, const std::string& reason) {
  return {true, drained, drained ? "drained" : "idle", reason};
}

TEST(CheckSlurm, SinfoLineGivesTheNodesDrainStateAndFullReason) {
  const std::string out =
      "node-a|gpu|drained|gpu:8|gpu:0(IDX:N/A)|gpuscope: ecc GPU 5 (GPU-5): 1 volatile double-bit ECC error "
      "(+1 more)\n"
      "node-a|debug|drained|gpu:8|gpu:0(IDX:N/A)|gpuscope: ecc GPU 5 (GPU-5): 1 volatile double-bit ECC "
      "error (+1 more)\n";
  SlurmNodeState state = ParseSlurmNodeState(out, "node-a");
  EXPECT_TRUE(state.found);
  EXPECT_TRUE(state.drained);
  EXPECT_EQ(state.reason, "gpuscope: ecc GPU 5 (GPU-5): 1 volatile double-bit ECC error (+1 more)");
  EXPECT_FALSE(ParseSlurmNodeState(out, "node-b").found);
  state = ParseSlurmNodeState("node-a|gpu*|mixed|gpu:8|gpu:2(IDX:0-1)|none\n", "node-a");
  EXPECT_TRUE(state.found);
  EXPECT_FALSE(state.drained);
  EXPECT_EQ(state.reason, "");
  EXPECT_TRUE(
      ParseSlurmNodeState("node-a|gpu|mixed+drain|gpu:8|gpu:2(IDX:0-1)|maintenance\n", "node-a").drained);
}

TEST(CheckSlurm, DrainReasonIsTheFirstFailingFindingWithTheCountOfOthers) {
  EXPECT_EQ(DrainReason(kFailing),
            "gpuscope: ecc GPU 5 (GPU-5): 1 volatile double-bit ECC error since the driver loaded (+1 more)");
  EXPECT_EQ(DrainReason(kClean), "");
  std::vector<CheckFinding> long_one = {{"gpus", CheckStatus::kFail, "", std::string(500, 'y'), ""}};
  const std::string reason = DrainReason(long_one);
  EXPECT_EQ(reason.size(), 200u);
  EXPECT_THAT(reason, ::testing::EndsWith("yyy..."));
}

TEST(CheckSlurm, FailingNodeIsDrainedUnlessSomeoneElseDrainedIt) {
  SlurmPlan plan = PlanSlurmAction(kFailing, true, false, "node-a", State(false, ""));
  EXPECT_EQ(plan.action, SlurmAction::kDrain);
  EXPECT_EQ(plan.reason, DrainReason(kFailing));
  EXPECT_THAT(plan.note, HasSubstr("drained node node-a (reason: gpuscope: ecc"));

  plan = PlanSlurmAction(kFailing, true, false, "node-a", State(true, "RMA ticket 4411"));
  EXPECT_EQ(plan.action, SlurmAction::kNone);
  EXPECT_THAT(plan.note, HasSubstr("already drained by someone else (reason: RMA ticket 4411); left as is"));

  // gpuscope's own drain for another fault gets the new reason; the same reason is left alone.
  plan = PlanSlurmAction(kFailing, true, false, "node-a", State(true, "gpuscope: nvml old finding"));
  EXPECT_EQ(plan.action, SlurmAction::kDrain);
  plan = PlanSlurmAction(kFailing, true, false, "node-a", State(true, DrainReason(kFailing)));
  EXPECT_EQ(plan.action, SlurmAction::kNone);

  // Without --slurm-drain nothing happens, even with --slurm-resume-if-clean.
  plan = PlanSlurmAction(kFailing, false, true, "node-a", State(true, "gpuscope: x"));
  EXPECT_EQ(plan.action, SlurmAction::kNone);
}

TEST(CheckSlurm, CleanNodeIsResumedOnlyWhenGpuscopeDrainedIt) {
  SlurmPlan plan = PlanSlurmAction(kClean, true, true, "node-a", State(true, "gpuscope: ecc GPU 5: ..."));
  EXPECT_EQ(plan.action, SlurmAction::kResume);
  EXPECT_THAT(plan.note, HasSubstr("resumed node node-a"));

  plan = PlanSlurmAction(kClean, true, true, "node-a", State(true, "bad fan, see ticket 12"));
  EXPECT_EQ(plan.action, SlurmAction::kNone);
  EXPECT_THAT(plan.note, HasSubstr("drained by someone else (reason: bad fan, see ticket 12); not resumed"));

  // A reason merely mentioning gpuscope is not ours.
  plan = PlanSlurmAction(kClean, false, true, "node-a", State(true, "waiting for gpuscope: upgrade"));
  EXPECT_EQ(plan.action, SlurmAction::kNone);

  plan = PlanSlurmAction(kClean, true, false, "node-a", State(true, "gpuscope: ecc"));
  EXPECT_EQ(plan.action, SlurmAction::kNone);
  plan = PlanSlurmAction(kClean, false, true, "node-a", State(false, ""));
  EXPECT_EQ(plan.action, SlurmAction::kNone);
}

TEST(CheckCommandLine, BadFlagValuesAreUsageErrorsBeforeAnythingIsRead) {
  const Command command = CheckCommand();
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--expect-gpus=eight"},
                                               {"--expect-gpus=-1"},
                                               {"--agent.timeout=0"},
                                               {"--format=yaml"},
                                               {"--nvlink.max-errors=-3"},
                                               {"--pcie.busy-utilization=x"},
                                               {"stray-argument"}}) {
    CommandLine line;
    ASSERT_TRUE(ParseCommandLine(args, command.flags, &line).ok()) << args[0];
    // An unreachable agent would be exit 2 too: point at a port nobody uses so only the usage check can
    // answer first, and tell them apart by the absence of a finding on stdout.
    line.flags["agent.url"] = "http://127.0.0.1:1";
    testing::internal::CaptureStdout();
    const int code = command.run(line);
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, kExitUsage) << args[0];
    EXPECT_EQ(out, "") << args[0];
  }
}

}  // namespace
}  // namespace gpuscope
