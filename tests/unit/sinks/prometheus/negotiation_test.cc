#include "src/sinks/prometheus/negotiation.h"

#include <gtest/gtest.h>

#include "tests/unit/sinks/prometheus/test_client.h"

namespace gpuscope {
namespace {

TEST(PrometheusNegotiation, PicksOpenMetricsForPrometheusScrapeAcceptHeader) {
  // What Prometheus 2.x sends by default.
  EXPECT_EQ(
      NegotiateExpositionFormat("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
      ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text"), ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text; version=\"1.0.0\""),
            ExpositionFormat::kOpenMetrics100);
}

TEST(PrometheusNegotiation, FallsBackToTextFormat) {
  EXPECT_EQ(NegotiateExpositionFormat(""), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("*/*"), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("text/plain"), ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text;version=2.0.0"),
            ExpositionFormat::kText004);
  EXPECT_EQ(
      NegotiateExpositionFormat("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily"),
      ExpositionFormat::kText004);
}

TEST(PrometheusNegotiation, HonoursQValues) {
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text;q=0.3,text/plain;version=0.0.4;q=0.9"),
            ExpositionFormat::kText004);
  EXPECT_EQ(NegotiateExpositionFormat("text/plain;q=0.2, application/openmetrics-text;q=0.8"),
            ExpositionFormat::kOpenMetrics100);
  EXPECT_EQ(NegotiateExpositionFormat("application/openmetrics-text;q=0"), ExpositionFormat::kText004);
}

TEST(PrometheusNegotiation, DetectsGzipInAcceptEncoding) {
  EXPECT_TRUE(AcceptsGzip("gzip"));
  EXPECT_TRUE(AcceptsGzip("deflate, GZIP;q=0.5"));
  EXPECT_TRUE(AcceptsGzip("*"));
  EXPECT_FALSE(AcceptsGzip(""));
  EXPECT_FALSE(AcceptsGzip("identity"));
  EXPECT_FALSE(AcceptsGzip("gzip;q=0"));
  EXPECT_FALSE(AcceptsGzip("x-gzip-like"));
}

TEST(PrometheusNegotiation, GzipRoundTripsThroughZlibInflate) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "DCGM_FI_DEV_GPU_TEMP{gpu=\"" + std::to_string(i) + "\"} 45\n";
  std::string compressed;
  ASSERT_TRUE(GzipCompress(text, compressed));
  EXPECT_LT(compressed.size(), text.size() / 4);
  ASSERT_GE(compressed.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);
  EXPECT_EQ(testing::Gunzip(compressed), text);
  ASSERT_TRUE(GzipCompress("", compressed));
  EXPECT_EQ(testing::Gunzip(compressed), "");
}

// Output of many deflate chunks (a pseudo-random body compresses little), and a cached body that holds
// what it needs, not the text's size: the endpoint keeps it until the next snapshot.
TEST(PrometheusNegotiation, GzipOfALargeBodyRoundTripsAndKeepsNoSpareCapacity) {
  std::string text;
  uint32_t state = 12345;
  for (int i = 0; i < 1 << 20; ++i) {
    state = state * 1103515245u + 12345u;
    text += static_cast<char>('a' + (state >> 16) % 26);
  }
  std::string compressed;
  ASSERT_TRUE(GzipCompress(text, compressed));
  EXPECT_GT(compressed.size(), 256u * 1024);  // several 64 KiB chunks
  EXPECT_EQ(testing::Gunzip(compressed), text);
  std::string repetitive(4 << 20, 'x');
  ASSERT_TRUE(GzipCompress(repetitive, compressed));
  EXPECT_LT(compressed.capacity(), 64u * 1024);
  EXPECT_EQ(testing::Gunzip(compressed), repetitive);
}

}  // namespace
}  // namespace gpuscope
