// Writes the 1.0 and 2.0 encodings of one fixed batch (remote_write_decode_test.py's EXPECTED) to the two
// files given, for that test to decode with Python's protobuf runtime: an independent decoder.
#include <cstdio>
#include <fstream>
#include <string>

#include "src/sinks/remote_write/remote_write_encode.h"

int main(int argc, char** argv) {
  using gpuscope::MetricType;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s V1_FILE V2_FILE\n", argv[0]);
    return 2;
  }
  gpuscope::RemoteWriteBatch batch;
  batch.series.push_back({{{"UUID", "GPU-0c59472a"},
                           {"__name__", "DCGM_FI_DEV_GPU_TEMP"},
                           {"gpu", "0"},
                           {"modelName", "NVIDIA H100 \xe2\x80\x9c\xc3\xbc\xe2\x80\x9d"}},
                          41.5,
                          1796150000123,
                          0});
  batch.series.push_back({{{"UUID", "GPU-7982f8e6"}, {"__name__", "DCGM_FI_DEV_GPU_TEMP"}, {"gpu", "1"}},
                          gpuscope::StaleMarker(),
                          1796150000123,
                          0});
  batch.series.push_back(
      {{{"__name__", "gpuscope_busy_seconds_total"}, {"gpu", "0"}}, 1e300, 1796150000123, 1796149000000});
  batch.metadata.push_back({"DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge,
                            "GPU temperature (in \xc2\xb0"
                            "C).",
                            ""});
  batch.metadata.push_back({"gpuscope_busy_seconds_total", MetricType::kCounter, "Busy time.", "seconds"});
  std::ofstream(argv[1], std::ios::binary) << gpuscope::EncodeWriteRequestV1(batch);
  std::ofstream(argv[2], std::ios::binary) << gpuscope::EncodeRequestV2(batch);
  return 0;
}
