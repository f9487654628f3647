#include "src/core/histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "src/core/metric.h"

namespace gpuscope {
namespace {

TEST(HistogramBuckets, LeValuesAreWrittenAsPrometheus3NormalisesThem) {
  auto buckets = HistogramBuckets::Make({0.00001, 0.025, 1, 600, 123456, 1e6, 2.5e7});
  ASSERT_NE(buckets, nullptr);
  ASSERT_EQ(buckets->size(), 8u);
  EXPECT_EQ(buckets->le(0), "1e-05");
  EXPECT_EQ(buckets->le(1), "0.025");
  EXPECT_EQ(buckets->le(2), "1.0");
  EXPECT_EQ(buckets->le(3), "600.0");
  EXPECT_EQ(buckets->le(4), "123456.0");
  EXPECT_EQ(buckets->le(5), "1e+06");
  EXPECT_EQ(buckets->le(6), "2.5e+07");
  EXPECT_EQ(buckets->le(7), "+Inf");
}

TEST(HistogramBuckets, UnsortedRepeatedOrInfiniteBoundsAreRefusedWithAReason) {
  std::string error;
  EXPECT_EQ(HistogramBuckets::Make({1, 0.5}, &error), nullptr);
  EXPECT_EQ(error, "bucket bounds are not strictly ascending");
  EXPECT_EQ(HistogramBuckets::Make({1, 1}, &error), nullptr);
  EXPECT_EQ(HistogramBuckets::Make({1, std::numeric_limits<double>::infinity()}, &error), nullptr);
  EXPECT_EQ(error, "bucket bound 1 is not finite");
  EXPECT_NE(HistogramBuckets::Make({}), nullptr);  // only +Inf: a count and a sum
}

TEST(Histogram, CountsAreCumulativeWithBoundsInclusiveAndInfLast) {
  Histogram histogram(HistogramBuckets::Make({0.1, 1, 10}));
  for (double v : {0.05, 0.1, 0.5, 1.0, 7.0, 42.0}) histogram.Observe(v);
  histogram.Observe(std::nan(""));  // ignored
  auto value = histogram.Value();
  EXPECT_EQ(value->counts, (std::vector<uint64_t>{2, 4, 5, 6}));
  EXPECT_EQ(value->count(), 6u);
  EXPECT_DOUBLE_EQ(value->sum, 0.05 + 0.1 + 0.5 + 1.0 + 7.0 + 42.0);
  EXPECT_TRUE(value->exemplars.empty());
}

TEST(Histogram, EachBucketKeepsTheExemplarOfItsLatestObservation) {
  Histogram histogram(HistogramBuckets::Make({1, 10}));
  histogram.Observe(0.5, {Labels{{"trace_id", "aa"}}, 0.5, 100});
  histogram.Observe(0.7, {Labels{{"trace_id", "bb"}}, 0.7, 200});
  histogram.Observe(20, {Labels{{"trace_id", "cc"}}, 20, 300});
  histogram.Observe(0.2);  // no exemplar: the bucket keeps bb's
  auto value = histogram.Value();
  ASSERT_EQ(value->exemplars.size(), 3u);
  EXPECT_EQ(value->exemplars[0].labels, (Labels{{"trace_id", "bb"}}));
  EXPECT_DOUBLE_EQ(value->exemplars[0].value, 0.7);
  EXPECT_EQ(value->exemplars[0].timestamp_ns, 200);
  EXPECT_TRUE(value->exemplars[1].labels.empty());
  EXPECT_EQ(value->exemplars[2].labels, (Labels{{"trace_id", "cc"}}));
}

TEST(Histogram, AValueReadOutDoesNotChangeWithLaterObservations) {
  Histogram histogram(HistogramBuckets::Make({1}));
  histogram.Observe(0.5);
  auto before = histogram.Value();
  histogram.Observe(0.5);
  EXPECT_EQ(before->count(), 1u);
  EXPECT_EQ(histogram.Value()->count(), 2u);
}

TEST(Sample, AGaugeSampleCarriesNoHistogram) {
  Sample sample(Labels{{"gpu", "0"}}, 1.5);
  EXPECT_EQ(sample.histogram, nullptr);
  EXPECT_EQ(MetricTypeName(MetricType::kHistogram), "histogram");
}

}  // namespace
}  // namespace gpuscope
