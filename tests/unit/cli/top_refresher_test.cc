// gpuscope top's refresher thread: the first refresh at once, a failed refresh keeping the last good snapshot
// with its error, a metric change refreshing at once with the new query, and Stop() not waiting for a query
// in flight. The waits below only guard against a hang; nothing is asserted about durations.
#include "src/cli/top_refresher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpuscope {
namespace {

constexpr double kHour = 3600;  // an interval no test waits for: refreshes come from the start and from keys

// A Prometheus stand-in: one GPU whose value is its call count, failing while `fail` is set; records the
// queries and their evaluation times.
struct FakePrometheus {
  std::atomic<bool> fail{false};
  std::mutex mu;
  std::vector<std::string> exprs;
  std::vector<double> times;

  Status Query(const std::string& expr, double time, std::vector<PromSeries>* series) {
    std::lock_guard<std::mutex> lock(mu);
    exprs.push_back(expr);
    times.push_back(time);
    if (fail) return Status::Unavailable("query " + expr + ": connection refused");
    PromSeries s;
    s.labels = {{"Hostname", "n1"}, {"gpu", "0"}};
    s.points.push_back({time, static_cast<double>(exprs.size())});
    if (expr.rfind("ALERTS", 0) != 0 && expr.rfind("gpuscope_", 0) != 0) series->push_back(s);
    return Status::Ok();
  }
};

TimedQueryFunction QueryOf(const std::shared_ptr<FakePrometheus>& fake) {
  return [fake](const std::string& expr, double time, std::vector<PromSeries>* series) {
    return fake->Query(expr, time, series);
  };
}

// Polls until the refresher has a result of at least `generation` (fails after a minute: a hang).
TopRefresh WaitFor(const TopRefresher& refresher, uint64_t generation) {
  TopRefresh latest;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (latest.generation < generation && std::chrono::steady_clock::now() < give_up) {
    if (!refresher.Latest(&latest)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(latest.generation, generation);
  return latest;
}

TEST(TopRefresherTest, TheFirstRefreshRunsAtOnceWithItsTimeAndSnapshot) {
  auto fake = std::make_shared<FakePrometheus>();
  TopRefresher refresher(
      QueryOf(fake), [] { return 1234.5; }, TopMetric::kUtilization, kHour);
  const TopRefresh latest = WaitFor(refresher, 1);
  EXPECT_EQ(latest.generation, 1u);
  EXPECT_EQ(latest.updated, 1234.5);
  EXPECT_EQ(latest.snapshot.time, 1234.5);
  EXPECT_EQ(latest.snapshot.metric, TopMetric::kUtilization);
  ASSERT_EQ(latest.snapshot.nodes.size(), 1u);
  EXPECT_EQ(latest.snapshot.nodes[0].hostname, "n1");
  EXPECT_TRUE(latest.error.empty());
  TopRefresh again = latest;
  EXPECT_FALSE(refresher.Latest(&again));  // nothing newer
  EXPECT_TRUE(refresher.Stop());
  std::lock_guard<std::mutex> lock(fake->mu);
  EXPECT_EQ(fake->exprs, FleetQueries(TopMetric::kUtilization));
  EXPECT_EQ(fake->times, std::vector<double>(kFleetQueriesPerRefresh, 1234.5));
}

TEST(TopRefresherTest, AFailedRefreshKeepsTheLastGoodSnapshotAndSaysWhy) {
  auto fake = std::make_shared<FakePrometheus>();
  std::atomic<double> clock{100};
  TopRefresher refresher(
      QueryOf(fake), [&] { return clock.load(); }, TopMetric::kUtilization, kHour);
  WaitFor(refresher, 1);
  fake->fail = true;
  clock = 200;
  refresher.SetMetric(TopMetric::kUtilization);  // a refresh at once
  const TopRefresh failed = WaitFor(refresher, 2);
  EXPECT_NE(failed.error.find("connection refused"), std::string::npos);
  EXPECT_EQ(failed.updated, 100);  // the snapshot shown is the good one of t=100
  ASSERT_EQ(failed.snapshot.nodes.size(), 1u);
  fake->fail = false;
  clock = 300;
  refresher.SetInterval(kHour);  // a refresh at once too
  const TopRefresh recovered = WaitFor(refresher, 3);
  EXPECT_TRUE(recovered.error.empty());
  EXPECT_EQ(recovered.updated, 300);
}

TEST(TopRefresherTest, AMetricChangeRefreshesAtOnceWithTheNewQuery) {
  auto fake = std::make_shared<FakePrometheus>();
  TopRefresher refresher(
      QueryOf(fake), [] { return 1.0; }, TopMetric::kUtilization, kHour);
  WaitFor(refresher, 1);
  refresher.SetMetric(TopMetric::kTemperature);
  const TopRefresh latest = WaitFor(refresher, 2);
  EXPECT_EQ(latest.snapshot.metric, TopMetric::kTemperature);
  std::lock_guard<std::mutex> lock(fake->mu);
  ASSERT_EQ(fake->exprs.size(), 2u * kFleetQueriesPerRefresh);
  EXPECT_EQ(fake->exprs[kFleetQueriesPerRefresh], MetricInfo(TopMetric::kTemperature).promql);
}

TEST(TopRefresherTest, StopDoesNotWaitForAQueryInFlight) {
  // The query blocks until the test releases it, after Stop() has returned.
  struct Gate {
    std::promise<void> entered, release, left;
  };
  auto gate = std::make_shared<Gate>();
  std::shared_future<void> release = gate->release.get_future().share();
  auto calls = std::make_shared<std::atomic<int>>(0);
  TopRefresher refresher(
      [gate, release, calls](const std::string&, double, std::vector<PromSeries>*) {
        if (calls->fetch_add(1) == 0) {
          gate->entered.set_value();
          release.wait();
          gate->left.set_value();
        }
        return Status::Unavailable("released");
      },
      [] { return 1.0; }, TopMetric::kUtilization, kHour);
  gate->entered.get_future().wait();
  EXPECT_FALSE(refresher.Stop());  // returned while the query still blocks
  gate->release.set_value();
  gate->left.get_future().wait();
  EXPECT_EQ(calls->load(), 1);  // the failed query ended that refresh; no other began
}

TEST(TopRefresherTest, StopBetweenRefreshesEndsTheThread) {
  auto fake = std::make_shared<FakePrometheus>();
  TopRefresher refresher(
      QueryOf(fake), [] { return 1.0; }, TopMetric::kUtilization, kHour);
  WaitFor(refresher, 1);
  EXPECT_TRUE(refresher.Stop());  // wakes the hour-long wait and joins
  EXPECT_TRUE(refresher.Stop());
}

}  // namespace
}  // namespace gpuscope
