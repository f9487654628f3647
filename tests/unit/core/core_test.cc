// Unit tests of the core model: names, durations, statuses, the snapshot store, the scheduler, logs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "src/core/duration.h"
#include "src/core/json_string.h"
#include "src/core/log.h"
#include "src/core/metric.h"
#include "src/core/scheduler.h"
#include "src/core/snapshot.h"
#include "src/core/status.h"
#include "src/core/utf8.h"

namespace gpuscope {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MetricNames, ValidNamesAreAccepted) {
  EXPECT_TRUE(IsValidMetricName("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_TRUE(IsValidMetricName("gpuscope:job_util:avg"));
  EXPECT_TRUE(IsValidLabelName("UUID"));
  EXPECT_TRUE(IsValidLabelName("_x1"));
}

TEST(MetricNames, InvalidNamesAreRejected) {
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("a-b"));
  EXPECT_FALSE(IsValidMetricName("caf\xc3\xa9"));
  EXPECT_FALSE(IsValidLabelName("__reserved"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("0x"));
}

TEST(Duration, ParsesPrometheusStyleDurations) {
  EXPECT_EQ(ParseDuration("500ms"), std::chrono::milliseconds(500));
  EXPECT_EQ(ParseDuration("1s"), std::chrono::milliseconds(1000));
  EXPECT_EQ(ParseDuration("1m30s"), std::chrono::milliseconds(90'000));
  EXPECT_EQ(ParseDuration("2h"), std::chrono::milliseconds(7'200'000));
  EXPECT_EQ(ParseDuration("0"), std::chrono::milliseconds(0));
}

TEST(Duration, RejectsMalformedOrOverflowingDurations) {
  EXPECT_FALSE(ParseDuration(""));
  EXPECT_FALSE(ParseDuration("1"));
  EXPECT_FALSE(ParseDuration("s"));
  EXPECT_FALSE(ParseDuration("1.5s"));
  EXPECT_FALSE(ParseDuration("30s1m"));  // units out of order
  EXPECT_FALSE(ParseDuration("1s1s"));   // unit repeated
  EXPECT_FALSE(ParseDuration("-1s"));
  EXPECT_FALSE(ParseDuration("99999999999999999999y"));
}

TEST(Duration, FormatsRoundTrip) {
  EXPECT_EQ(FormatDuration(std::chrono::milliseconds(90'500)), "1m30s500ms");
  EXPECT_EQ(ParseDuration(FormatDuration(std::chrono::milliseconds(3'723'004))),
            std::chrono::milliseconds(3'723'004));
}

TEST(Status, ToStringNamesTheCodeAndMessage) {
  EXPECT_EQ(Status::Ok().ToString(), "OK");
  EXPECT_EQ(Status::Unavailable("nvml gone").ToString(), "UNAVAILABLE: nvml gone");
  EXPECT_TRUE(Status::NoData("no gpus").succeeded());
  EXPECT_FALSE(Status::NoData("no gpus").ok());
  EXPECT_FALSE(Status::Internal("x").succeeded());
}

MetricFamily Gauge(std::string name, double value, std::string label_value) {
  return MetricFamily{
      std::move(name), "help", MetricType::kGauge, "", {{{{"k", std::move(label_value)}}, value}}};
}

TEST(SnapshotStore, MergesFamiliesOfTheSameNameAcrossSources) {
  SnapshotStore store;
  store.Update("a", {Gauge("m", 1, "a")});
  store.Update("b", {Gauge("m", 2, "b"), Gauge("n", 3, "b")});
  auto snapshot = store.Current();
  // Both sources' "m" are adjacent (the renderer makes them one family), then "n".
  ASSERT_EQ(snapshot->families().size(), 3u);
  EXPECT_EQ(snapshot->families()[0]->name, "m");
  EXPECT_EQ(snapshot->families()[1]->name, "m");
  EXPECT_EQ(snapshot->families()[0]->samples.size() + snapshot->families()[1]->samples.size(), 2u);
  EXPECT_EQ(snapshot->families()[2]->name, "n");
}

TEST(SnapshotStore, ReplacesASourcesFamiliesSoVanishedSeriesDisappear) {
  SnapshotStore store;
  store.Update("gpu", {Gauge("m", 1, "gpu0"), Gauge("old", 1, "gpu0")});
  store.Update("gpu", {Gauge("m", 5, "gpu0")});
  auto snapshot = store.Current();
  ASSERT_EQ(snapshot->families().size(), 1u);
  EXPECT_EQ(snapshot->families()[0]->samples[0].value, 5);
}

TEST(SnapshotStore, PublishedSnapshotsAreImmutableAndVersioned) {
  SnapshotStore store;
  auto empty = store.Current();
  EXPECT_TRUE(empty->families().empty());
  store.Update("a", {Gauge("m", 1, "x")});
  auto first = store.Current();
  store.Update("a", {Gauge("m", 2, "x")});
  auto second = store.Current();
  EXPECT_LT(first->version(), second->version());
  EXPECT_EQ(first->families()[0]->samples[0].value, 1);  // the old pointer still sees its data
  EXPECT_EQ(second->families()[0]->samples[0].value, 2);
}

class FakeCollector : public Collector {
 public:
  FakeCollector(std::string name, Status status, bool healthy = true)
      : name_(std::move(name)), status_(std::move(status)), healthy_(healthy) {}
  std::string_view Name() const override { return name_; }
  Status Collect(std::vector<MetricFamily>& out) override {
    calls++;
    out.push_back(Gauge(name_ + "_value", calls, name_));
    return status_;
  }
  std::vector<MetricDescription> Describe() const override { return {}; }
  bool Healthy() const override { return healthy_; }
  std::atomic<int> calls{0};

 private:
  std::string name_;
  Status status_;
  bool healthy_;
};

const MetricFamily* Find(const Snapshot& snapshot, std::string_view name) {
  for (const MetricFamily* family : snapshot.families()) {
    if (family->name == name) return family;
  }
  return nullptr;
}

TEST(Scheduler, RunOncePublishesCollectorFamiliesAndSelfMetrics) {
  SnapshotStore store;
  Scheduler scheduler(&store);
  scheduler.Add(std::make_unique<FakeCollector>("good", Status::Ok()), std::chrono::seconds(1));
  scheduler.Add(std::make_unique<FakeCollector>("bad", Status::Unavailable("down")), std::chrono::seconds(1));
  scheduler.RunOnce();
  auto snapshot = store.Current();
  ASSERT_NE(Find(*snapshot, "good_value"), nullptr);
  ASSERT_NE(Find(*snapshot, "bad_value"), nullptr) << "partial results of a failed cycle are published";
  const MetricFamily* success = Find(*snapshot, "gpuscope_collector_success");
  ASSERT_NE(success, nullptr);
  ASSERT_EQ(success->samples.size(), 2u);
  for (const Sample& sample : success->samples) {
    EXPECT_EQ(sample.value, sample.labels[0].second == "good" ? 1 : 0) << sample.labels[0].second;
  }
  EXPECT_NE(Find(*snapshot, "gpuscope_collector_duration_seconds"), nullptr);
  EXPECT_NE(Find(*snapshot, "gpuscope_collector_last_success_timestamp_seconds"), nullptr);
}

TEST(Scheduler, AfterCycleHookRunsOnceAfterEachPublishedCycle) {
  SnapshotStore store;
  Scheduler scheduler(&store);
  scheduler.Add(std::make_unique<FakeCollector>("a", Status::Ok()), std::chrono::seconds(1));
  scheduler.Add(std::make_unique<FakeCollector>("b", Status::Unavailable("down")), std::chrono::seconds(1));
  int hooks = 0;
  bool published_first = true;
  scheduler.SetAfterCycle([&] {
    ++hooks;
    published_first =
        published_first && Find(*store.Current(), hooks == 1 ? "a_value" : "b_value") != nullptr;
  });
  scheduler.RunOnce();
  scheduler.RunOnce();
  EXPECT_EQ(hooks, 4);
  EXPECT_TRUE(published_first) << "the hook runs after the cycle's families are in the store";
}

TEST(Scheduler, HealthIsReadyAfterFirstCycleAndUnhealthyWhenASourceIsGone) {
  SnapshotStore store;
  Scheduler scheduler(&store);
  scheduler.Add(std::make_unique<FakeCollector>("gpu", Status::Unavailable("nvml"), /*healthy=*/false),
                std::chrono::seconds(1));
  EXPECT_FALSE(scheduler.Health().ready);
  scheduler.RunOnce();
  HealthReport report = scheduler.Health();
  EXPECT_TRUE(report.ready);
  EXPECT_FALSE(report.healthy);
  EXPECT_THAT(report.detail, HasSubstr("gpu: source unavailable"));
}

TEST(Scheduler, DetectsAStalledCollector) {
  SnapshotStore store;
  // A stall floor of 0 and an interval of 1 ms: after a few ms without a cycle the collector is stalled.
  Scheduler scheduler(&store, std::chrono::milliseconds(0));
  scheduler.Add(std::make_unique<FakeCollector>("slow", Status::Ok()), std::chrono::milliseconds(1));
  scheduler.RunOnce();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  HealthReport report = scheduler.Health();
  EXPECT_FALSE(report.healthy);
  EXPECT_THAT(report.detail, HasSubstr("slow: no completed cycle"));
}

TEST(Scheduler, RunsCollectorsRepeatedlyOnTheirThreadsAndStopsCleanly) {
  SnapshotStore store;
  Scheduler scheduler(&store);
  auto collector = std::make_unique<FakeCollector>("fast", Status::Ok());
  FakeCollector* fast = collector.get();
  scheduler.Add(std::move(collector), std::chrono::milliseconds(5));
  scheduler.Start();
  ASSERT_TRUE(scheduler.WaitUntilReady(std::chrono::seconds(30)));
  while (fast->calls < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  scheduler.Stop();
  int after_stop = fast->calls;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(fast->calls, after_stop) << "no cycle runs after Stop()";
  EXPECT_TRUE(scheduler.Health().ready);
}

TEST(Utf8, AcceptsValidSequencesAndRejectsMalformedOnes) {
  EXPECT_EQ(ValidUtf8Length("a", 0), 1u);
  EXPECT_EQ(ValidUtf8Length("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(ValidUtf8Length("\xe2\x82\xac", 0), 3u);      // €
  EXPECT_EQ(ValidUtf8Length("\xf0\x9f\x98\x80", 0), 4u);  // emoji
  EXPECT_EQ(ValidUtf8Length("\x80", 0), 0u);              // stray continuation byte
  EXPECT_EQ(ValidUtf8Length("\xc0\xaf", 0), 0u);          // overlong '/'
  EXPECT_EQ(ValidUtf8Length("\xed\xa0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(ValidUtf8Length("\xf4\x90\x80\x80", 0), 0u);  // beyond U+10FFFF
  EXPECT_EQ(ValidUtf8Length("\xe2\x82", 0), 0u);          // truncated
}

TEST(Log, LogfmtQuotesAndEscapesValues) {
  std::string line = FormatLogLine(LogFormat::kLogfmt, "T", LogLevel::kWarn, "nvml \"call\" failed",
                                   {{"gpu", "3"}, {"error", "a b"}, {"raw", "x\ny\x01\xff"}});
  EXPECT_EQ(line,
            "ts=T level=warn msg=\"nvml \\\"call\\\" failed\" gpu=3 error=\"a b\" "
            "raw=\"x\\ny\\u0001\xEF\xBF\xBD\"\n");
}

TEST(Log, JsonLinesAreValidJsonObjects) {
  std::string line = FormatLogLine(LogFormat::kJson, "T", LogLevel::kInfo, "hi", {{"k", "v\"\\"}});
  EXPECT_EQ(line, "{\"ts\":\"T\",\"level\":\"info\",\"msg\":\"hi\",\"k\":\"v\\\"\\\\\"}\n");
}

std::string JsonString(std::string_view value) {
  std::string out;
  AppendJsonString(out, value);
  return out;
}

TEST(JsonString, EmptyIsTwoQuotes) { EXPECT_EQ(JsonString(""), "\"\""); }

TEST(JsonString, QuoteAndBackslashAreEscaped) { EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\""); }

TEST(JsonString, LineBreaksAndTabUseShortEscapes) { EXPECT_EQ(JsonString("\r\n\t"), "\"\\r\\n\\t\""); }

TEST(JsonString, OtherControlBytesNulAndDelAreUnicodeEscaped) {
  EXPECT_EQ(JsonString(std::string("\0\x01\x1f\x7f", 4)), "\"\\u0000\\u0001\\u001f\\u007f\"");
}

TEST(JsonString, InvalidUtf8BecomesReplacementCharacterAndValidUtf8IsKept) {
  EXPECT_EQ(JsonString("\xff\xC3\xA9\xC3"), "\"\xEF\xBF\xBD\xC3\xA9\xEF\xBF\xBD\"");
  EXPECT_TRUE(IsValidUtf8(JsonString("\x80\xC0\xAF\xED\xA0\x80")));
}

TEST(JsonString, AppendsWithoutTouchingWhatIsThere) {
  std::string out = "{\"k\":";
  AppendJsonString(out, "/");
  EXPECT_EQ(out, "{\"k\":\"/\"");
}

TEST(Log, LevelsFilter) {
  ASSERT_TRUE(SetLogLevel("warn"));
  EXPECT_FALSE(LogEnabled(LogLevel::kInfo));
  EXPECT_TRUE(LogEnabled(LogLevel::kError));
  EXPECT_FALSE(SetLogLevel("verbose"));
  SetLogLevel(LogLevel::kInfo);
}

}  // namespace
}  // namespace gpuscope
