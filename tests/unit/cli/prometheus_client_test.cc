#include "src/cli/prometheus_client.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpuscope {
namespace {

TEST(PrometheusResponse, VectorGivesLabelsAndOneValuePerSeries) {
  std::vector<PromSeries> series;
  ASSERT_TRUE(ParsePrometheusResponse(
                  R"({"status":"success","data":{"resultType":"vector","result":[
                    {"metric":{"gpu":"0","Hostname":"n1"},"value":[1700000000.5,"42.25"]},
                    {"metric":{"gpu":"1"},"value":[1700000000.5,"NaN"]}]}})",
                  &series)
                  .ok());
  ASSERT_EQ(series.size(), 2u);
  EXPECT_EQ(series[0].Label("Hostname"), "n1");
  EXPECT_EQ(series[0].Label("absent"), "");
  ASSERT_EQ(series[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(series[0].points[0].first, 1700000000.5);
  EXPECT_DOUBLE_EQ(series[0].points[0].second, 42.25);
  EXPECT_TRUE(std::isnan(series[1].points[0].second));
}

TEST(PrometheusResponse, MatrixGivesEveryPoint) {
  std::vector<PromSeries> series;
  ASSERT_TRUE(ParsePrometheusResponse(R"({"status":"success","data":{"resultType":"matrix","result":[
                    {"metric":{"hpc_job":"7"},"values":[[10,"1"],[20,"1"],[30,"1"]]}]}})",
                                      &series)
                  .ok());
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(series[0].points[2].first, 30);
}

TEST(PrometheusResponse, ErrorAnswerCarriesTheServersMessage) {
  std::vector<PromSeries> series;
  Status status = ParsePrometheusResponse(
      R"({"status":"error","errorType":"bad_data","error":"1:5: parse error: unexpected"})", &series);
  EXPECT_EQ(status.code(), Status::Code::kUnavailable);
  EXPECT_EQ(status.message(), "Prometheus answered bad_data: 1:5: parse error: unexpected");
}

TEST(PrometheusResponse, MalformedBodiesAreInvalidArgument) {
  std::vector<PromSeries> series;
  for (const char* body : {"", "<html>", R"({"status":"success"})",
                           R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
                           R"({"status":"success","data":{"resultType":"vector","result":[
                                {"metric":{},"value":[1,"x"]}]}})",
                           R"({"status":"success","data":{"resultType":"streams","result":[]}})"}) {
    EXPECT_EQ(ParsePrometheusResponse(body, &series).code(), Status::Code::kInvalidArgument) << body;
  }
}

TEST(PrometheusQueryEncoding, ReservedCharactersArePercentEncoded) {
  EXPECT_EQ(EncodeQueryValue(R"(up{job="a b"}[5m])"), "up%7Bjob%3D%22a%20b%22%7D%5B5m%5D");
  EXPECT_EQ(EncodeQueryValue("a-z_0.9~"), "a-z_0.9~");
}

TEST(PrometheusClient, UnreachableServerNamesTheQueryAndTheUrl) {
  std::unique_ptr<PrometheusClient> client;
  PrometheusClientOptions options;
  options.url = "http://127.0.0.1:1";
  ASSERT_TRUE(PrometheusClient::Create(options, &client).ok());
  std::vector<PromSeries> series;
  Status status = client->Query("up", 0, &series);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("query up at http://127.0.0.1:1: "), std::string::npos) << status.message();
}

TEST(PrometheusClient, BadUrlIsRejectedAtCreate) {
  std::unique_ptr<PrometheusClient> client;
  PrometheusClientOptions options;
  options.url = "ftp://x";
  EXPECT_EQ(PrometheusClient::Create(options, &client).code(), Status::Code::kInvalidArgument);
}

}  // namespace
}  // namespace gpuscope

namespace gpuscope {
namespace {

TEST(PromSeriesTest, HostIsTheHostnameLabelElseTheDcgmCompatOne) {
  PromSeries s;
  EXPECT_EQ(s.Host(), "");
  s.labels["hostname"] = "old-name";
  EXPECT_EQ(s.Host(), "old-name");
  s.labels["Hostname"] = "gpu-node-01";
  EXPECT_EQ(s.Host(), "gpu-node-01");
}

}  // namespace
}  // namespace gpuscope
