// Writes the 1.0 and 2.0 encodings of one fixed batch (remote_write_decode_test.py's EXPECTED) to the first
// two files given, and the 1.0 and 2.0 requests the sink makes of its queue record for two intervals of a
// snapshot (RECORD_EXPECTED) to the next two, for that test to decode with Python's protobuf runtime: an
// independent decoder.
#include <cstdio>
#include <fstream>
#include <string>

#include "src/sinks/remote_write/remote_write_batcher.h"
#include "src/sinks/remote_write/remote_write_encode.h"
#include "src/sinks/remote_write/remote_write_record.h"

int main(int argc, char** argv) {
  using gpuscope::MetricType;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s V1_FILE V2_FILE RECORD_V1_FILE RECORD_V2_FILE\n", argv[0]);
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

  // The sink's path: two intervals through RemoteWriteBatcher, GPU 1 gone in the second (its stale
  // marker comes last); the second interval's record made into both requests.
  using gpuscope::Labels;
  using gpuscope::MetricFamily;
  MetricFamily temp{"DCGM_FI_DEV_GPU_TEMP",
                    "GPU temperature (in \xc2\xb0"
                    "C).",
                    MetricType::kGauge,
                    "",
                    {}};
  temp.samples.push_back({Labels{{"gpu", "0"},
                                 {"UUID", "GPU-0c59472a"},
                                 {"modelName", "NVIDIA H100 \xe2\x80\x9c\xc3\xbc\xe2\x80\x9d"}},
                          41.5});
  MetricFamily busy{"gpuscope_busy_seconds_total", "Busy time.", MetricType::kCounter, "seconds", {}};
  busy.samples.push_back({Labels{{"gpu", "0"}}, 1e300});
  MetricFamily temp_both = temp;
  temp_both.samples.push_back({Labels{{"gpu", "1"}, {"UUID", "GPU-7982f8e6"}}, 40});
  gpuscope::RemoteWriteBatcher batcher({});
  std::string record;
  batcher.Build(gpuscope::Snapshot::Of({temp_both, busy}), 1796149985123, &record);
  batcher.Committed(true);
  batcher.Build(gpuscope::Snapshot::Of({temp, busy}), 1796150000123, &record);
  batcher.Committed(true);
  size_t unreadable = 0;
  std::string scratch;
  std::ofstream(argv[3], std::ios::binary) << gpuscope::RemoteWriteV1Writer().Request({record}, &unreadable);
  std::ofstream(argv[4], std::ios::binary)
      << gpuscope::RemoteWriteRecordsToV2({record}, &scratch, &unreadable);
  return unreadable == 0 ? 0 : 1;
}
