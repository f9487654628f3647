#include "src/platform/process_limits.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace gpuscope {
namespace {

TEST(ProcessLimits, RaisesTheSoftOpenFileLimitToTheHardLimit) {
  rlimit original{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  if (original.rlim_max < 64) GTEST_SKIP() << "hard limit too low to lower the soft one";
  rlimit lowered = original;
  lowered.rlim_cur = 32;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);

  OpenFileLimit limit = RaiseOpenFileLimit();

  rlimit now{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, original.rlim_max);
  EXPECT_EQ(limit.soft, static_cast<uint64_t>(original.rlim_max));
  EXPECT_EQ(limit.hard, static_cast<uint64_t>(original.rlim_max));
  // Already at the hard limit: nothing changes.
  EXPECT_EQ(RaiseOpenFileLimit().soft, static_cast<uint64_t>(original.rlim_max));
  setrlimit(RLIMIT_NOFILE, &original);
}

}  // namespace
}  // namespace gpuscope
