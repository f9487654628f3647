// ProfilingPause: pauses with an end, resumes, expiry noticed by Tick, the observer told once per change,
// and the wait for DCGM's acknowledgement. A fake clock: no wall-clock timing.
#include "src/node/profiling_pause.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace gpuscope {
namespace {

struct Fixture {
  double now = 1000;
  std::vector<ProfilingPauseChange> changes;
  ProfilingPause pause{[this] { return now; }};
  Fixture() {
    pause.SetObserver([this](const ProfilingPauseChange& c) { changes.push_back(c); });
  }
};

TEST(ProfilingPauseTest, PausesUntilItsEndAndTickResumesOnceWhenItExpires) {
  Fixture f;
  EXPECT_FALSE(f.pause.Paused());
  ASSERT_TRUE(f.pause.Pause(600, "ncu by alice").ok());
  EXPECT_TRUE(f.pause.Paused());
  ProfilingPauseState state = f.pause.State();
  EXPECT_TRUE(state.paused);
  EXPECT_EQ(state.until_unix, 1600);
  EXPECT_EQ(state.reason, "ncu by alice");
  EXPECT_EQ(state.pauses_total, 1u);
  ASSERT_EQ(f.changes.size(), 1u);
  EXPECT_TRUE(f.changes[0].paused);
  EXPECT_EQ(f.changes[0].until_unix, 1600);

  f.now = 1599;
  f.pause.Tick();
  EXPECT_TRUE(f.pause.Paused());
  EXPECT_EQ(f.changes.size(), 1u);
  f.now = 1600;
  EXPECT_FALSE(f.pause.Paused());  // over as soon as its end passes, whether or not Tick ran
  EXPECT_FALSE(f.pause.State().paused);
  EXPECT_EQ(f.pause.State().until_unix, 0);
  f.pause.Tick();
  f.pause.Tick();
  ASSERT_EQ(f.changes.size(), 2u);
  EXPECT_FALSE(f.changes[1].paused);
  EXPECT_TRUE(f.changes[1].expired);
  EXPECT_EQ(f.changes[1].reason, "ncu by alice");
  EXPECT_EQ(f.pause.State().pauses_total, 1u);
}

TEST(ProfilingPauseTest, ResumeEndsAPauseEarlyAndDoesNothingWhenNotPaused) {
  Fixture f;
  f.pause.Resume();
  EXPECT_TRUE(f.changes.empty());
  ASSERT_TRUE(f.pause.Pause(60, "").ok());
  ASSERT_TRUE(f.pause.Pause(120, "longer").ok());  // a second pause moves the end
  EXPECT_EQ(f.pause.State().until_unix, 1120);
  EXPECT_EQ(f.pause.State().pauses_total, 2u);
  f.pause.Resume();
  EXPECT_FALSE(f.pause.Paused());
  ASSERT_EQ(f.changes.size(), 3u);
  EXPECT_FALSE(f.changes[2].paused);
  EXPECT_FALSE(f.changes[2].expired);
  f.pause.Tick();
  EXPECT_EQ(f.changes.size(), 3u);
}

TEST(ProfilingPauseTest, RefusesDurationsOutsideOneSecondToOneDayAndHostileReasons) {
  Fixture f;
  for (double seconds : {0.0, -5.0, 86400.5, 1e300}) {
    EXPECT_FALSE(f.pause.Pause(seconds, "").ok()) << seconds;
  }
  EXPECT_TRUE(f.pause.Pause(86400, "").ok());
  EXPECT_FALSE(f.pause.Pause(10, std::string(201, 'x')).ok());
  EXPECT_FALSE(f.pause.Pause(10, "line\nbreak").ok());
  EXPECT_FALSE(f.pause.Pause(10, "\xff\xfe").ok());
  EXPECT_TRUE(f.pause.Pause(10, "Nsight Compute, équipe ML").ok());
  EXPECT_EQ(f.pause.State().pauses_total, 2u);
}

TEST(ProfilingPauseTest, WaitsForDcgmOnlyWhenABackendIsAttachedAndWakesIt) {
  Fixture f;
  ASSERT_TRUE(f.pause.Pause(60, "").ok());
  EXPECT_TRUE(f.pause.WaitForDcgm(f.pause.State().generation, std::chrono::milliseconds(0)));
  EXPECT_EQ(f.pause.State().dcgm, "not in use");

  std::atomic<int> wakes{0};
  f.pause.AttachDcgm([&] { ++wakes; });
  f.pause.Resume();
  EXPECT_EQ(wakes.load(), 1);
  const uint64_t generation = f.pause.State().generation;
  EXPECT_FALSE(f.pause.WaitForDcgm(generation, std::chrono::milliseconds(1)));
  std::thread backend([&] { f.pause.SetDcgmStatus("resumed", generation); });
  EXPECT_TRUE(f.pause.WaitForDcgm(generation, std::chrono::minutes(5)));
  backend.join();
  EXPECT_EQ(f.pause.State().dcgm, "resumed");
  f.pause.AttachDcgm(nullptr);
  ASSERT_TRUE(f.pause.Pause(60, "").ok());
  EXPECT_EQ(wakes.load(), 1);
}

}  // namespace
}  // namespace gpuscope
