// Fuzzes the queue's pure record reader: any bytes must scan without crashing, and every record it
// returns must lie inside the input and re-encode to exactly the bytes it was read from.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "src/sinks/queue/record_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (auto mode : {gpuscope::QueueScanMode::kStopAtFirstBad, gpuscope::QueueScanMode::kSkipBad}) {
    gpuscope::QueueScanResult result = gpuscope::ScanQueueRecords(bytes, mode);
    if (result.valid_end > size) std::abort();
    for (const auto& r : result.records) {
      if (r.offset + r.encoded_size() > size) std::abort();
      std::string again;
      gpuscope::EncodeQueueRecord(r.payload, r.append_time_ms, &again);
      if (bytes.substr(r.offset, again.size()) != again) std::abort();
    }
  }
  return 0;
}
